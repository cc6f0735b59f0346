"""Exact retraining: the same seed, graph sequence and data order, without the forgotten data."""

from __future__ import annotations

from ..experiment import ForgetRequest
from ..train.dsgd import train
from . import Cost, TrainedState, Unlearned, register


@register("retrain")
def retrain(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    s = state.setup
    clients = [c for c in state.clients if c not in request.removed]
    theta0 = s.theta0.expand(len(clients), -1).clone()
    theta, log = train(s.model, s.spec, theta0, s.data.retained(request.masks), clients, s.schedule(),
                       range(state.rounds), s.strategy)
    return Unlearned(theta, clients, Cost(log.wall_time_s, log.grad_evals))
