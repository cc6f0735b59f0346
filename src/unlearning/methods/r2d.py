"""R2D: Rewind-to-Delete unlearning (Mu & Klabjan 2025, Algorithms 2 and 3, Section 4.2).

Algorithm 2: reload the checkpoint theta_{T-K}, run K more (S)GD steps on the retained data D' = D \\ Z,
publish theta''_K + N(0, sigma^2 I) with sigma from `privacy.r2d_noise` (Theorem 3.1).

With the experiments' shuffled SGD and per-epoch decay (Section 4.2) the rewind is counted in epochs:
rewinding K_ep of E_sel epochs loads the state after E_sel - K_ep epochs and runs epochs E_sel - K_ep ..
E_sel - 1 on D' with the step sizes lr0 gamma^j of those epochs ("we start the step size at the value at the
checkpoint"), so the final step size is the learning run's. K_ep = E_sel starts from the initial weights:
that is a retrain on D' with the same schedule and permutations (bit-identical to `train` on D'). The noise
accounting uses K = K_ep S and T = (E_sel - 1) S (`r2d_noise.epoch_steps`).

Noise: one N(0, I) vector per seed in parameter order, rescaled by each sigma ("the same Gaussian noise vector
for models under the same seed, rescaled to different sigma", Appendix D).

Algorithm 3 (optional): the checkpoint computed post hoc from theta_T by K backward-Euler steps
theta_t = theta_{t+1} + eta grad f_D(theta_t), each the proximal point argmin_x -f_D(x) + ||x - theta_{t+1}||^2
/ (2 eta), convex for eta < 1/L (Lemmas 2.3, A.1). It is exact only for full-batch GD with a constant step.
"""

from __future__ import annotations

import numbers
import time

import torch
import torch.nn.functional as F
from torch import nn

from ..history import CheckpointStore
from ..privacy import r2d_noise
from ..seeding import generator
from ..train.checkpointed_sgd import Loss, Schedule, full_gradient, load_epoch, run_epochs, set_flat
from ..train.flat import FlatSpec
from . import register_central


def check_rewind(K_ep: int, E_sel: int) -> int:
    """K_ep as an int when 0 <= K_ep <= E_sel (a one-line ValueError otherwise)."""
    if isinstance(E_sel, bool) or not isinstance(E_sel, numbers.Integral) or E_sel < 1:
        raise ValueError(f"E_sel (selected epochs) = {E_sel!r}: valid: an integer >= 1")
    if isinstance(K_ep, bool) or not isinstance(K_ep, numbers.Integral) or not 0 <= K_ep <= E_sel:
        raise ValueError(f"K_ep (rewound epochs) = {K_ep!r}: valid: an integer with 0 <= K_ep <= E_sel = {E_sel}")
    return int(K_ep)


def rewind(model: nn.Module, store: CheckpointStore, X_retained: torch.Tensor, y_retained: torch.Tensor,
           schedule: Schedule, E_sel: int, K_ep: int, loss_fn: Loss = F.cross_entropy) -> nn.Module:
    """Algorithm 2 without the noise: load the state after E_sel - K_ep epochs into `model` and run the last
    K_ep epochs of the schedule on the retained data. Returns `model` (theta''_K)."""
    K_ep = check_rewind(K_ep, E_sel)
    spec = FlatSpec.of(model)
    load_epoch(store, E_sel - K_ep, model, spec)
    run_epochs(model, X_retained, y_retained, schedule, E_sel - K_ep, E_sel, loss_fn)
    return model


def unit_noise(model: nn.Module, seed: int) -> torch.Tensor:
    """One flat N(0, I) vector, drawn per parameter tensor in parameter order from a generator seeded by `seed`
    (the unlearning side uses seed s, the learning side s + 1000, Appendix D)."""
    gen = generator(seed, "r2d-noise")
    parts = [torch.randn(p.shape, generator=gen, dtype=p.dtype).reshape(-1) for p in model.parameters()]
    return torch.cat(parts).to(next(model.parameters()).device)


def noised(theta: torch.Tensor, unit: torch.Tensor, sigma: float) -> torch.Tensor:
    """theta + sigma * unit: the published model for one sigma (the same unit vector for every sigma)."""
    if not sigma >= 0:
        raise ValueError(f"sigma = {sigma!r}: valid: a number >= 0")
    return theta + sigma * unit


