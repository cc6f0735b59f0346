"""SalUn (Fan et al., ICLR 2024, "SalUn: Empowering Machine Unlearning via Gradient-based Weight Saliency"): random
labelling on the forget set beside the retained data, moving only the salient weights.

- Saliency (Eq. 5): m_S = 1[|grad_theta l_f(theta_o)| >= gamma], the gradient of the forget set's loss at the
  original model, gamma the magnitude that leaves the top `ratio` of the weights salient (the paper's default 0.5).
- Unlearning (Eqs. 6-7): theta_u = m_S * (theta_o + Delta) + (1 - m_S) * theta_o, Delta minimising the cross-entropy
  on the forget samples under random labels y' != y plus alpha = 1 times the cross-entropy on the retained data.

No certificate. Decentralized here as fine-tuning and NegGrad+ are: `rounds` more D-SGD rounds from the original's
final checkpoint (rounds numbered on from its rounds: new graphs), every client of the original taking part. The
clients holding forget data (the leaving client in the client setting, every client in the sample setting) each
compute the gradient of their forget samples' loss at their own model; its sum over them sets the mask (each
holder's d-vector reaches every other client once: (clients - 1) d floats per holder, counted), the same for every
client. In each round every client takes its local steps on its retained batch plus its forget batch under random
labels (drawn once per sample, y' uniform over the other classes; the forget batches cycle), the step masked by m_S,
and the network mixes only the salient coordinates: the others stay each client's original values (Eq. 6). The
leaving client leaves after the last round (its row is dropped). Communication: the mask's vectors, then every
edge of every round's graph carrying a model each way, as fine-tuning's.

Parameters: `rounds`, `lr` and `ratio`.

On the common ground's centralized canary task (convex and MLP; `run_central`): the mask from the canary's loss
gradient at the bench's original (Eq. 5), then `common.centralized.salun.steps` full-batch steps of size `lr` on the
canary's cross-entropy under its random label (the task has two classes: the other one) plus the retained data's
(every other point), masked (Eqs. 6-7); beside the bench's retraining without the canary. No noise: each side is one
deterministic model.
"""

from __future__ import annotations

import logging
import math
import time

import torch

from ..experiment import ForgetRequest
from ..plugins import param
from ..seeding import generator
from ..topology import dsgd_floats
from ..train.autodiff import grad
from ..train.dsgd import ClientData, make_loss, retain_forget_rounds
from ..train.flat import FlatSpec
from . import Cost, TrainedState, Unlearned, register, register_central
from .finetune import ROUNDS_AND_LR
from .neggrad_plus import CENTRAL_STEPS

log = logging.getLogger("unlearning")


def saliency_mask(scores: torch.Tensor, ratio: float) -> torch.Tensor:
    """1 on the ceil(ratio d) coordinates of largest |scores| (ties by position), 0 elsewhere (Eq. 5's gamma)."""
    k = math.ceil(ratio * scores.numel())
    order = torch.sort(scores.abs(), descending=True, stable=True).indices
    mask = torch.zeros_like(scores)
    mask[order[:k]] = 1.0
    return mask


def random_labels(y: torch.Tensor, classes: int, gen: torch.Generator) -> torch.Tensor:
    """A label y' != y per sample, uniform over the other classes."""
    shift = torch.randint(1, classes, y.shape, generator=gen)
    return (y.cpu() + shift) % classes


RATIO = {"ratio": param("number", 0.5, exclusiveMinimum=0, maximum=1)}  # the salient share of weights (the paper's)


def _ratio(params: dict) -> float:
    ratio = float(params["ratio"])
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"salun.ratio = {ratio!r}: valid: a number in (0, 1]")
    return ratio


