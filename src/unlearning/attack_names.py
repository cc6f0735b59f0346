"""The names and labels of the common ground's reference-model attacks, found without importing one (issue 55):
the literal arguments of each `@reference_attack("name", label="...")` in `unlearning/evaluate/attacks/*.py`
(evaluate/attacks/__init__.py). params.yaml's check reads them (torch-free, before any job); the judge imports the
configured ones (`load_reference_attack`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .method_names import registered_in

ATTACKS_DIR = Path(__file__).resolve().parent / "evaluate" / "attacks"
COLUMNS = ("auc", "tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr")  # each attack's row columns, `<name>_<column>`
READABLE = ("AUC", "TPR at 1 % FPR", "TPR at 0.1 % FPR")


@cache
def _declared() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(ATTACKS_DIR.glob("*.py")):
        for name, kw in registered_in(path, "reference_attack", ("label",)).items():
            if name in found:
                raise ValueError(f"attack {name!r}: declared in {found[name][0]} and in "
                                 f"unlearning.evaluate.attacks.{path.stem}")
            found[name] = (f"unlearning.evaluate.attacks.{path.stem}", kw.get("label", name))
    return found


def modules() -> dict[str, str]:
    """{attack name: the module that declares it}."""
    return {name: module for name, (module, _) in _declared().items()}


def label(name: str) -> str:
    return _declared()[name][1] if name in _declared() else name


def unknown(configured: list[str]) -> list[str]:
    return [a for a in configured if a not in _declared()]


def columns(name: str) -> list[str]:
    """The row columns of attack `name`: its AUC and TPRs at 1 % and 0.1 % FPR."""
    return [f"{name}_{c}" for c in COLUMNS]


def readable(name: str) -> dict[str, str]:
    """{column: display name} of attack `name`'s columns ("LiRA TPR at 1 % FPR")."""
    return {c: f"{label(name)} {r}" for c, r in zip(columns(name), READABLE)}


def readable_all() -> dict[str, str]:
    """{column: display name} of every declared attack's columns."""
    return {c: r for name in sorted(_declared()) for c, r in readable(name).items()}
