"""The same task trained by PDUDT's Eq. 2 (gradient mixing), every round's gradients stored: PDUDT's replay starts
here."""

from __future__ import annotations

from . import Context, Original, remaining
from .dsgd import trained

LABEL = "D-SGD by PDUDT's Eq. 2 (gradient mixing)"
TWIN = "gradient"
PARAMS = ()


def train(ctx: Context) -> Original:
    setup = ctx.gradient_setup()
    state, cost = trained(setup, ctx.directory("eq2"), history=True)
    return Original(state, cost, rows=remaining(setup, state.theta, state.clients))
