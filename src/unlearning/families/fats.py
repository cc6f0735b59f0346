"""FedAvg over `fats.clients_per_round` sampled clients, its rollback store: FATS-Unl starts here."""

from __future__ import annotations

import time

from ..methods import Cost, TrainedState
from ..methods.fats import train_fats
from . import Context, Original

LABEL = "FedAvg over sampled clients (FATS)"
TWIN = None
PARAMS = ("fats",)


def train(ctx: Context) -> Original:
    setup, k, rounds = ctx.setup, ctx.cfg["fats"]["clients_per_round"], ctx.cfg["train"]["rounds"]
    directory = ctx.directory("fats")
    (directory / "history").mkdir(parents=True)
    start = time.perf_counter()
    w, grads = train_fats(setup, directory / "history", k)
    cost = Cost(time.perf_counter() - start, grads, 0, 2 * rounds * k * setup.spec.dim)
    return Original(TrainedState(setup, w[None], [-1], rounds, directory), cost, rows=w[None])
