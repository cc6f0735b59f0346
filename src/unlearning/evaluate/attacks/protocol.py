"""The common ground's reference-model attacks behind one small protocol (issue 55): a module of this package
declares one with `@reference_attack(name, label=...)` on its `fit(References) -> Fitted`; attack_names.py finds the
names without importing, `load_reference_attack` imports the module that declares one. The judge
(experiments/common_ground/judge.py) runs those of `common.decentralized.attack.scores`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Callable

import numpy as np

from ...attack_names import modules


@dataclass(frozen=True)
class References:
    """What a reference-model attack is fitted on (the common ground's judge; issue 55): the references' true-label
    probabilities of the candidates (`p_ref` [k, n]) and of the population samples (`p_ref_pop` [k, m]), which
    reference trained on which (`cand_member` [k, n], None offline; `pop_member` [k, m]) and RMIA's offline
    constant `a` (None: online)."""

    p_ref: np.ndarray
    p_ref_pop: np.ndarray
    cand_member: np.ndarray | None
    pop_member: np.ndarray
    a: float | None = None


@dataclass(frozen=True)
class Fitted:
    """A reference-model attack fitted on one set of references: `score(p_cand, p_pop)` turns a target model's
    true-label probabilities of the candidates [n] and of the population [m] into n membership scores (higher =
    member); `describe` says how it ran, for the result file ("" for nothing to add)."""

    score: Callable[[np.ndarray, np.ndarray], np.ndarray]
    describe: str = ""


@dataclass(frozen=True)
class ReferenceAttack:
    name: str
    label: str
    fit: Callable[[References], Fitted]


REFERENCE_ATTACKS: dict[str, ReferenceAttack] = {}


def reference_attack(name: str, *, label: str):
    """Declare the decorated `fit(references) -> Fitted` as the reference-model attack `name` (the common ground
    reports its AUC and TPR at 1 % and 0.1 % FPR as `<name>_auc`, `<name>_tpr_at_1pct_fpr`, ...; docs/extending.md).
    The name and label must be literals: attack_names.py reads them without importing the module."""
    def wrap(fit: Callable[[References], Fitted]) -> Callable[[References], Fitted]:
        if name in REFERENCE_ATTACKS and REFERENCE_ATTACKS[name].fit.__module__ != fit.__module__:
            raise ValueError(f"attack {name!r}: registered by {REFERENCE_ATTACKS[name].fit.__module__} and by "
                             f"{fit.__module__}")
        REFERENCE_ATTACKS[name] = ReferenceAttack(name, label, fit)
        return fit

    return wrap


def load_reference_attack(name: str) -> ReferenceAttack:
    """The attack `name`, the module of this package that declares it imported (attack_names.py finds it)."""
    if name not in modules():
        raise KeyError(f"attack {name!r}: no module of unlearning.evaluate.attacks declares it; valid: "
                       f"{', '.join(sorted(modules()))}")
    import_module(modules()[name])
    return REFERENCE_ATTACKS[name]
