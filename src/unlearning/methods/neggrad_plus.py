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

On the common ground's centralized canary task (convex and MLP; `run_central`): from the bench's original,
`common.centralized.neggrad_plus.steps` full-batch steps of size `lr` on the same objective, the canary being the
forget set and D' (every other point) the retained data; beside the bench's retraining without the canary. No noise:
each side is one deterministic model.
"""

from __future__ import annotations

import logging
import time

from ..experiment import ForgetRequest
from ..plugins import param
from ..topology import dsgd_floats
from ..train.dsgd import ClientData, retain_forget_rounds
from . import Cost, TrainedState, Unlearned, register, register_central
from .finetune import ROUNDS_AND_LR

log = logging.getLogger("unlearning")


ALPHA = {"alpha": param("number", 0.95, minimum=0, maximum=1)}  # the retained term's weight (this pipeline's choice)
CENTRAL_STEPS = {"steps": param("integer", 50, minimum=1), "lr": param("number", 1.0, exclusiveMinimum=0)}


def _alpha(params: dict) -> float:
    alpha = float(params["alpha"])
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"neggrad_plus.alpha = {alpha!r}: valid: a number in [0, 1]")
    return alpha


@register("neggrad_plus", label="NegGrad+", params={**ROUNDS_AND_LR, **ALPHA})
def neggrad_plus(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    s = state.setup
    alpha, lr = _alpha(params), float(params["lr"])
    start = time.perf_counter()
    store = state.checkpoints()
    theta, clients = store.load(state.rounds)
    theta = theta.to(s.device)
    masks = [request.masks[c] for c in clients]
    retain = s.data.retained(request.masks)
    forget = ClientData(s.data.x, s.data.y, s.data.indices, [k & f for k, f in zip(s.data.keep, request.masks)])
    sched = s.schedule(lr=lr)
    rounds = range(state.rounds, state.rounds + params["rounds"])
    theta, grad_evals = retain_forget_rounds(
        s.model, s.spec, theta, retain, forget, clients, sched, rounds, s.strategy, alpha, -(1.0 - alpha),
        f"{s.name}: NegGrad+", f"lr = {lr:g}, alpha = {alpha:g}; valid: a smaller neggrad_plus.lr or a larger alpha")
    kept = [i for i, c in enumerate(clients) if c not in request.removed]
    remaining = [clients[i] for i in kept]
    floats = dsgd_floats(sched, list(clients), rounds, s.spec.dim)
    cost = Cost(time.perf_counter() - start, grad_evals, store.bytes_read, floats)
    log.info("%s: NegGrad+ rounds %d-%d over clients %s (forget samples each: %s), alpha %g; %d remain", s.name,
             rounds.start, rounds.stop - 1, list(clients), [int(m.sum()) for m in masks], alpha, len(remaining))
    return Unlearned(theta[kept], remaining, cost)


@register_central("neggrad_plus", model="convex", label="NegGrad+", params_key="neggrad_plus",
                  params={**CENTRAL_STEPS, **ALPHA})
@register_central("neggrad_plus", model="mlp", label="NegGrad+", params_key="neggrad_plus",
                  params={**CENTRAL_STEPS, **ALPHA})
def run_central(b) -> None:
    p = b.central["neggrad_plus"]
    alpha, lr, steps = _alpha(p), float(p["lr"]), p["steps"]
    theta, again = b.original()
    start = time.perf_counter()
    try:
        moved = b.descend(theta, steps, lr, alpha, -(1.0 - alpha), what="NegGrad+")
    except FloatingPointError as err:
        b.missing("neggrad_plus", f"NegGrad+ diverged: {err}; valid: a smaller neggrad_plus.lr or a larger alpha")
        return
    b.seconds["neggrad_plus unlearn"] = time.perf_counter() - start
    b.deterministic("neggrad_plus", "neggrad_plus", moved, again, steps * b.n, steps=steps, lr=lr, alpha=alpha)
