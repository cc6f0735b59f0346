"""LU (Chien et al. 2024a, Langevin unlearning; SGLU spec 4.4) on the common ground's centralized canary task:
SGLU's chain without projection, noisy full-batch GD for `lu_burn_in` steps on D, then 1 step on D'; retraining:
`lu_burn_in` steps on D'. sigma: lu_sigma_for_budget (privacy/sglu_baselines.py)."""

from __future__ import annotations

from ..privacy import sglu_baselines as base
from ..train import noisy_sgd as sgd
from . import register_central


@register_central("lu", model="convex", label="LU",
                  does_not_apply={"mlp": "its certificate assumes a (strongly) convex loss; an MLP's is not"})
def run(b) -> None:
    bk = b.bk
    b.noisy_chains("lu", lambda eps: base.lu_sigma_for_budget(bk, eps), sgd.Step(bk.step, bk.m, b.sglu["clip"], None),
                   bk.m, b.cfg["lu_burn_in"])
