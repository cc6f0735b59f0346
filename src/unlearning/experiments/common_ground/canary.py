"""The canary audit of the decentralized settings (issue 56, item 3): one training run per seed audits a method's
(epsilon, delta) claim, with the one-run method of Steinke, Nasr and Jagielski (2023; privacy/one_run.py).

- Canaries: `canaries` samples of the setting's forget set (seeded), each *included* with probability 1/2: an
  included canary is trained with a wrong label (its own plus a uniform 1..C-1, mod C), an excluded one with its own.
  Every canary stays in the forget set, so retraining (on the data without it) does not depend on which were
  included.
- The method's original (its training family) is trained on these data and the method removes the forget set, as on
  the common ground. A canary's score: log p(wrong label | x) under one released model, the first remaining
  client's (a certificate, and the exact-epsilon column, speak of one model: a score averaging the remaining
  clients' models reads their joint release, which a per-model claim does not cover; issue 68). The auditor guesses
  "included" for the `guesses` highest scores of each seed and "excluded" for the `guesses` lowest, and abstains on
  the rest. The seeds are one mechanism over all their canaries (independent runs, independent inclusions), so their
  guesses are pooled: v correct of r.
- What a per-canary bound can refute: a certificate (epsilon, delta) for removing the whole forget set makes the
  unlearned model (epsilon, delta)-close to retraining, which does not depend on the inclusions; through retraining
  (the triangle), the unlearned model is (2 epsilon, (1 + e^epsilon) delta)-DP in the inclusion vector, hence in each
  canary. The bound at delta' = (1 + e^epsilon) delta is compared with 2 epsilon: above it, "violated". The result
  keeps the pooled counts; the report bounds them at its level, corrected over the canary rows (report.py).
- Controls, each against the same 2 epsilon: the same canaries scored on the original's first remaining client
  (nothing removed), which carries the included canaries' wrong labels; and a positive control near twice what can
  be refuted, randomized response on the same inclusions at 4 epsilon (each bit released as it is with probability
  e^(4 epsilon) / (1 + e^(4 epsilon)): exactly 4 epsilon-DP in each canary, the mechanism `one_run.power` reads),
  guessed and pooled as the method is. It is a synthetic release, not a trained model: it shows that the design, as
  run, faults a mechanism at twice the refutable epsilon. An audit that faults neither has no power here: the
  method's row then says "uninformative".
"""

from __future__ import annotations

import logging
import math
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from ... import families
from ...evaluate.forward import logits_in_batches
from ...experiment import Setup
from ...families import FAMILIES
from ...files import write_json
from ...methods import MethodInfo
from ...privacy import one_run
from ...resolved import config_record
from ...seeding import generator
from ...train.dsgd import ClientData
from . import config
from . import decentralized as dec

log = logging.getLogger("unlearning")


def draw(setup: Setup, count: int, seed: int) -> dict[str, torch.Tensor]:
    """`count` forget-set samples (global indices), which of them are included (Bernoulli 1/2) and their wrong
    labels; fewer where the forget set is smaller."""
    forget = setup.request.samples(setup.data.indices).cpu()
    gen = generator(seed, setup.name, "canaries")
    idx = forget[torch.randperm(len(forget), generator=gen)[:count]].sort().values
    included = torch.rand(len(idx), generator=gen) < 0.5
    shift = torch.randint(1, setup.classes, (len(idx),), generator=gen)
    wrong = (setup.data.y.cpu()[idx] + shift) % setup.classes
    return {"index": idx, "included": included, "wrong": wrong}


def with_canaries(setup: Setup, canaries: dict[str, torch.Tensor]) -> Setup:
    """The setup whose included canaries carry their wrong labels (the excluded keep their own)."""
    y = setup.data.y.clone()
    inc = canaries["index"][canaries["included"]].to(y.device)
    y[inc] = canaries["wrong"][canaries["included"]].to(y.device)
    d = setup.data
    return replace(setup, data=ClientData(d.x, y, d.indices, d.keep))


def scores(setup: Setup, rows: torch.Tensor | None, predict: list | None, canaries: dict) -> np.ndarray:
    """Each canary's log-probability of its wrong label under the first remaining client's model (the first row, or
    prediction function), in float64 from its logits."""
    x = setup.data.x[canaries["index"].to(setup.data.x.device)]
    z = predict[0](x) if predict is not None else torch.cat(list(logits_in_batches(setup, rows[0], x)))
    return z.double().cpu().log_softmax(1).gather(1, canaries["wrong"].long()[:, None])[:, 0].numpy()


