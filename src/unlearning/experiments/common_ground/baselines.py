"""HF and CNS, Rewind-to-Delete's certified baselines (methods/r2d_baselines.py, as the R2D authors ran them), on the
common ground's centralized task: the logistic model w as a two-class module (logits [0, w.x], so that the
cross-entropy is log(1 + exp(-y w.x))), or the MLP of the MLP setting.

Both certify deletion: removing the canary means deleting it (D' = D without it). HF's retraining is its training
run with the canary's loss terms dropped from their batches (the run its approximator tracks); CNS's trains on D'.
Both learners are deterministic (their minibatch orders are seeded), so the randomness of every run is the output
noise sigma xi, drawn per run: the audit sees the noiseless models plus independent noise, as a deployment would.

- HF (Qiao et al. 2024): clipped SGD with a decaying step and the canary's approximator recorded along; unlearning
  adds it: w_U = w_T + a. sigma from the bound b (privacy/r2d_baselines.hf_sensitivity; rho by power iteration).
- CNS (Zhang et al. 2024): projected Adam onto the ball of radius R (the epoch of lowest training loss kept; R2D
  keeps the lowest validation loss, this task has no validation split); unlearning is one LiSSA Newton step on D'.
  sigma from its Delta (privacy/r2d_baselines.cns_sensitivity) with the smoothness L and gradient bound G given
  (the logistic loss on unit-norm features: 1/4 and 1; an MLP: R2D's estimates).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ...methods import r2d_baselines as rb
from ...privacy import r2d_baselines as rbn
from ...seeding import derive_seed

L_LOGISTIC, G_LOGISTIC = 0.25, 1.0  # smoothness and gradient bound of the logistic loss on unit-norm features


class LogisticAsTwoClasses(nn.Module):
    """w in R^d with logits [0, w.x]: cross-entropy on labels (y + 1) / 2 is the logistic loss of y in {-1, +1}."""

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.w = nn.Parameter(w.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x @ self.w
        return torch.stack([torch.zeros_like(z), z], dim=1)


def hf(model_fn: Callable[[], nn.Module], x: torch.Tensor, labels: torch.Tensor, canary: int, cfg: dict, eps: float,
       delta: float, seed: int) -> dict:
    """HF: the unlearned and retrained noiseless models (flat, [1, P]), sigma at (eps, delta), and its constants.
    `labels` are class indices; `model_fn` makes the same initial model every call."""
    hc, n = cfg, len(labels)
    model = model_fn()
    trained = rb.train_hf(model, x, labels, torch.tensor([canary]), hc["lr0"], hc["decay"], hc["clip"], hc["l2"],
                          hc["batch_size"], hc["epochs"], derive_seed(seed, "common", "hf"), per_sample=False)
    first = trained.first_batch.to(x.device)
    rho = rb.hf_rho(model, x[first], labels[first], hc["clip"], hc["l2"], hc["rho_iterations"],
                    seed=derive_seed(seed, "common", "hf-rho"))
    b = rbn.hf_sensitivity(hc["lr0"], hc["clip"], hc["decay"], rho, n, hc["batch_size"], hc["epochs"], 1)
    again = rb.train_hf(model_fn(), x, labels, torch.zeros(0, dtype=torch.long), hc["lr0"], hc["decay"], hc["clip"],
                        hc["l2"], hc["batch_size"], hc["epochs"], derive_seed(seed, "common", "hf"), per_sample=False,
                        skip=torch.tensor([canary]))
    return {"unlearned": (trained.theta + trained.approximator)[None], "retrained": again.theta[None],
            "sigma": rbn.sigma_for(eps, delta, b) if b > 0 else 0.0, "sensitivity": b, "rho": rho,
            "steps": trained.steps, "grads": {"learning": hc["epochs"] * n, "unlearning": 0,
                                              "retraining": hc["epochs"] * (n - 1)}}


def cns(model_fn: Callable[[], nn.Module], x: torch.Tensor, labels: torch.Tensor, canary: int, cfg: dict, eps: float,
        delta: float, seed: int, L: float, G: float) -> dict:
    """CNS: the unlearned (Newton step on D') and retrained noiseless models, sigma at (eps, delta); a LiSSA
    divergence raises rb.Diverged (the caller shows the row as missing, with the reason)."""
    cc, li, nz = cfg, cfg["lissa"], cfg["noise"]
    n = len(labels)
    keep = torch.arange(n, device=x.device) != canary

    def train(rows: torch.Tensor) -> tuple[nn.Module, rb.CNSTraining]:
        model = model_fn()
        return model, rb.train_cns(model, x[rows], labels[rows], x[rows], labels[rows], cc["lr"], cc["wd"],
                                   cc["batch_size"], cc["epochs"], cc["R"], derive_seed(seed, "common", "cns"))

    model, trained = train(torch.arange(n, device=x.device))
    step = rb.lissa_newton_step(model, x[keep], labels[keep], cc["wd"], li["gamma"], li["s1"], li["s2"], li["bs"],
                                li["scale"], derive_seed(seed, "common", "lissa"))
    _, again = train(keep)
    dim = sum(p.numel() for p in model.parameters())
    Delta = rbn.cns_sensitivity(cc["R"], L, G, dim, nz["lam"], nz["M"], nz["rho"], nz["lam_min"])
    return {"unlearned": (trained.theta - step)[None], "retrained": again.theta[None],
            "sigma": rbn.sigma_for(eps, delta, Delta), "sensitivity": Delta, "kept_epoch": trained.selected,
            "newton_step_norm": float(step.norm()),
            "grads": {"learning": cc["epochs"] * n, "unlearning": (n - 1) + 2 * li["s1"] * li["s2"] * li["bs"],
                      "retraining": cc["epochs"] * (n - 1)}}
