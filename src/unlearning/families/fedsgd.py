"""Full-participation FedSGD (every round's graph complete, Eq. 2), every client's g^t stored: FedRecovery starts
here."""

from __future__ import annotations

from ..history import HistoryWriter
from ..methods import Cost, TrainedState
from ..methods.fedrecovery import train_server
from . import Context, Original

LABEL = "FedSGD, every client every round (FedRecovery)"
TWIN = "gradient"
PARAMS = ()


def train(ctx: Context) -> Original:
    setup, directory = ctx.gradient_setup(), ctx.directory("fedsgd")
    n, rounds = ctx.cfg["clients"], ctx.cfg["train"]["rounds"]
    writer = HistoryWriter(directory / "history", rounds, list(range(n)), setup.spec.dim,
                           setup.params["engine"]["history_dtype"])
    theta, train_log = train_server(setup, rounds, writer)
    writer.close()
    cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0, 2 * rounds * n * setup.spec.dim)
    return Original(TrainedState(setup, theta, list(range(n)), rounds, directory), cost, rows=theta[:1])