def randomized_response(included: np.ndarray, epsilon: float, gen: torch.Generator) -> np.ndarray:
    """The inclusion bits, each released as it is with probability e^epsilon / (1 + e^epsilon) and flipped otherwise
    (exactly epsilon-DP in each canary), as scores."""
    keep = torch.rand(len(included), generator=gen, dtype=torch.float64).numpy() < 1 / (1 + math.exp(-epsilon))
    return np.where(keep, included, ~included).astype(np.float64)


def guesses(score: np.ndarray, included: np.ndarray, k: int) -> tuple[int, int]:
    """(r, v): the k highest scores guessed included and the k lowest excluded (ties broken by index), and how many
    guesses were right."""
    k = min(k, len(score) // 2)
    order = np.argsort(-score, kind="stable")
    top, bottom = order[:k], order[len(order) - k:]
    return 2 * k, int(included[top].sum() + (~included[bottom]).sum())


def canary_audit(params: dict, setting: str, info: MethodInfo, features: str) -> dict:
    """The method's canary audit over the setting's seeds, with its control (module docstring)."""
    cfg, budget = config(params)["decentralized"], config(params)["budget"]
    c = cfg["canary"]
    if FAMILIES[info.original].twin is not None:  # before any training
        raise ValueError(f"canary audit: {info.name}'s original {info.original!r} trains a twin setup, which the "
                         "canaries do not reach; valid: a method whose family trains the setting itself")
    pooled = {"method": [0, 0, 0], "original": [0, 0, 0], "control_2x": [0, 0, 0]}  # m, r, v
    seeds, claim = {}, None
    for seed in cfg["seeds"]:
        setup = dec.make_setup(params, setting, seed, features)
        canaries = draw(setup, c["canaries"], seed)
        canaried = with_canaries(setup, canaries)
        with tempfile.TemporaryDirectory(prefix="common-canary-") as tmp:
            ctx = families.Context(canaried, lambda: None, Path(tmp))  # no twin: checked above
            orig = families.train(info.original, ctx)
            mcfg = dec.method_config(canaried.cfg, budget, info)
            res = info(orig.state, canaried.request, mcfg)
        claim = info.claim(res, budget)
        included = canaries["included"].numpy()
        row = {"canaries": len(included), "included": int(included.sum())}
        sides = {"method": scores(canaried, res.theta, res.predict, canaries),
                 "original": scores(canaried, orig.rows, orig.predict, canaries)}
        if claim.get("epsilon") is not None:  # the positive control at twice the refutable 2 epsilon
            sides["control_2x"] = randomized_response(included, 4 * claim["epsilon"],
                                                      generator(seed, setup.name, "canary-control-2x"))
        for side, score in sides.items():
            r, v = guesses(score, included, c["guesses"])
            row[side] = {"guesses": r, "correct": v}
            for i, n in enumerate((len(included), r, v)):
                pooled[side][i] += n
        seeds[str(seed)] = row
        log.info("%s seed %d, %s canary audit: %s", setting, seed, info.name, row)
    eps, delta = claim.get("epsilon"), budget["delta"]
    out = {"method": info.name, "label": info.label, "claimed": claim, "seeds": seeds,
           "guesses_per_side": c["guesses"], "confidence": c["confidence"], "models_read": 1}
    if eps is None:
        return {**out, "status": "no epsilon claimed: nothing to audit"}
    (m, r, v), (_, _, v_control), (_, _, v_2x) = pooled["method"], pooled["original"], pooled["control_2x"]
    delta_null = min(1.0, (1 + math.exp(eps)) * delta)
    log.info("%s canary audit of %s: %d of %d guesses right (its original: %d); epsilon >= %.3g at %g", setting,
             info.name, v, r, v_control, one_run.epsilon_lower_bound(m, r, v, delta_null, c["confidence"]),
             c["confidence"])
    return {**out, "canaries": m, "guesses": r, "correct": v, "control_correct": v_control,
            "refutable_epsilon": 2 * eps, "delta_null": delta_null,
            "control_2x": {"epsilon": 4 * eps, "mechanism": "randomized response on the inclusions", "correct": v_2x}}


def step_canary(params: dict, setting: str, method: str, features: str, out: str) -> None:
    """The canary audit of `method`, a method of the setting that takes the common budget (its claim is at it)."""
    info = dec.configured_methods(params, setting, [method])[method]
    if not info.takes_budget:
        raise KeyError(f"common-canary: {method!r} does not take the common budget (its @register has no "
                       "takes_budget=True): no claim at the budget to audit; valid: "
                       + ", ".join(m for m, i in dec.configured_methods(params, setting).items() if i.takes_budget))
    write_json(out, {"setting": setting, "scale": params["scale"], **canary_audit(params, setting, info, features),
                     "config": config_record(params)})
