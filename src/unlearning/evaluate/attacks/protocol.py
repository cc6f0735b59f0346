"""The common ground's reference-model attacks behind one small protocol (issue 55): a module of this package
declares one with `@reference_attack(name, label=...)` on its `fit(References) -> Fitted`; `REFERENCE_ATTACKS` holds
them (reading it imports every module of this package and the entry points: plugins.py). The judge
(experiments/common_ground/judge.py) runs those of `common.decentralized.attack.scores`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...plugins import Registry

COLUMNS = ("auc", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr")  # each attack's row columns, `<name>_<column>`
READABLE = ("AUC", "TPR at 1 % FPR", "TPR at 0.1 % FPR")


@dataclass(frozen=True)
class References:
    """What a reference-model attack is fitted on (the common ground's judge; issue 55): the references' true-label
    log-odds of the candidates (`phi_ref` [k, n]) and of the population samples (`phi_ref_pop` [k, m]), which
    reference trained on which (`cand_member` [k, n], None offline; `pop_member` [k, m]) and RMIA's offline
    constant `a` (None: online). A true-label log-odds is phi = z_y - logsumexp of the other logits, in float64
    from the logits (`log_odds`): the probability is expit(phi), exactly, and no softmax saturates it."""

    phi_ref: np.ndarray
    phi_ref_pop: np.ndarray
    cand_member: np.ndarray | None
    pop_member: np.ndarray
    a: float | None = None


@dataclass(frozen=True)
class Fitted:
    """A reference-model attack fitted on one set of references: `score(phi_cand, phi_pop)` turns a target model's
    true-label log-odds of the candidates [n] and of the population [m] into n membership scores (higher =
    member); `describe` says how it ran, for the result file ("" for nothing to add)."""

    score: Callable[[np.ndarray, np.ndarray], np.ndarray]
    describe: str = ""


@dataclass(frozen=True)
class ReferenceAttack:
    name: str
    label: str
    fit: Callable[[References], Fitted]
    module: str


def log_odds(logits, labels) -> np.ndarray:
    """Each row's true-label log-odds from its logits ([n, classes], any float type; labels [n]), in float64:
    z_y - logsumexp of the other classes' logits (their max subtracted first, so nothing overflows)."""
    z = np.asarray(logits, np.float64)
    rows, y = np.arange(len(z)), np.asarray(labels).astype(np.int64)
    others = z.copy()
    others[rows, y] = -np.inf
    top = others.max(1)
    return z[rows, y] - (top + np.log(np.exp(others - top[:, None]).sum(1)))


REFERENCE_ATTACKS = Registry("attack", "unlearning.evaluate.attacks")


def reference_attack(name: str, *, label: str):
    """Declare the decorated `fit(references) -> Fitted` as the reference-model attack `name` (the common ground
    reports its AUC and TPR at 1 % and 0.1 % FPR as `<name>_auc`, `<name>_tpr_at_1pct_fpr`, ...; docs/extending.md)."""
    def wrap(fit: Callable[[References], Fitted]) -> Callable[[References], Fitted]:
        REFERENCE_ATTACKS.add(name, ReferenceAttack(name, label, fit, fit.__module__))
        return fit

    return wrap


def label(name: str) -> str:
    return REFERENCE_ATTACKS[name].label if name in REFERENCE_ATTACKS else name


def columns(name: str) -> list[str]:
    """The row columns of attack `name`: its AUC and TPRs at 1 % and 0.1 % FPR."""
    return [f"{name}_{c}" for c in COLUMNS]


def readable(name: str) -> dict[str, str]:
    """{column: display name} of attack `name`'s columns ("LiRA TPR at 1 % FPR")."""
    return {c: f"{label(name)} {r}" for c, r in zip(columns(name), READABLE)}