def posthoc_checkpoint(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eta: float, K: int,
                       loss_fn: Loss = F.cross_entropy, tol: float = 1e-12, max_iter: int = 10_000,
                       batch_size: int | None = None) -> torch.Tensor:
    """Algorithm 3: K backward-Euler steps from the model's theta_T, returned flat (approximately theta_{T-K}).

    Each step solves x = theta_{t+1} + eta grad f_D(x), the stationarity condition of the proximal subproblem
    (eq. 2), by gradient descent on the subproblem with step eta, which is the fixed-point iteration
    x <- theta_{t+1} + eta grad f_D(x) (a contraction with rate eta L < 1), until the update is below `tol`
    (relative). The model is left at theta_T."""
    if not 0 < eta:
        raise ValueError(f"eta = {eta!r}: valid: a number > 0 (and < 1/L for the subproblem to be convex)")
    if isinstance(K, bool) or not isinstance(K, numbers.Integral) or K < 0:
        raise ValueError(f"K = {K!r}: valid: an integer >= 0")
    spec = FlatSpec.of(model)
    theta_T = spec.flatten(model).clone()
    bs = batch_size or X.shape[0]
    current = theta_T.clone()
    try:
        for _ in range(K):
            x = current.clone()
            for _ in range(max_iter):
                set_flat(model, spec, x)
                new = current + eta * full_gradient(model, X, y, bs, loss_fn)
                step = float(torch.linalg.vector_norm(new - x))
                x = new
                if step <= tol * max(1.0, float(torch.linalg.vector_norm(x))):
                    break
            else:
                raise ValueError(f"eta = {eta:g}: the proximal step did not converge in {max_iter} iterations; "
                                 "valid: eta < 1/L")
            current = x
    finally:
        set_flat(model, spec, theta_T)
    return current


# The common ground's centralized canary task (experiments/common_ground/centralized.py and mlp.py; methods/__init__.py)

def budget_check(block: dict, common: dict) -> str | None:
    eps = common["budget"]["epsilon"]
    if eps > r2d_noise.ANALYTIC_EPSILON_MAX:
        return (f"common.budget.epsilon: {eps:g}: R2D's analytic Gaussian mechanism is exact up to "
                f"{r2d_noise.ANALYTIC_EPSILON_MAX:g} (privacy/r2d_noise.py); valid: a number in (0, 1e12]")
    return None


@register_central("r2d", model="convex", label="R2D", check=budget_check)
def run_convex(b) -> None:
    """Noiseless GD for T = `r2d_burn_in` steps at R2D's own step size eta = `r2d_eta_L_T` / (L T) (its eICU run has
    eta L T = 3.6), keeping the model of step T - K; unlearning rewinds there and re-runs K steps on D' (Algorithm 2),
    then adds Gaussian noise; retraining: T steps on D' plus the same noise; one row per rewind fraction K / T of
    `r2d_rewinds`. sigma: Theorem 3.1 with m = 1 (privacy/r2d_noise.py, analytic mechanism). Its bound is for
    deleting m of n points; the replacement changes each step's mean gradient by at most the 2 G m / n it bounds,
    so it applies as is."""
    bk, T, n, clip = b.bk, b.cfg["r2d_burn_in"], b.n, b.sglu["clip"]
    eta = b.cfg["r2d_eta_L_T"] / (bk.L * T)
    start = torch.randn(1, b.d, generator=generator(b.seed, "common", "centralized", "r2d")).to(b.device)
    again = b.clock("r2d retrain", b.gradient_descent, start, "D'", T, eta)
    for fraction in b.cfg["r2d_rewinds"]:
        K = max(1, round(fraction * T))
        key = f"r2d K/T={fraction:g}"
        rewound = b.clock(f"{key} learn", b.gradient_descent, start, "D", T - K, eta)
        moved = b.clock(f"{key} unlearn", b.gradient_descent, rewound, "D'", K, eta)
        b.publish(key, "r2d", r2d_noise.sigma(b.eps, b.delta, K, T, eta, bk.L, clip, 1, n), moved, again,
                  {"learning": T * n, "unlearning": K * n, "retraining": T * n}, rewind=K / T, K=K, T=T, eta=eta,
                  sensitivity=r2d_noise.sensitivity(K, T, eta, bk.L, clip, 1, n))


@register_central("r2d", model="mlp", label="R2D", check=budget_check)
def run_mlp(b) -> None:
    """R2D's own training (the MLP bench's original: minibatch SGD at lr0 gamma^epoch, a checkpoint after every
    epoch) and its L and G; unlearning rewinds K_ep epochs and re-runs them on D' (`rewind`); retraining re-runs all.
    sigma: Theorem 3.1 with K = K_ep S and T = (E - 1) S (r2d_noise.epoch_steps), m = 1; one row per rewind
    fraction, then the calibration of the published noise (experiments/common_ground/r2d_calibration.py)."""
    t, n = b.trained(), b.n
    published = {}
    for fraction in b.cfg["r2d"]["rewinds"]:
        K_ep = min(max(1, round(fraction * (t.E - 1))), t.E - 1)
        key = f"r2d K/T={fraction:g}"
        start = time.perf_counter()
        moved = b.spec.flatten(rewind(b.net, t.store, b.x[b.keep], b.labels[b.keep], t.sched, t.E, K_ep)).clone()[None]
        b.seconds[f"{key} unlearn"] = time.perf_counter() - start
        K, T = r2d_noise.epoch_steps(K_ep, t.E, t.S)
        b.publish(key, "r2d", r2d_noise.sigma(b.eps, b.delta, K, T, t.eta, t.L, t.G, 1, n), moved, t.retrained,
                  {"learning": t.E * n, "unlearning": K_ep * (n - 1), "retraining": t.E * (n - 1)},
                  rewind=K / T, K=K, T=T, sensitivity=r2d_noise.sensitivity(K, T, t.eta, t.L, t.G, 1, n))
        published[key] = {**b.result["methods"][key], "K_ep": K_ep}
    b.calibrate(published)
