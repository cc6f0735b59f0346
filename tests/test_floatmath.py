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
    """The correctly rounded square root r of x, checked exactly: x lies between the squares of the midpoints to
    r's neighbours (each square has at most 50 bits, exact in float64); and the float64 route rounded to float32."""
    v = _inputs()
    got = floatmath.sqrt(v)
    assert got.dtype == torch.float32 and got.shape == v.shape
    r, x = got.numpy(), v.numpy().astype(np.float64)
    low = (r.astype(np.float64) + np.nextafter(r, np.float32(0)).astype(np.float64)) / 2
    high = (r.astype(np.float64) + np.nextafter(r, np.float32(np.inf)).astype(np.float64)) / 2
    assert ((low * low <= x) & (x <= high * high)).all()
    assert torch.equal(got, v.double().sqrt().float())


def test_sqrt_of_a_scalar_a_strided_view_and_a_negative_number():
    m = torch.arange(12, dtype=torch.float32).view(3, 4)
    assert torch.equal(floatmath.sqrt(m.T), m.T.double().sqrt().float())
    scalar = floatmath.sqrt(torch.tensor(16.0))
    assert scalar.shape == () and float(scalar) == 4.0
    assert torch.isnan(floatmath.sqrt(torch.tensor([-1.0]))).all()


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


def test_the_audit_counts_torchs_own_float32_functions():
    """The control: torch's float32 sqrt, exp and log on the CPU, and the exp in cross-entropy's second derivative,
    are MKL's, and the audit sees them; their float64 forms and floatmath's are not counted."""
    x = torch.rand(10) + 0.5
    with floatmath.VendorDependentCalls() as calls:
        x.sqrt(), x.exp(), torch.log(x), x.pow(0.5), x.double().sqrt(), floatmath.sqrt(x), floatmath.log(x)
    assert dict(calls.counts) == {"sqrt": 1, "exp": 1, "log": 1, "pow": 1}
    w = torch.randn(3, 4, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(torch.randn(5, 3) @ w, torch.tensor([0, 1, 2, 3, 0]))
    (g,) = torch.autograd.grad(loss, w, create_graph=True)
    with floatmath.VendorDependentCalls() as calls:
        torch.autograd.grad((g * g).sum(), w)
    assert calls.counts["exp"] >= 1


def test_the_projects_optimizers_and_curvature_call_no_vendor_dependent_function():
    """Adam (train/optim.py; RR-DU's token walk), CNS's training and LiSSA step, HF's rho (methods/r2d_baselines.py):
    the steps whose float32 square roots and exponentials made an Intel Xeon and an AMD EPYC differ (issue 53)."""
    from torch import nn

    from unlearning.methods import r2d_baselines as rb
    from unlearning.train import random_walk as rw
    from unlearning.train.optim import LocalOptimizer

    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(64, 6, generator=g), torch.randint(0, 3, (64,), generator=g)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    with floatmath.VendorDependentCalls() as calls:
        opt = LocalOptimizer("adam", l2=0.1)
        theta = torch.randn(2, 5, generator=g)
        opt.step(torch.randn(2, 5, generator=g), theta, opt.init(theta))
        token = rw.Token(model, lr=0.01)
        rw.walk(token, [rw.TensorClient(X, y)] * 3, 3, rw.uniform_neighbour(3), rw.Streams.from_seed(0),
                batch_size=16)
        plain = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        rb.train_cns(plain, X, y, X, y, lr=1e-3, wd=5e-4, batch=16, epochs=1, R=10.0, seed=0)
        rb.lissa_newton_step(plain, X, y, lam=1.0, gamma=1.0, s1=1, s2=3, bs=8, scale=100.0, seed=0)
        rb.hf_rho(plain, X, y, clip=5.0, l2=1e-6, iterations=3)
    assert not calls.counts, dict(calls.counts)
