"""Projected noisy SGD on L2-regularised logistic regression, vectorised over trials
(Chien et al. 2024, Eq. 2 and Algorithm 1).

Every function works on a stack of independent runs `w [runs, d]` (trials, possibly times a noise grid:
`sigma [runs]` holds each row's sigma). The data `x [n, d]`, `y [n]` (labels +-1) are shared by all rows.

- Fixed partitions: `order [G, (n // b) * b]` holds G permutations of the indices with the tail dropped
  (b does not divide n); the rows split into G equal consecutive blocks and block g uses partition g,
  epoch after epoch, learning and unlearning alike: iteration j reads `order[g, j*b:(j+1)*b]`. G = runs
  gives every row its own partition (the paper's protocol); rows sharing a partition share one gather and
  one matrix product, which is what makes many trials cheap. Full batch (b >= n) needs no order: one
  epoch is one iteration on all of x.
- One step (Algorithm 1):  w <- Pi_{C_R}( w - eta g + sqrt(2 eta sigma^2) N(0, I) ),  where g is the
  mean of the clipped per-sample gradients (eq. 72) Pi_{C_M}((s(y w.x) - 1) y x) + lam w.
- Unlearning = `epochs` more of the same on the dataset with the removed rows replaced (same indices).
- Devices: the steps run where `w` lives. The noise comes from the generator given to `epochs`, on its own
  device (`noise_generator` gives one on the weights' device), and moves to `w` when the two differ;
  partitions and initial weights come from a CPU generator and move to the weights' device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Step:
    """The constants of one noisy step: step size eta, regulariser lam, clip norm M, radius R (None = no
    projection, as every official run did; spec 7-3; a [runs] tensor gives each row its own, inf = none)."""

    eta: float
    lam: float
    M: float = 1.0
    R: float | torch.Tensor | None = 100.0


def logistic_gradient(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, step: Step,
                      norms: torch.Tensor | None = None) -> torch.Tensor:
    """Mean clipped gradient (eq. 72) of each row. `w` is [G, rows, d]; `x` [G or 1, b, d], `y` and the
    feature norms `norms` (computed when not given) [G or 1, b]."""
    margins = w @ x.transpose(1, 2)  # [G, rows, b]
    coef = (torch.sigmoid(y[:, None, :] * margins) - 1) * y[:, None, :]  # d loss / d margin, per sample
    norms = (x.norm(dim=2) if norms is None else norms)[:, None, :]
    coef = coef * torch.clamp(step.M / (coef.abs() * norms).clamp_min(1e-30), max=1.0)  # Pi_{C_M} per sample
    return coef @ x / x.shape[1] + step.lam * w


def project(w: torch.Tensor, radius: float | torch.Tensor | None) -> torch.Tensor:
    """Pi_{C_R}(w) = w min(1, R/||w||), row by row; identity when radius is None (or a row's radius is inf)."""
    if radius is None:
        return w
    radius = radius[:, None].to(w.device) if isinstance(radius, torch.Tensor) else radius
    return w * torch.clamp(radius / w.norm(dim=1, keepdim=True).clamp_min(1e-30), max=1.0)


def initial(runs: int, d: int, sigma: torch.Tensor, m: float, gen: torch.Generator) -> torch.Tensor:
    """w0 ~ N(0, (2 sigma^2 / m) I_d) per row (spec 4.4: the variance is 2 sigma^2 / m), drawn on the
    generator's device and returned on `sigma`'s."""
    std = (2 * sigma.double() ** 2 / m).sqrt().to(torch.float32)
    return torch.randn(runs, d, generator=gen, device=gen.device).to(sigma.device) * std[:, None]


def partitions(groups: int, n: int, b: int, gen: torch.Generator,
               device: str | torch.device = "cpu") -> torch.Tensor | None:
    """`groups` random partitions of [n] into n // b batches (the tail dropped), drawn by the CPU generator
    `gen` and returned on `device`; None for full batch."""
    if b >= n:
        return None
    usable = (n // b) * b
    return torch.stack([torch.randperm(n, generator=gen)[:usable] for _ in range(groups)]).to(device)


def noise_generator(gen: torch.Generator, device: str | torch.device) -> torch.Generator:
    """The generator of the Langevin noise for weights on `device`: `gen` itself when it lives there (a CPU
    run keeps its one stream), else a generator on `device` seeded from `gen`'s next draw, deterministic
    either way. A CPU stream would cap a CUDA run at the CPU's rate of normal draws (~1e8 per second)."""
    if gen.device.type == torch.device(device).type:
        return gen
    seed = int(torch.randint(0, 2**62, (1,), generator=gen))
    return torch.Generator(device=device).manual_seed(seed)


def _check_finite(w: torch.Tensor, epoch: int, count: int, iterations: int, step: Step) -> None:
    """Stop at the first epoch that leaves a non-finite weight: a diverged chain has no accuracy to report."""
    finite = torch.isfinite(w).all(dim=1)
    if not bool(finite.all()):
        rows = (~finite).nonzero().flatten().tolist()
        raise FloatingPointError(
            f"noisy SGD diverged: non-finite weights in {len(rows)} of {len(finite)} rows (first: {rows[:5]}) after "
            f"epoch {epoch + 1} of {count} (steps {epoch * iterations + 1}-{(epoch + 1) * iterations} of the call), "
            f"eta = {step.eta:g}, lam = {step.lam:g}; a smaller step size or a projection radius keeps it bounded")


def epochs(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, order: torch.Tensor | None, sigma: torch.Tensor,
           count: int, step: Step, gen: torch.Generator, batch: int | None = None,
           active: torch.Tensor | None = None) -> torch.Tensor:
    """`count` epochs of projected noisy SGD from `w` (Algorithm 1, lines 3-7 or 10-14). Rows where
    `active` is False keep their value (they draw noise all the same, so the streams stay aligned).
    The noise is drawn on `gen`'s device; every epoch ends with a check that the weights are finite."""
    runs, d = w.shape
    groups = 1 if order is None else order.shape[0]
    if runs % groups:
        raise ValueError(f"{runs} rows do not split into {groups} partition groups")
    noise_std = (2 * step.eta * sigma.double() ** 2).sqrt().to(w.device, w.dtype)[:, None]
    iterations = 1 if order is None else order.shape[1] // batch
    order = None if order is None else order.to(w.device)
    active = None if active is None else active.to(w.device)
    norms = x.norm(dim=1)
    rows = None if order is None else torch.empty(groups * batch, d, dtype=x.dtype, device=x.device)  # reused
    for epoch in range(count):
        for j in range(iterations):
            if order is None:
                xb, yb, nb = x[None], y[None], norms[None]
            else:
                idx = order[:, j * batch:(j + 1) * batch]
                xb = torch.index_select(x, 0, idx.reshape(-1), out=rows).view(groups, batch, d)
                yb, nb = y[idx], norms[idx]
            g = logistic_gradient(w.view(groups, runs // groups, d), xb, yb, step, nb).reshape(runs, d)
            noise = torch.randn(w.shape, generator=gen, device=gen.device).to(w.device)
            new = project(w - step.eta * g + noise_std * noise, step.R)
            w = new if active is None else torch.where(active[:, None], new, w)
        _check_finite(w, epoch, count, iterations, step)
    return w


def gradient_descent(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, steps: int, step: Step) -> torch.Tensor:
    """Noiseless full-batch (projected) gradient descent: D2D's learning and unlearning (spec 2.5.2)."""
    norms = x.norm(dim=1)[None]
    for _ in range(steps):
        w = project(w - step.eta * logistic_gradient(w[None], x[None], y[None], step, norms)[0], step.R)
    return w


def accuracy(w: torch.Tensor, x_test: torch.Tensor, y_test: torch.Tensor) -> torch.Tensor:
    """Test accuracy of each row: mean of 1[w.x > 0] == 1[y = +1] (spec 5)."""
    return ((w @ x_test.T > 0) == (y_test > 0)).float().mean(dim=1)


def replacements(count: int, d: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Replacement points for unlearning: N(0, I_d) normalised to unit norm, labels uniform in {-1, +1}.
    Drawn once per experiment and kept (spec 4.4, 7-9)."""
    x = torch.randn(count, d, generator=gen)
    x = x / x.norm(dim=1, keepdim=True)
    y = torch.randint(0, 2, (count,), generator=gen).float() * 2 - 1
    return x, y


def replaced(x: torch.Tensor, y: torch.Tensor, rows: list[int], new_x: torch.Tensor,
             new_y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The dataset D' with `rows` replaced (same indices, so batch membership is unchanged)."""
    x, y = x.clone(), y.clone()
    x[rows], y[rows] = new_x.to(x.device), new_y.to(y.device)
    return x, y
