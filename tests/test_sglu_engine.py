"""PNSGD over stacked trials (train/noisy_sgd.py) against plain one-run-at-a-time references (specs/sglu.md 2.1-2.2).

Weights and data live on the test device (`--device`); generators are CPU generators unless a test says
otherwise, so the noise is drawn on the CPU and moved, and the runs are the same on every device."""

from __future__ import annotations

import math

import pytest
import torch

from unlearning.train import noisy_sgd as sgd


def _data(n: int = 24, d: int = 5, seed: int = 0, scale: float = 1.0,
          device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    x = scale * x / x.norm(dim=1, keepdim=True)
    y = torch.randint(0, 2, (n,), generator=g).double() * 2 - 1
    return x.to(device), y.to(device)


def _randn(*shape: int, seed: int, device) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(device)


def _reference_gradient(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, step: sgd.Step) -> torch.Tensor:
    """Eq. 72 sample by sample: Pi_{C_M}((s(y w.x) - 1) y x), averaged, plus lam w."""
    total = torch.zeros_like(w)
    for xi, yi in zip(x, y):
        g = (torch.sigmoid(yi * (w @ xi)) - 1) * yi * xi
        total += g * min(1.0, step.M / float(g.norm()))
    return total / len(y) + step.lam * w


@pytest.mark.parametrize("scale", [1.0, 7.0])  # unit norm: clipping is a no-op; norm 7: it binds
def test_gradient_matches_per_sample_clipping(scale, device):
    x, y = _data(scale=scale, device=device)
    w = _randn(3, 5, seed=1, device=device)
    step = sgd.Step(eta=0.5, lam=0.01, M=1.0, R=None)
    got = sgd.logistic_gradient(w[None], x[None], y[None], step)[0]
    for r in range(3):
        assert torch.allclose(got[r], _reference_gradient(w[r], x, y, step), atol=1e-12)


def test_minibatch_epochs_follow_each_groups_fixed_partition(device):
    """Every epoch visits the same batches in the same order; rows of group g use partition g."""
    x, y = _data(n=20, device=device)
    step = sgd.Step(eta=0.7, lam=0.05, M=1.0, R=None)
    order = sgd.partitions(2, 20, 6, torch.Generator().manual_seed(3), device)  # 3 batches of 6, 2 points dropped
    assert order.shape == (2, 18) and order.device == x.device
    w0 = _randn(4, 5, seed=4, device=device)
    sigma = torch.zeros(4, dtype=torch.float64, device=device)
    got = sgd.epochs(w0, x, y, order, sigma, 2, step, torch.Generator(), batch=6)
    for r in range(4):
        w, g = w0[r].clone(), r // 2
        for _ in range(2):
            for j in range(3):
                idx = order[g, j * 6:(j + 1) * 6]
                w = w - step.eta * _reference_gradient(w, x[idx], y[idx], step)
        assert torch.allclose(got[r], w, atol=1e-12)


def test_full_batch_without_noise_is_gradient_descent(device):
    x, y = _data(device=device)
    step = sgd.Step(eta=0.9, lam=0.02, M=1.0, R=None)
    w0 = _randn(2, 5, seed=5, device=device)
    zero = torch.zeros(2, dtype=torch.float64, device=device)
    a = sgd.epochs(w0, x, y, None, zero, 7, step, torch.Generator())
    b = sgd.gradient_descent(w0, x, y, 7, step)
    assert torch.allclose(a, b, atol=1e-12)


def test_noise_has_std_sqrt_two_eta_sigma_squared(device):
    """lam = 0 and zero features: the step is pure noise sqrt(2 eta sigma^2) N(0, I) (Algorithm 1, line 6)."""
    x, y = torch.zeros(4, 2000, device=device), torch.ones(4, device=device)
    step = sgd.Step(eta=0.25, lam=0.0, M=1.0, R=None)
    sigma = torch.tensor([0.5, 2.0], device=device)
    w = sgd.epochs(torch.zeros(2, 2000, device=device), x, y, None, sigma, 1, step, torch.Generator().manual_seed(0))
    assert w.device == x.device
    expected = (2 * 0.25 * sigma**2).sqrt()
    assert torch.allclose(w.std(dim=1), expected, rtol=0.05)


def test_projection_caps_the_norm_and_inf_means_off(device):
    w = torch.tensor([[30.0, 40.0], [3.0, 4.0], [300.0, 400.0]], device=device)
    out = sgd.project(w, torch.tensor([10.0, 10.0, math.inf], device=device))
    assert torch.allclose(out.norm(dim=1), torch.tensor([10.0, 5.0, 500.0], device=device))
    assert torch.allclose(out[0], torch.tensor([6.0, 8.0], device=device))


def test_inactive_rows_keep_their_value(device):
    x, y = _data(device=device)
    step = sgd.Step(eta=0.5, lam=0.01, M=1.0, R=100.0)
    w0 = _randn(2, 5, seed=6, device=device)
    order = sgd.partitions(1, 24, 8, torch.Generator().manual_seed(0))  # on the CPU: epochs moves it
    out = sgd.epochs(w0, x, y, order, torch.ones(2, dtype=torch.float64), 1, step, torch.Generator(), 8,
                     active=torch.tensor([True, False]))
    assert torch.equal(out[1], w0[1]) and not torch.equal(out[0], w0[0])


def test_initial_variance_is_two_sigma_squared_over_m(device):
    sigma = torch.tensor([0.1, 0.2, 0.4], device=device)
    w = sgd.initial(3, 4000, sigma, 0.01, torch.Generator().manual_seed(0))
    assert w.device == sigma.device
    assert torch.allclose(w.var(dim=1), 2 * sigma ** 2 / 0.01, rtol=0.06)


def test_replacements_are_unit_norm_with_signed_labels_and_replace_in_place(device):
    rx, ry = sgd.replacements(5, 7, torch.Generator().manual_seed(0))  # CPU; replaced moves them to the data
    assert torch.allclose(rx.norm(dim=1), torch.ones(5)) and set(ry.tolist()) <= {-1.0, 1.0}
    x, y = torch.zeros(10, 7, device=device), torch.ones(10, device=device)
    x1, y1 = sgd.replaced(x, y, [9, 8], rx[:2], ry[:2])
    assert x1.device == x.device and torch.equal(x1[9].cpu(), rx[0]) and torch.equal(x1[8].cpu(), rx[1])
    assert torch.equal(x[9], torch.zeros(7, device=device))


def test_same_generator_seed_gives_identical_runs(device):
    """Bit-identical on every device: the CPU generator draws the partitions, the start and the noise."""
    x, y = _data(device=device)
    step = sgd.Step(eta=0.5, lam=0.01, M=1.0, R=100.0)

    def run():
        gen = torch.Generator().manual_seed(11)
        order = sgd.partitions(2, 24, 8, gen, device)
        w = sgd.initial(4, 5, torch.full((4,), 0.3, device=device), 0.01, gen).double()
        return sgd.epochs(w, x, y, order, torch.full((4,), 0.3, dtype=torch.float64, device=device), 3, step, gen, 8)

    assert torch.equal(run(), run())


def test_noise_generator_keeps_the_cpu_stream_on_the_cpu():
    """On the CPU the noise comes from the run's own generator, drawing nothing extra: CPU results are those of
    a single stream; a device generator is seeded from one draw of it (test_devices.py, on CUDA)."""
    gen = torch.Generator().manual_seed(5)
    assert sgd.noise_generator(gen, "cpu") is gen
    assert sgd.noise_generator(gen, torch.device("cpu")) is gen
    assert torch.equal(torch.randn(3, generator=gen), torch.randn(3, generator=torch.Generator().manual_seed(5)))


def test_a_diverging_run_stops_at_the_first_non_finite_epoch(device):
    """lam = -1, eta = 1, zero features, no noise: every step doubles w exactly, so the row that starts at 1 holds
    2^127 after 127 epochs and overflows float32 in epoch 128; the row at 0 stays finite."""
    x, y = torch.zeros(4, 3, device=device), torch.ones(4, device=device)
    step = sgd.Step(eta=1.0, lam=-1.0, M=1.0, R=None)
    w0 = torch.tensor([[0.0] * 3, [1.0] * 3], device=device)
    zero = torch.zeros(2, device=device)
    w = sgd.epochs(w0, x, y, None, zero, 127, step, torch.Generator())
    assert torch.equal(w[1].cpu(), torch.full((3,), 2.0 ** 127))
    with pytest.raises(FloatingPointError, match=r"in 1 of 2 rows \(first: \[1\]\) after epoch 128 of 200 "
                       r"\(steps 128-128 of the call\)"):
        sgd.epochs(w0, x, y, None, zero, 200, step, torch.Generator())
    order = torch.arange(4)[None]  # mini-batches of 2, two steps an epoch: step 128 ends epoch 64
    with pytest.raises(FloatingPointError, match=r"after epoch 64 of 200 \(steps 127-128 of the call\)"):
        sgd.epochs(w0, x, y, order, zero, 200, step, torch.Generator(), batch=2)
