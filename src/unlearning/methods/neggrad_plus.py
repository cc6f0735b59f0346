"""NegGrad+ (Kurmanji et al. 2023, "Towards Unbounded Machine Unlearning", the baseline beside SCRUB): descent on
the retained data and ascent on the forget set at once, each step minimising

    alpha * L(retain batch) - (1 - alpha) * L(forget batch)    (mean cross-entropies; the forget batches cycle)

No certificate. Decentralized here as fine-tuning is (finetune.py): `rounds` more D-SGD rounds from the original's
final checkpoint, numbered on from its rounds (new graphs), each client taking its local steps on that objective
with its own data and the network mixing the models as in training (`train.mixing`). Every client of the original
takes part in these rounds, the holders of forget data included: in the client setting the leaving client holds
the whole forget set, so its steps are ascent only and reach the others through the mixing, and it leaves after the
last round (its row is dropped); in the sample setting every client descends on its kept data and ascends on its
forgotten samples. Communication: every edge of every round's graph carries a model each way, as fine-tuning's.

Parameters: `rounds`, `lr` and `alpha`. Kurmanji et al. tune alpha per task; the default of params.yaml (0.95) is
this pipeline's choice, not a value from the paper.
"""

from __future__ import annotations

import logging
import time

import torch
from torch.func import grad, vmap

from ..experiment import ForgetRequest
from ..topology import dsgd_floats, graph_for_round, metropolis_hastings
from ..train.dsgd import ClientData, Diverged, make_loss, mix, round_batches, step_gradients
from . import Cost, TrainedState, Unlearned, register

log = logging.getLogger("unlearning")


@register("neggrad_plus", label="NegGrad+")
def neggrad_plus(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    s = state.setup
    alpha, lr = float(params["alpha"]), float(params["lr"])
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"neggrad_plus.alpha = {alpha!r}: valid: a number in [0, 1]")
    start = time.perf_counter()
    store = state.checkpoints()
    theta, clients = store.load(state.rounds)
    theta = theta.to(s.device)
    masks = [request.masks[c] for c in clients]
    retain = s.data.retained(request.masks)
    forget = ClientData(s.data.x, s.data.y, s.data.indices, [k & f for k, f in zip(s.data.keep, request.masks)])
    sched = s.schedule(lr=lr)
    grad_fn = grad(make_loss(s.model, s.spec))
    batched = vmap(grad_fn) if s.strategy == "vmap" else None
    rounds = range(state.rounds, state.rounds + params["rounds"])
    grad_evals = 0
    for t in rounds:
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        w = metropolis_hastings(graph, nodes=clients).to(theta)
        idx_r, w_r = round_batches(retain, clients, sched, t)
        idx_f, w_f = round_batches(forget, clients, sched, t)
        steps = max(idx_r.shape[1], 1 if idx_f.shape[1] else 0)
        phi, pseudo = theta, torch.zeros_like(theta)
        for step in range(steps):
            g = torch.zeros_like(theta)
            if step < idx_r.shape[1]:
                g += alpha * step_gradients(phi, retain, idx_r, w_r, step, grad_fn, batched)
                grad_evals += int(w_r[:, step].sum())
            if idx_f.shape[1]:  # the forget batches cycle, as in Kurmanji et al.'s loop
                f = step % idx_f.shape[1]
                g -= (1.0 - alpha) * step_gradients(phi, forget, idx_f, w_f, f, grad_fn, batched)
                grad_evals += int(w_f[:, f].sum())
            pseudo += g
            if step + 1 < steps:
                phi = phi - lr * g
        theta = mix(theta, pseudo, w, lr, sched.mixing)
        if not bool(torch.isfinite(theta).all()):
            raise Diverged(f"{s.name}: NegGrad+ diverged in round {t} (counting from 0); lr = {lr:g}, alpha = "
                           f"{alpha:g}; valid: a smaller neggrad_plus.lr or a larger alpha")
    kept = [i for i, c in enumerate(clients) if c not in request.removed]
    remaining = [clients[i] for i in kept]
    floats = dsgd_floats(sched, list(clients), rounds, s.spec.dim)
    cost = Cost(time.perf_counter() - start, grad_evals, store.bytes_read, floats)
    log.info("%s: NegGrad+ rounds %d-%d over clients %s (forget samples each: %s), alpha %g; %d remain", s.name,
             rounds.start, rounds.stop - 1, list(clients), [int(m.sum()) for m in masks], alpha, len(remaining))
    return Unlearned(theta[kept], remaining, cost)
