"""A token trained by `rrdu.train.hops` hops of RR-DU's Algorithm 2 from theta^0 (Adam) on the setting's shards:
RR-DU's Algorithm 4 continues from the token (its model and Adam state, `TrainedState.extra`)."""

from __future__ import annotations

import copy
import time

import torch

from ..methods import Cost, TrainedState
from ..seeding import derive_seed
from ..train.optim import LocalOptimizer, OptState
from ..train.random_walk import Streams, TensorClient, Token, uniform_neighbour
from ..train.random_walk import walk as run_walk
from . import Context, Original

LABEL = "a token walking the clients with Adam (RR-DU's Algorithm 2)"
TWIN = None
PARAMS = ("rrdu.train",)


def _clients(setup) -> list[TensorClient]:
    return [TensorClient(setup.data.x[idx.to(setup.data.x.device)].cpu(),
                         setup.data.y[idx.to(setup.data.x.device)].cpu()) for idx in setup.data.indices]


def _token(setup) -> Token:
    """On the setting's device (the clients' data and the walk's streams stay on the CPU; random_walk.Token)."""
    token = Token(copy.deepcopy(setup.model), setup.cfg["rrdu"]["train"]["lr"], LocalOptimizer("adam"))
    token.set_theta(setup.theta0)  # the same theta^0 as every other training run
    return token


def train(ctx: Context) -> Original:
    setup, r = ctx.setup, ctx.cfg["rrdu"]
    clients, token = _clients(setup), _token(setup)
    batch = ctx.cfg["train"]["batch_size"]
    torch.manual_seed(derive_seed(setup.seed, setup.name, "rrdu-torch"))
    start = time.perf_counter()
    run_walk(token, clients, r["train"]["hops"], uniform_neighbour(len(clients)),
             Streams.from_seed(derive_seed(setup.seed, setup.name, "rrdu-train")), batch, r["train"]["epochs"])
    cost = Cost(time.perf_counter() - start, token.examples, 0, r["train"]["hops"] * token.dim)
    theta = token.theta()
    state = TrainedState(setup, theta[None], [-1], r["train"]["hops"], ctx.directory("walk"),
                         extra={"token": token, "clients": clients, "batch_size": batch})
    return Original(state, cost, rows=theta[None].to(setup.device))


def extra(state: TrainedState) -> dict[str, torch.Tensor]:
    """The token's optimizer state and buffers (its parameters are the state's theta)."""
    token = state.extra["token"]
    opt = {k: v for k, v in vars(token.state).items() if isinstance(v, torch.Tensor)}
    return {**{f"opt.{k}": v for k, v in opt.items()},
            **{f"buffer.{k}": v for k, v in token.model.named_buffers()}}


def restore(state: TrainedState, tensors: dict[str, torch.Tensor]) -> dict:
    setup = state.setup
    token = _token(setup)
    token.set_theta(state.theta[0])
    token.state = OptState(**{k[4:]: v.to(token.device) for k, v in tensors.items() if k.startswith("opt.")})
    buffers = dict(token.model.named_buffers())
    for k, v in tensors.items():
        if k.startswith("buffer."):
            buffers[k[7:]].copy_(v)
    return {"token": token, "clients": _clients(setup), "batch_size": setup.cfg["train"]["batch_size"]}
