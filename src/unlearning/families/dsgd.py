"""D-SGD of `train.mixing` (model mixing), its final checkpoint stored: fine-tuning, DU, retraining, NegGrad+ and
SalUn start here."""

from __future__ import annotations

from pathlib import Path

from ..experiment import Setup
from ..history import CheckpointStore, HistoryWriter
from ..methods import Cost, TrainedState
from ..topology import dsgd_floats
from ..train.dsgd import train as train_dsgd
from . import Context, Original, remaining

LABEL = "D-SGD (train.mixing)"
TWIN = None
PARAMS = ()


def trained(setup: Setup, directory: Path, history: bool) -> tuple[TrainedState, Cost]:
    """The D-SGD run of `setup`: final checkpoint (fine-tuning starts there) and, with `history`, every round's
    gradients and graphs (PDUDT)."""
    rounds, clients = setup.cfg["train"]["rounds"], list(range(setup.cfg["clients"]))
    store = CheckpointStore(directory / "checkpoints")
    writer = (HistoryWriter(directory / "history", rounds, clients, setup.spec.dim,
                            setup.params["engine"]["history_dtype"]) if history else None)
    theta, train_log = train_dsgd(setup.model, setup.spec, setup.theta0.expand(len(clients), -1).clone(), setup.data,
                                  clients, setup.schedule(), range(rounds), setup.strategy, history=writer)
    if writer is not None:
        writer.close()
    store.save(rounds, theta, clients)
    cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0,
                dsgd_floats(setup.schedule(), clients, range(rounds), setup.spec.dim))
    return TrainedState(setup, theta, clients, rounds, directory), cost


def train(ctx: Context) -> Original:
    state, cost = trained(ctx.setup, ctx.directory("dsgd"), history=False)
    return Original(state, cost, rows=remaining(ctx.setup, state.theta, state.clients))
