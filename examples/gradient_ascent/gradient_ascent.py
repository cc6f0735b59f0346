"""Gradient ascent on the forget set ("NegGrad": Golatkar et al. 2020, the baseline of Thudi et al. 2022 and of
Kurmanji et al. 2023), as a method from an outside package: docs/extending.md's worked example.

Decentralized as fine-tuning is: `rounds` more D-SGD rounds from the original's final checkpoint, numbered on from
its rounds, every client of the original taking part. A client's local steps ascend the mean cross-entropy of its own
forget samples, one epoch of its forget minibatches a round; a client without forget samples takes no local step
and only mixes. In the client setting the leaving client ascends on its whole data, the ascent reaching the others
through the mixing, and it leaves after the last round (its row is dropped). No certificate. Communication: every
edge of every round's graph carries a model each way, as fine-tuning's.

Parameters (params.yaml `common.decentralized.gradient_ascent`, declared below and checked before any job): `rounds`
and `lr`.
"""

from __future__ import annotations

import time

import torch

from unlearning.methods import Cost, Unlearned, register
from unlearning.plugins import param
from unlearning.topology import dsgd_floats
from unlearning.train.dsgd import ClientData, retain_forget_rounds


@register("gradient_ascent", label="gradient ascent (example package)",
          params={"rounds": param("integer", 2, minimum=1), "lr": param("number", 0.1, exclusiveMinimum=0)})
def gradient_ascent(state, request, params):
    s = state.setup
    lr = float(params["lr"])
    start = time.perf_counter()
    store = state.checkpoints()
    theta, clients = store.load(state.rounds)
    forget = ClientData(s.data.x, s.data.y, s.data.indices, [k & f for k, f in zip(s.data.keep, request.masks)])
    nothing = ClientData(s.data.x, s.data.y, s.data.indices, [torch.zeros_like(k) for k in s.data.keep])
    sched = s.schedule(lr=lr)
    rounds = range(state.rounds, state.rounds + params["rounds"])
    # the forget samples in the first (weighted) role, weight -1: ascent; nothing in the second
    theta, grad_evals = retain_forget_rounds(
        s.model, s.spec, theta.to(s.device), forget, nothing, clients, sched, rounds, s.strategy, -1.0, 0.0,
        f"{s.name}: gradient ascent", f"lr = {lr:g}; valid: a smaller gradient_ascent.lr or fewer rounds")
    kept = [i for i, c in enumerate(clients) if c not in request.removed]
    cost = Cost(time.perf_counter() - start, grad_evals, store.bytes_read,
                dsgd_floats(sched, list(clients), rounds, s.spec.dim))
    return Unlearned(theta[kept], [clients[i] for i in kept], cost)
