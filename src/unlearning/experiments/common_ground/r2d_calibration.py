"""R2D's noise calibration on the MLP, taken apart (issue 36, item 4): which of its parts makes the measured gap
between the noiseless unlearned and retrained models exceed the sensitivity the noise was set for.

For each rewind of the MLP setting (mlp.py), beside the published row's Delta (Theorem 3.1 at the final step size,
Appendix D's L and G: the paper's practical calibration):

- `sensitivity_actual_steps`: the same bound with the step sizes the run actually took (r2d_noise.sensitivity_steps;
  the schedule decays from lr0, so the final step size is the smallest);
- `gap_matched`: the gap when unlearning and retraining take the original run's minibatches with the canary simply
  dropped from its batch (checkpointed_sgd.run_epochs' `drop`), so the shuffles differ by nothing but the canary;
- `full_batch_gap`: Theorem 3.1's own setting on the same MLP, initialisation, L and G: full-batch GD at the
  constant final step size for the same T steps, rewound K; its bound is exactly the published Delta. Beside it,
  the G that run needs (the largest n ||grad f_D - grad f_D'|| / 2 along it: Appendix D's G, the largest minibatch
  gradient norm, need not bound it) and the bound with that G;
- `sigma_classical`: the paper's classical Gaussian sigma (eq. 3) beside the analytic one the row used.

If the full-batch gaps stay within their bound, Theorem 3.1 is not contradicted here, and what under-states the
sensitivity is the practical calibration (the final step size, Appendix D's estimates, unmatched shuffles). A
run cannot contradict the theorem itself while L is estimated (Appendix D: at theta_T only).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ... import floatmath
from ...privacy import r2d_noise
from ...train import checkpointed_sgd as cs
from ...train.flat import FlatSpec


def gradient_descent(model: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor, eta: float, steps: int,
                     stop_at: set[int] = frozenset(), deleted: int | None = None) -> tuple[dict[int, torch.Tensor],
                                                                                           float]:
    """`steps` full-batch GD steps at constant `eta` on the mean cross-entropy, in place. Returns the flat state
    after each step count in `stop_at` (0: before any) and, with `deleted` (a sample's index), the largest
    n ||grad f_D - grad f_D'|| / 2 over the steps, D' = D without it: the G that Theorem 3.1's per-step gradient
    difference 2 G / n needs along this run (from the sample's own gradient: grad f_D' = (n grad f_D - grad l) /
    (n - 1)); else 0."""
    spec, params, n = FlatSpec.of(model), list(model.parameters()), len(x)
    kept = {0: spec.flatten(model).clone()} if 0 in stop_at else {}
    needed = 0.0
    for step in range(1, steps + 1):
        loss = F.cross_entropy(model(x), labels)
        grads = torch.autograd.grad(loss, params)
        if not math.isfinite(float(loss.detach())):
            raise cs.Diverged(f"full-batch GD, step {step}: the loss is not finite; valid: a smaller step size")
        if deleted is not None:
            own = torch.autograd.grad(F.cross_entropy(model(x[deleted:deleted + 1]), labels[deleted:deleted + 1]),
                                      params)
            diff = sum(((o - (n * g - o) / (n - 1)) ** 2).sum() for o, g in zip(own, grads))
            needed = max(needed, float(floatmath.sqrt(diff)) / 2)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.add_(g, alpha=-eta)
        if step in stop_at:
            kept[step] = spec.flatten(model).clone()
    return kept, needed


def attribution(model_fn, store, x: torch.Tensor, labels: torch.Tensor, canary: int, sched: cs.Schedule, E: int,
                rows: dict[str, dict], L: float, G: float, eps: float, delta: float) -> dict:
    """The parts above for each published R2D row (`rows`: key -> its K_ep, K, T, sensitivity, noiseless_gap),
    from the training's checkpoints in `store` (E epochs on the full data)."""
    n = len(x)
    keep = torch.arange(n, device=x.device) != canary
    S = sched.steps_per_epoch(n)
    net = model_fn()
    spec = FlatSpec.of(net)
    # matched minibatches: every run on the full data's batches, the canary dropped from its own
    cs.load_epoch(store, 0, net, spec)
    cs.run_epochs(net, x, labels, sched, 0, E, drop=canary)
    retrained = spec.flatten(net).clone()
    etas = [sched.lr(e) for e in range(1, E) for _ in range(S)]  # the T = (E - 1) S steps the accounting counts
    eta_final = sched.lr(E - 1)
    T = (E - 1) * S
    Ks = sorted({r["K"] for r in rows.values()})
    start = model_fn()  # the same initialisation as R2D's training
    at, G_needed = gradient_descent(start, x, labels, eta_final, T, {T - K for K in Ks}, deleted=canary)
    again_net = model_fn()
    gradient_descent(again_net, x[keep], labels[keep], eta_final, T)
    again = spec.flatten(again_net)
    out = {"eta_final": eta_final, "eta_max": max(etas), "steps": T, "G": G, "full_batch_G_needed": G_needed,
           "rows": {}}
    for key, r in rows.items():
        cs.load_epoch(store, E - r["K_ep"], net, spec)
        cs.run_epochs(net, x, labels, sched, E - r["K_ep"], E, drop=canary)
        gap_matched = float((spec.flatten(net) - retrained).norm())
        fb = model_fn()
        cs.set_flat(fb, spec, at[T - r["K"]])
        gradient_descent(fb, x[keep], labels[keep], eta_final, r["K"])
        actual = r2d_noise.sensitivity_steps(r["K"], etas, L, G, 1, n)
        out["rows"][key] = {
            "rewind": r["K"] / T, "K": r["K"], "T": T, "sensitivity": r["sensitivity"],
            "sensitivity_actual_steps": actual, "gap": r["noiseless_gap"], "gap_matched": gap_matched,
            "full_batch_gap": float((spec.flatten(fb) - again).norm()),
            "full_batch_sensitivity_needed_G": r2d_noise.sensitivity(r["K"], T, eta_final, L, max(G, G_needed), 1, n),
            "sigma_classical": r2d_noise.classical_sigma(eps, delta, r["sensitivity"], strict=False)}
    return out
