"""RR-DU's baselines' pure parts (spec 2.6): DDP's noise and step, DP-SGD's per-example clipped noisy gradient."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from unlearning.methods import rrdu_baselines as rb
from unlearning.train import random_walk as rw


def test_ddp_sigma_verbatim_and_group_noise():
    assert rb.ddp_sigma() == pytest.approx(9.6896, abs=1e-4)          # spec A12
    assert rb.ddp_sigma(2.0, 2.0) == pytest.approx(9.6896, abs=1e-4)  # linear in L / epsilon
    assert rb.ddp_sigma_group(1000) == pytest.approx(16282, rel=1e-4)  # spec 3.4 item 7
    assert rb.ddp_sigma_group(2000) == pytest.approx(2 * rb.ddp_sigma_group(1000))  # linear in m (Table 2)
    with pytest.raises(ValueError, match=r"^delta = 2.*valid"):
        rb.ddp_sigma(delta=2.0)


def _model(bn=True):
    torch.manual_seed(0)
    layers = [nn.Linear(5, 8)] + ([nn.BatchNorm1d(8)] if bn else []) + [nn.ReLU(), nn.Linear(8, 3)]
    return nn.Sequential(*layers)


def test_ddp_step_projects_to_radius_10():
    torch.manual_seed(1)
    token = rw.Token(_model(), lr=0.005)
    ref = token.theta()
    g = torch.randn(token.dim) * 100
    norm, moved = rb.ddp_step(token, g, sigma=1e5, ref=ref, noise=torch.Generator().manual_seed(0))
    assert moved and norm > 1.0
    assert float(torch.linalg.vector_norm(token.theta() - ref)) == pytest.approx(10.0, rel=1e-5)


def test_per_example_grads_match_one_at_a_time_in_bn_eval_mode():
    model = _model()
    model.train()
    model(torch.randn(16, 5))  # running statistics away from their initial values
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    g = rb.per_example_grads(model, x, y)
    model.eval()
    for i in range(6):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        ref = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        assert torch.allclose(g[i], ref, atol=1e-6)


def test_dp_sgd_gradient_clips_and_adds_scaled_noise():
    model = _model(bn=False)
    x, y = torch.randn(8, 5) * 50, torch.randint(0, 3, (8,))
    per = rb.per_example_grads(model, x, y)
    C = 0.1
    assert (per.norm(dim=1) > C).all()
    clipped = per * (C / per.norm(dim=1, keepdim=True))
    plain = rb.dp_sgd_gradient(model, x, y, z=0.0, noise=torch.Generator().manual_seed(0), C=C)
    assert torch.allclose(plain, clipped.mean(0), atol=1e-6)
    noisy = rb.dp_sgd_gradient(model, x, y, z=2.0, noise=torch.Generator().manual_seed(0), C=C)
    expected_noise = 2.0 * C * torch.randn(plain.shape, generator=torch.Generator().manual_seed(0)) / 8
    assert torch.allclose(noisy - plain, expected_noise, atol=1e-6)


def test_flnet_per_example_grads_with_dropout_drawn_per_example():
    from unlearning.models import FLNet

    torch.manual_seed(0)
    model = FLNet()
    x = torch.rand(1, 1, 28, 28).repeat(2, 1, 1, 1)
    g = rb.per_example_grads(model, x, torch.tensor([3, 3]))
    assert g.shape == (2, 1_663_562) and not torch.allclose(g[0], g[1])  # same image, different dropout masks
    assert model.training and model.net[1].training  # modes restored


def test_loop_and_vmap_per_example_clipping_agree_without_dropout():
    model = _model()
    model.train()
    model(torch.randn(16, 5))
    x, y = torch.randn(7, 5) * 10, torch.randint(0, 3, (7,))
    loop = rb.clipped_sum(model, x, y, C=0.5, strategy="loop")
    vmapped = rb.clipped_sum(model, x, y, C=0.5, strategy="vmap", chunk=3)
    assert torch.allclose(loop, vmapped, atol=1e-5)
    with pytest.raises(ValueError, match="^strategy = 'x'"):
        rb.clipped_sum(model, x, y, C=0.5, strategy="x")


def _clients(n=4, per=20):
    g = torch.Generator().manual_seed(0)
    return [rw.TensorClient(torch.randn(per, 5, generator=g), torch.randint(0, 3, (per,), generator=g))
            for _ in range(n)]


def test_walks_count_examples_and_ddp_stays_in_its_ball():
    clients = _clients()
    token = rw.Token(_model(), lr=0.005)
    rb.finetune_walk(token, clients, 3, rw.Streams.from_seed(0), s=2, batch_size=8)
    assert token.examples == 3 * 2 * 8
    token = rw.Token(_model(), lr=0.005)
    ref = token.theta()
    hops, moved = rb.ddp_walk(token, clients, 5, rw.Streams.from_seed(0), sigma=1e4, ref=ref, s=2, batch_size=8)
    assert moved == 5 and float(torch.linalg.vector_norm(token.theta() - ref)) <= 10.0 + 1e-4
    token = rw.Token(_model(), lr=0.005)
    hops = rb.dpsgd_walk(token, clients, 2, rw.Streams.from_seed(0), z=1.0, s=2, batch_size=8)
    assert token.examples == 2 * 16 and all(h.node != n.node for h, n in zip(hops, hops[1:]))
