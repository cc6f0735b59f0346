"""SGLU (Algorithm 1; specs/sglu.md) on the common ground's centralized canary task: projected noisy full-batch GD
for `burn_in` epochs on D, then K = 1 epoch on D'; beside it the same chain for `burn_in` epochs on D'. sigma:
Algorithm 4 at the budget (privacy/sglu.py). The SGLU paper's own experiments live in experiments/sglu/."""

from __future__ import annotations

from ..privacy import sglu as acc
from ..train import noisy_sgd as sgd
from . import register_central


@register_central("sglu", model="convex", label="SGLU",
                  does_not_apply={"mlp": "its certificate assumes a (strongly) convex loss; an MLP's is not"})
def run(b) -> None:
    k, T = b.k, b.cfg["burn_in"]
    b.noisy_chains("sglu", lambda eps: acc.sigma_for_budget(k, eps, b.delta, 1, T),
                   sgd.Step(k.step, k.m, b.sglu["clip"], b.sglu["radius"]), k.m, T)
