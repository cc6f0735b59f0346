"""Exact minimisers of the L2-regularised multinomial logistic regression over clients (eq. 1 with eq. 4's loss):
argmin_w (1/N) sum_i mean_{kept samples of client i} CE(w) + (lam/2) ||w||^2, each client weighted 1/N.

Full-batch L-BFGS (strong Wolfe line search) from zero, then Newton steps with the exact Hessian and backtracking
until the gradient norm is below `tol` (or stops shrinking at the float64 floor). The reference that unlearning
corrections are measured against where the objective is strongly convex (retraining to the exact minimiser).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from . import autodiff
from .dsgd import ClientData
from .flat import FlatSpec


def logreg_hessian(flat: torch.Tensor, x: torch.Tensor, classes: int) -> torch.Tensor:
    """The exact Hessian [d, d] of the mean multinomial cross-entropy of `LogisticRegression` (weight [K, D]
    then bias [K], FlatSpec order): (1/n) sum_xi (diag p - p p^T) (x) z z^T with z = (x, 1)."""
    x = x.flatten(1).to(flat)
    n, dim = x.shape
    k = classes
    if flat.numel() != k * (dim + 1):
        raise ValueError(f"hessian_exact: {flat.numel()} parameters are not a logistic regression on {dim} "
                         f"features and {k} classes; valid: curvature: fisher_diag")
    weight, bias = flat[: k * dim].view(k, dim), flat[k * dim:]
    p = torch.softmax(x @ weight.T + bias, dim=1)
    z = torch.cat([x, torch.ones(n, 1, dtype=x.dtype, device=x.device)], dim=1)
    h = flat.new_zeros(k, dim + 1, k, dim + 1)
    for a in range(k):
        for b in range(a, k):
            coef = p[:, a] * (float(a == b) - p[:, b]) / max(n, 1)
            block = (z * coef[:, None]).T @ z
            h[a, :, b, :] = block
            if b != a:
                h[b, :, a, :] = block
    # augmented index (class a, feature j <= D) -> flat index: weight a*D + j, bias k*D + a
    cls = torch.arange(k).repeat_interleave(dim + 1)
    feat = torch.arange(dim + 1).repeat(k)
    order = torch.where(feat < dim, cls * dim + feat, k * dim + cls).to(flat.device)
    out = torch.empty(k * (dim + 1), k * (dim + 1), dtype=flat.dtype, device=flat.device)
    out[order[:, None], order[None, :]] = h.reshape(k * (dim + 1), k * (dim + 1))
    return out


@dataclass
class Minimum:
    w: torch.Tensor          # [d], float64
    lbfgs_grad_norm: float   # ||grad|| after L-BFGS, before the Newton polish
    grad_norm: float         # ||grad|| at w
    newton_steps: int


def objective(model: nn.Module, spec: FlatSpec, data: ClientData, keep: list[torch.Tensor], lam: float):
    """f(w) = (1/N) sum_i mean_{keep_i} CE + (lam/2)||w||^2 over the clients' kept samples (boolean masks)."""
    rows = torch.cat([idx[k] for idx, k in zip(data.indices, keep)])
    weight = torch.cat([torch.full((int(k.sum()),), 1.0 / (len(keep) * int(k.sum())), dtype=torch.float64)
                        for k in keep])
    xs, ys = data.x[rows], data.y[rows]

    def f(w):
        ce = F.cross_entropy(functional_call(model, spec.unflatten(w), (xs,)), ys, reduction="none")
        return (ce * weight).sum() + lam / 2 * (w @ w)

    return f


def minimiser(model: nn.Module, spec: FlatSpec, data: ClientData, keep: list[torch.Tensor], lam: float,
              classes: int, tol: float = 1e-13, lbfgs_iter: int = 50, newton_max: int = 50,
              start: torch.Tensor | None = None, lbfgs_tol: float | None = None, hessian: torch.Tensor | None = None,
              reuse_hessian: bool = False) -> Minimum:
    """The minimiser of `objective` (float64 `model` = LogisticRegression, `data.x` float64) from `start` (zero
    when None; a nearby point saves most of the L-BFGS iterations); see the module. `lbfgs_tol`: L-BFGS runs until
    its largest gradient entry is below it (then `lbfgs_iter` is a cap; default: torch's 1e-7 and no change test).
    `hessian` (the data term's, without lam) or `reuse_hessian` (the first Newton step's): every Newton step uses
    that one factorised Hessian (a chord method: linear convergence, each step a gradient and two triangular
    solves instead of a Hessian and a solve); fine where the start lies near the minimiser."""
    f = objective(model, spec, data, keep, lam)
    w = (torch.zeros(spec.dim, dtype=torch.float64) if start is None else start.detach().clone().double())
    w.requires_grad_(True)
    if lbfgs_iter > 0:
        tols = {} if lbfgs_tol is None else {"tolerance_grad": lbfgs_tol, "tolerance_change": 0.0}
        opt = torch.optim.LBFGS([w], lr=1, max_iter=lbfgs_iter, history_size=20, line_search_fn="strong_wolfe",
                                **tols)

        def closure():
            opt.zero_grad()
            loss = f(w)
            loss.backward()
            return loss

        opt.step(closure)
    w, eye = w.detach(), torch.eye(spec.dim, dtype=torch.float64)
    factor = None if hessian is None else torch.linalg.cholesky(hessian + lam * eye)
    chord = hessian is not None or reuse_hessian
    grad = autodiff.grad(f)
    lbfgs_norm = float(grad(w).norm())
    steps, last = 0, float("inf")
    for _ in range(newton_max):  # Newton polish with the exact Hessian and backtracking
        g = grad(w)
        norm = float(g.norm())
        if norm < tol or (norm < 1e-10 and norm > 0.5 * last):  # converged, or at the float64 floor
            break
        if factor is not None and norm > 0.5 * last:  # the chord stalls: a fresh Hessian here
            factor = None
        last = norm
        if factor is None:
            h = sum(logreg_hessian(w, data.x[idx[k]], classes) for idx, k in zip(data.indices, keep)) / len(keep)
            if chord:
                factor = torch.linalg.cholesky(h + lam * eye)
            else:
                step = torch.linalg.solve(h + lam * eye, g)
        if factor is not None:
            step = torch.cholesky_solve(g[:, None], factor)[:, 0]
        t, f0 = 1.0, f(w)
        while norm > 1e-8 and f(w - t * step) > f0 and t > 1e-8:  # near the minimiser, full steps
            t /= 2
        w = w - t * step
        steps += 1
    return Minimum(w, lbfgs_norm, float(grad(w).norm()), steps)
