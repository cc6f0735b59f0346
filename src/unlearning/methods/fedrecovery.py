"""FedRecovery (Zhang et al., TIFS 2023), a server-based approximate unlearning baseline.

The server trains by full-participation FedAvg, w^{t+1} = w^t - eta (1/n) sum_j g^t_j with the same one-epoch
pseudo-gradients, and stores every g^t_j. Gradient-mixing D-SGD on the complete graph is exactly this, whatever
the experiment's own mixing: the weights there are all 1/n, so every client holds the global model. (Model mixing
on that graph would not be: client i would keep its own step, mean_j w_j - eta g_i.) To forget client u:

    delta^t = (eta / n) [ (1/(n-1)) sum_{j != u} g^t_j - g^t_u ]
    p^t     = || (1/n) sum_j g^t_j ||^2 / sum_{t' < t1} || (1/n) sum_j g^{t'}_j ||^2
    w^u     = w^{t1} - sum_t p^t delta^t + z,   z ~ N(0, sigma^2 I)   (one global model: no (n-1) factor)
"""

from __future__ import annotations

import dataclasses
import time

import torch

from ..experiment import ForgetRequest, Setup
from ..history import History
from ..plugins import param
from ..seeding import generator
from ..train.dsgd import Schedule, TrainLog, train
from . import Cost, TrainedState, Unlearned, register


def server_schedule(setup: Setup) -> Schedule:
    """The experiment's schedule as FedAvg: every round's graph complete (W = (1/n) 1 1^T) and the gradients mixed,
    so every client holds w^t after every round."""
    return dataclasses.replace(setup.schedule(), topology="complete", mixing="gradient")


def train_server(setup: Setup, rounds: int, history=None) -> tuple[torch.Tensor, TrainLog]:
    clients = list(range(setup.cfg["clients"]))
    theta0 = setup.theta0.expand(len(clients), -1).clone()
    return train(setup.model, setup.spec, theta0, setup.data, clients, server_schedule(setup), range(rounds),
                 setup.strategy, history=history, progress=True)


def correction(history: History, target_row: int, lr: float) -> torch.Tensor:
    """sum_t p^t delta^t from the stored gradients of every client."""
    n = len(history.meta["clients"])
    others = [r for r in range(n) if r != target_row]
    total, weight_sum = torch.zeros(history.dim), 0.0
    for t in range(len(history)):
        g = history.grads(t)
        delta = lr / n * (g[others].mean(0) - g[target_row])
        a = float((g.mean(0) ** 2).sum())
        total += a * delta
        weight_sum += a
    return total / weight_sum if weight_sum else total


def global_noise(dim: int, sigma: float, seed: int, name: str) -> torch.Tensor:
    return sigma * torch.randn(dim, generator=generator(seed, name, "fedrecovery-noise", sigma))


def sigma_only(result: Unlearned, budget: dict) -> dict:
    return {"epsilon": None, "sigma": result.certificate["sigma"],
            "basis": "its paper's sigma; the epsilon of FedRecovery's theorem needs smoothness and gradient-variance "
                     "constants the paper does not give for this model: not computed"}


@register("fedrecovery", label="FedRecovery", original="fedsgd", params={"sigma": param("number", 0.002, minimum=0)},
          does_not_apply={"sample": "FedRecovery removes one client's gradient residuals"}, claim=sigma_only)
def fedrecovery(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    """`state` is the server run (train_server); returns the single global model as one row, client -1."""
    s = state.setup
    if request.kind != "client" or len(request.removed) != 1:
        raise ValueError("FedRecovery removes one whole client: set forget.kind: client")
    start = time.perf_counter()
    history = state.history()
    target_row = history.meta["clients"].index(request.removed[0])
    global_model = state.theta.mean(0).cpu()  # the rows are w^{t1}, equal up to rounding
    theta = global_model - correction(history, target_row, s.cfg["train"]["lr"])
    theta = theta + global_noise(history.dim, params["sigma"], s.seed, s.name)
    cost = Cost(time.perf_counter() - start, grad_evals=0, bytes_read=history.bytes_read)
    cert = {"sigma": params["sigma"], "beta": s.params["privacy"]["delta"], "reference": "FedRecovery Alg. 2"}
    return Unlearned(theta.unsqueeze(0).to(s.device), [-1], cost, cert)
