"""Exact retraining: the same seed, graph sequence and data order, without the forgotten data."""

from __future__ import annotations

from ..experiment import ForgetRequest
from ..topology import dsgd_floats
from ..train.dsgd import train
from . import Cost, TrainedState, Unlearned, register


def exact(result: Unlearned, budget: dict) -> dict:
    return {"epsilon": 0.0, "basis": "exact: the same training without the forget set"}


@register("retrain", label="retrain", claim=exact)
def retrain(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    """D-SGD from theta^0 for the original's rounds, the remaining clients on their retained data; every round's
    graph edges carry the models (communication)."""
    s = state.setup
    clients = [c for c in state.clients if c not in request.removed]
    theta0 = s.theta0.expand(len(clients), -1).clone()
    rounds = range(state.rounds)
    theta, log = train(s.model, s.spec, theta0, s.data.retained(request.masks), clients, s.schedule(), rounds,
                       s.strategy)
    return Unlearned(theta, clients, Cost(log.wall_time_s, log.grad_evals, 0,
                                          dsgd_floats(s.schedule(), clients, rounds, s.spec.dim)))
