"""FLNet (spec 4.3): the FedAvg CNN with padding, BN after the convs and Dropout(0.5) before the last linear."""

from __future__ import annotations

import torch
from torch import nn

from unlearning.models import FLNet


def test_parameter_count_and_shapes():
    model = FLNet()
    assert sum(p.numel() for p in model.parameters()) == 1_663_562
    bn = sum(p.numel() for m in model.modules() if isinstance(m, nn.BatchNorm2d) for p in m.parameters())
    assert 1_663_562 - bn == 1_663_370  # the spec's count without BN
    assert model(torch.zeros(3, 1, 28, 28)).shape == (3, 10)


def test_dropout_only_in_train_mode_and_bn_buffers_update():
    torch.manual_seed(0)
    model, x = FLNet(), torch.randn(4, 1, 28, 28)
    model.eval()
    assert torch.equal(model(x), model(x))
    before = model.net[1].running_mean.clone()
    model.train()
    model(x)
    assert not torch.equal(before, model.net[1].running_mean)
