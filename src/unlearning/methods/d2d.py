"""D2D (Neel et al. 2021, Descent-to-Delete) on the common ground's centralized canary task: noiseless GD,
`d2d_burn_in` steps on D then `d2d_steps` on D', published with Gaussian output noise; retraining: the same GD on D'
plus the same noise. sigma: Theorem L.1 (privacy/sglu_baselines.d2d_sigma_internal)."""

from __future__ import annotations

import torch

from ..privacy import sglu_baselines as base
from ..seeding import generator
from . import register_central


@register_central("d2d", model="convex", label="D2D",
                  does_not_apply={"mlp": "its certificate assumes a (strongly) convex loss; an MLP's is not"})
def run(b) -> None:
    bk, T, steps, n = b.bk, b.cfg["d2d_burn_in"], b.cfg["d2d_steps"], b.n
    start = torch.randn(1, b.d, generator=generator(b.seed, "common", "centralized", "d2d")).to(b.device)
    clean = b.clock("d2d learn", b.gradient_descent, start, "D", T, bk.eta_d2d)
    moved = b.clock("d2d unlearn", b.gradient_descent, clean, "D'", steps, bk.eta_d2d)
    again = b.clock("d2d retrain", b.gradient_descent, start, "D'", T, bk.eta_d2d)
    b.publish("d2d", "d2d", base.d2d_sigma_internal(bk, b.eps, steps), moved, again,
              {"learning": T * n, "unlearning": steps * n, "retraining": T * n})
