"""The trained states the common ground's methods start from (issue 55): one training family each, named by the
methods' `original` (methods/__init__.py). Each family trains once per (setting, seed) job, whatever number of its
methods run, and hands them a TrainedState; what it trained is judged as the `originals` row of its name.

- dsgd: D-SGD of `train.mixing` (model mixing), its final checkpoint stored (fine-tuning, DU, retraining);
- eq2: the same task by PDUDT's Eq. 2 (gradient mixing), every round's gradients stored (PDUDT's replay);
- fedsgd: full-participation FedSGD (every round's graph complete, Eq. 2), every client's g^t stored (FedRecovery);
- fats: FedAvg over `fats.clients_per_round` sampled clients, its rollback store (FATS-Unl);
- hdus: HDUS' main and seed models (each client's ensemble before unlearning is judged);
- walk: a token walking the same shards with Adam (RR-DU's Algorithm 2, `rrdu.train`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ...experiment import Setup
from ...history import CheckpointStore, HistoryWriter
from ...methods import Cost, TrainedState
from ...seeding import derive_seed
from ...topology import dsgd_floats
from ...train.dsgd import train


@dataclass
class Original:
    state: TrainedState
    cost: Cost
    predict: list | None = None  # per remaining client, x -> probabilities, where the models are not rows of theta
    rows: torch.Tensor | None = None  # else: the models judged (stacked flat rows of the remaining clients)


@dataclass
class Context:
    """What a family's training reads: the setting's setup (and its Eq. 2 twin), the job's scratch folder."""

    setup: Setup
    gradient_setup: Callable[[], Setup]  # the same task with train.mixing = gradient
    root: Path

    @property
    def cfg(self) -> dict:
        return self.setup.cfg


def _remaining(setup: Setup, theta: torch.Tensor, clients: list[int]) -> torch.Tensor:
    return theta[[i for i, c in enumerate(clients) if c not in set(setup.request.removed)]]


def trained_dsgd(setup: Setup, directory: Path, history: bool) -> tuple[TrainedState, Cost]:
    """The D-SGD run of `setup`: final checkpoint (fine-tuning starts there) and, with `history`, every round's
    gradients and graphs (PDUDT)."""
    rounds, clients = setup.cfg["train"]["rounds"], list(range(setup.cfg["clients"]))
    store = CheckpointStore(directory / "checkpoints")
    writer = (HistoryWriter(directory / "history", rounds, clients, setup.spec.dim,
                            setup.params["engine"]["history_dtype"]) if history else None)
    theta, train_log = train(setup.model, setup.spec, setup.theta0.expand(len(clients), -1).clone(), setup.data,
                             clients, setup.schedule(), range(rounds), setup.strategy, history=writer)
    if writer is not None:
        writer.close()
    store.save(rounds, theta, clients)
    cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0,
                dsgd_floats(setup.schedule(), clients, range(rounds), setup.spec.dim))
    return TrainedState(setup, theta, clients, rounds, directory), cost


def dsgd(ctx: Context) -> Original:
    state, cost = trained_dsgd(ctx.setup, ctx.root / "dsgd", history=False)
    return Original(state, cost, rows=_remaining(ctx.setup, state.theta, state.clients))


def eq2(ctx: Context) -> Original:
    setup = ctx.gradient_setup()
    state, cost = trained_dsgd(setup, ctx.root / "eq2", history=True)
    return Original(state, cost, rows=_remaining(setup, state.theta, state.clients))


def fedsgd(ctx: Context) -> Original:
    from ...methods.fedrecovery import train_server

    setup = ctx.gradient_setup()
    n, rounds = ctx.cfg["clients"], ctx.cfg["train"]["rounds"]
    writer = HistoryWriter(ctx.root / "fedsgd" / "history", rounds, list(range(n)), setup.spec.dim,
                           setup.params["engine"]["history_dtype"])
    theta, train_log = train_server(setup, rounds, writer)
    writer.close()
    cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0, 2 * rounds * n * setup.spec.dim)
    return Original(TrainedState(setup, theta, list(range(n)), rounds, ctx.root / "fedsgd"), cost, rows=theta[:1])


