"""The smooth models of Mu & Klabjan 2025 (Table 4): SmeLU, the SmeLU MLP and the BatchNorm-free ResNet-18."""

from __future__ import annotations

import pytest
import torch

from unlearning.models import SmeLU, SmeluMLP, SmoothResNet18

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def count(model):
    return sum(p.numel() for p in model.parameters())


def test_mlp_parameter_count():
    model = SmeluMLP()
    assert count(model) == 2_172_034
    assert model(torch.zeros(3, 467)).shape == (3, 2)


def test_resnet_parameter_count_and_shape():
    model = SmoothResNet18(3, 2)
    assert count(model) == 11_160_258
    assert not list(model.buffers())
    with torch.no_grad():
        assert model(torch.zeros(1, 3, 32, 32)).shape == (1, 2)


def test_smelu_values_and_c1_at_the_knots():
    f = SmeLU(0.5)
    x = torch.tensor([-2.0, -0.5, 0.0, 0.25, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    y = f(x)
    torch.testing.assert_close(y.detach(), torch.tensor([0, 0, 0.125, 0.28125, 0.5, 3.0], dtype=torch.float64))
    for knot in (-0.5, 0.5):
        xs = torch.tensor([knot - 1e-7, knot + 1e-7], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(f(xs).sum(), xs)
        assert abs(float(g[0] - g[1])) < 1e-6  # the derivative is continuous: 0 -> 0 at -beta, 1 -> 1 at +beta
    with pytest.raises(ValueError, match="^beta"):
        SmeLU(0)
