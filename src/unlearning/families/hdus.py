"""HDUS' main and seed models (their store under its directory's history/): each remaining client's ensemble before
unlearning is the original judged."""

from __future__ import annotations

import time

import torch

from ..methods import Cost, TrainedState
from ..methods import hdus as h
from . import Context, Original

LABEL = "HDUS main and seed models"
TWIN = None
PARAMS = ("hdus",)


def train(ctx: Context) -> Original:
    setup, directory = ctx.setup, ctx.directory("hdus")
    start = time.perf_counter()
    (directory / "history").mkdir(parents=True, exist_ok=True)
    _, grads = h.train_hdus(setup, directory / "history", ctx.cfg["hdus"]["public_fraction"])
    trained_s = time.perf_counter() - start
    # before unlearning: every remaining client's ensemble with every seed it holds, weights fitted alike
    before, _, _ = h.unlearn(setup, directory / "history", ctx.cfg["hdus"]["refit_lr"], removed=())
    kept = {c: e for c, e in before.items() if c not in setup.request.removed}
    state = TrainedState(setup, torch.zeros(0), list(range(ctx.cfg["clients"])), ctx.cfg["train"]["rounds"],
                         directory)
    return Original(state, Cost(trained_s, grads), predict=h.predictors(setup, kept))