def fats(ctx: Context) -> Original:
    from ...methods.fats import train_fats

    setup, k, rounds = ctx.setup, ctx.cfg["fats"]["clients_per_round"], ctx.cfg["train"]["rounds"]
    (ctx.root / "fats" / "history").mkdir(parents=True)
    start = time.perf_counter()
    w, grads = train_fats(setup, ctx.root / "fats" / "history", k)
    cost = Cost(time.perf_counter() - start, grads, 0, 2 * rounds * k * setup.spec.dim)
    return Original(TrainedState(setup, w[None], [-1], rounds, ctx.root / "fats"), cost, rows=w[None])


def hdus(ctx: Context) -> Original:
    from ...methods import hdus as h

    setup = ctx.setup
    (ctx.root / "hdus").mkdir()
    start = time.perf_counter()
    _, grads = h.train_hdus(setup, ctx.root / "hdus", ctx.cfg["hdus"]["public_fraction"])
    trained_s = time.perf_counter() - start
    # before unlearning: every remaining client's ensemble with every seed it holds, weights fitted alike
    before, _, _ = h.unlearn(setup, ctx.root / "hdus", ctx.cfg["hdus"]["refit_lr"], removed=())
    kept = {c: e for c, e in before.items() if c not in setup.request.removed}
    state = TrainedState(setup, torch.zeros(0), list(range(ctx.cfg["clients"])), ctx.cfg["train"]["rounds"],
                         ctx.root / "hdus")
    return Original(state, Cost(trained_s, grads), predict=h.predictors(setup, kept))


def walk(ctx: Context) -> Original:
    """A token trained by `rrdu.train.hops` hops of Algorithm 2 from theta^0 (Adam) on the setting's shards."""
    from ...train.optim import LocalOptimizer
    from ...train.random_walk import Streams, TensorClient, Token, uniform_neighbour
    from ...train.random_walk import walk as run_walk

    setup, r = ctx.setup, ctx.cfg["rrdu"]
    clients = [TensorClient(setup.data.x[idx.to(setup.data.x.device)].cpu(),
                            setup.data.y[idx.to(setup.data.x.device)].cpu()) for idx in setup.data.indices]
    token = Token(copy.deepcopy(setup.model).cpu(), r["train"]["lr"], LocalOptimizer("adam"))
    token.set_theta(setup.theta0.cpu())  # the same theta^0 as every other training run
    batch = ctx.cfg["train"]["batch_size"]
    torch.manual_seed(derive_seed(setup.seed, setup.name, "rrdu-torch"))
    start = time.perf_counter()
    run_walk(token, clients, r["train"]["hops"], uniform_neighbour(len(clients)),
             Streams.from_seed(derive_seed(setup.seed, setup.name, "rrdu-train")), batch, r["train"]["epochs"])
    cost = Cost(time.perf_counter() - start, token.examples, 0, r["train"]["hops"] * token.dim)
    theta = token.theta()
    state = TrainedState(setup, theta[None], [-1], r["train"]["hops"], ctx.root / "walk",
                         extra={"token": token, "clients": clients, "batch_size": batch})
    return Original(state, cost, rows=theta[None].to(setup.device))


# family -> (what the report calls it, its training); the order is the job's
FAMILIES: dict[str, tuple[str, Callable[[Context], Original]]] = {
    "dsgd": ("D-SGD (train.mixing)", dsgd),
    "eq2": ("D-SGD by PDUDT's Eq. 2 (gradient mixing)", eq2),
    "fedsgd": ("FedSGD, every client every round (FedRecovery)", fedsgd),
    "fats": ("FedAvg over sampled clients (FATS)", fats),
    "hdus": ("HDUS main and seed models", hdus),
    "walk": ("a token walking the clients with Adam (RR-DU's Algorithm 2)", walk),
}
