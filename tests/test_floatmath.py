"""unlearning.floatmath: float32 functions whose bits do not depend on the CPU's vendor (issue 53)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unlearning import floatmath


def _inputs(n: int = 200_000) -> torch.Tensor:
    """Adam-like second moments over 22 decades, and uniformly drawn bit patterns of positive floats (subnormals,
    normals up to the largest), plus the edge cases."""
    g = torch.Generator().manual_seed(3)
    decades = 10 ** torch.empty(n).uniform_(-20, 2, generator=g)
    patterns = torch.randint(1, 0x7F800000, (n,), generator=g, dtype=torch.int32).view(torch.float32)
    edges = torch.tensor([0.0, 1.0, 4.0, 2.0, float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)])
    return torch.cat([decades, patterns, edges])


def test_sqrt_is_the_ieee_square_root_bit_for_bit():
    """numpy's float32 sqrt is the hardware's correctly rounded one: every IEEE machine computes these bits."""
    v = _inputs()
    got = floatmath.sqrt(v)
    assert got.dtype == torch.float32
    assert torch.equal(got, torch.from_numpy(np.sqrt(v.numpy())))


@pytest.mark.parametrize("name", ["log", "tanh"])
def test_log_and_tanh_are_float64_rounded_to_float32(name):
    v = torch.randn(100_000, generator=torch.Generator().manual_seed(1)) * 4
    v = v.abs() + 1e-3 if name == "log" else v
    got = getattr(floatmath, name)(v)
    assert got.dtype == torch.float32
    assert torch.equal(got, getattr(torch, name)(v.double()).float())


def test_gradients_flow_through_the_casts():
    x = torch.tensor([0.25, 4.0, 9.0], requires_grad=True)
    (floatmath.sqrt(x).sum() + floatmath.log(x).sum() + floatmath.tanh(x).sum()).backward()
    expected = 0.5 / x.detach().sqrt() + 1 / x.detach() + 1 - x.detach().tanh() ** 2
    torch.testing.assert_close(x.grad, expected)
    assert x.grad.dtype == torch.float32


def test_other_dtypes_and_devices_call_torch_directly(device):
    for dtype in (torch.float64, torch.float32):
        v = torch.rand(1000, dtype=dtype, device=device) + 0.1
        got = floatmath.sqrt(v)
        assert got.dtype == dtype and got.device == v.device
        if dtype == torch.float64 or device.type != "cpu":
            assert torch.equal(got, v.sqrt())
