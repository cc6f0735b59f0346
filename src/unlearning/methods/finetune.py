"""Fine-tuning: continue decentralized training from the final checkpoint on the retained data only."""

from __future__ import annotations

import time

from ..experiment import ForgetRequest
from ..plugins import param
from ..topology import dsgd_floats
from ..train.dsgd import train
from . import Cost, TrainedState, Unlearned, register

ROUNDS_AND_LR = {"rounds": param("integer", 5, minimum=1), "lr": param("number", 0.1, exclusiveMinimum=0)}


@register("finetune", label="fine-tune", params=ROUNDS_AND_LR)
def finetune(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    """`params.rounds` more D-SGD rounds at `params.lr` from the final checkpoint, the remaining clients on their
    retained data (rounds numbered on from the original's, so the graphs are new ones)."""
    s = state.setup
    start = time.perf_counter()
    store = state.checkpoints()
    theta, trained_clients = store.load(state.rounds)
    clients = [c for c in trained_clients if c not in request.removed]
    rows = [trained_clients.index(c) for c in clients]
    theta = theta[rows].to(s.device)
    rounds = range(state.rounds, state.rounds + params["rounds"])
    theta, log = train(s.model, s.spec, theta, s.data.retained(request.masks), clients,
                       s.schedule(lr=params["lr"]), rounds, s.strategy)
    return Unlearned(theta, clients, Cost(time.perf_counter() - start, log.grad_evals, store.bytes_read,
                                          dsgd_floats(s.schedule(), clients, rounds, s.spec.dim)))