@register("salun", label="SalUn", params={**ROUNDS_AND_LR, **RATIO})
def salun(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    s = state.setup
    ratio, lr = _ratio(params), float(params["lr"])
    start = time.perf_counter()
    store = state.checkpoints()
    theta, clients = store.load(state.rounds)
    theta = theta.to(s.device)
    loss = make_loss(s.model, s.spec)
    grad_fn = grad(loss)
    # Eq. 5: the forget loss's gradient at each holder's own model, summed over the holders
    forget_rows = {c: s.data.indices[c][s.data.keep[c] & request.masks[c]].to(s.data.x.device) for c in clients}
    holders = [c for c in clients if len(forget_rows[c])]
    scores = torch.zeros(theta.shape[1], dtype=theta.dtype, device=theta.device)
    for c in holders:
        rows = forget_rows[c]
        scores += grad_fn(theta[clients.index(c)], s.data.x[rows], s.data.y[rows],
                          torch.ones(len(rows), device=theta.device))
    mask = saliency_mask(scores, ratio)
    grad_evals = sum(len(forget_rows[c]) for c in holders)
    # Eq. 7: random labels on the forget samples, the retained data as it is
    y_random = s.data.y.clone()
    every = torch.cat([forget_rows[c] for c in holders]).sort().values
    y_random[every] = random_labels(s.data.y[every], s.classes,
                                    generator(s.seed, s.name, "salun-labels")).to(y_random)
    retain = s.data.retained(request.masks)
    forget = ClientData(s.data.x, y_random, s.data.indices, [k & f for k, f in zip(s.data.keep, request.masks)])
    sched = s.schedule(lr=lr)
    rounds = range(state.rounds, state.rounds + params["rounds"])
    theta, evals = retain_forget_rounds(s.model, s.spec, theta, retain, forget, clients, sched, rounds, s.strategy,
                                        1.0, 1.0, f"{s.name}: SalUn", f"lr = {lr:g}; valid: a smaller salun.lr",
                                        mask=mask)  # Eq. 6: only the salient coordinates step and mix
    grad_evals += evals
    kept = [i for i, c in enumerate(clients) if c not in request.removed]
    remaining = [clients[i] for i in kept]
    floats = len(holders) * (len(clients) - 1) * s.spec.dim + dsgd_floats(sched, list(clients), rounds, s.spec.dim)
    log.info("%s: SalUn mask from %d holders' forget gradients (%d of %d weights salient), rounds %d-%d over clients "
             "%s; %d remain", s.name, len(holders), int(mask.sum()), mask.numel(), rounds.start, rounds.stop - 1,
             list(clients), len(remaining))
    return Unlearned(theta[kept], remaining, Cost(time.perf_counter() - start, grad_evals, store.bytes_read, floats))


@register_central("salun", model="convex", label="SalUn", params_key="salun", params={**CENTRAL_STEPS, **RATIO})
@register_central("salun", model="mlp", label="SalUn", params_key="salun", params={**CENTRAL_STEPS, **RATIO})
def run_central(b) -> None:
    p = b.central["salun"]
    ratio, lr, steps = _ratio(p), float(p["lr"]), p["steps"]
    theta, again = b.original()
    start = time.perf_counter()
    model = b.model_fn()
    c = b.canary
    scores = grad(make_loss(model, FlatSpec.of(model)))(theta[0], b.x[c:c + 1], b.labels[c:c + 1],
                                                         torch.ones(1, device=theta.device))
    mask = saliency_mask(scores, ratio)  # Eq. 5
    label = random_labels(b.labels[c:c + 1], 2, generator(b.seed, "common", "salun-labels")).to(b.labels)
    try:
        moved = b.descend(theta, steps, lr, 1.0, 1.0, forget_label=label, mask=mask, what="SalUn")  # Eqs. 6-7
    except FloatingPointError as err:
        b.missing("salun", f"SalUn diverged: {err}; valid: a smaller salun.lr")
        return
    b.seconds["salun unlearn"] = time.perf_counter() - start
    b.deterministic("salun", "salun", moved, again, 1 + steps * b.n, steps=steps, lr=lr, ratio=ratio,
                    salient=int(mask.sum()))
