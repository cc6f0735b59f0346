"""A paper's claim, judged: preconditions, then a test, then one verdict. Shared by every paper's report.

Verdicts (DESIGN.md, "Verdicts"):
- `holds` / `fails`: the test ran and could have come out either way;
- `not testable`: a precondition is unmet (the original did not carry what is removed, the attack has no signal,
  a model is near one-class, the metric is at chance); the reason names it, with its number;
- `uninformative`: the test cannot fail in this setting (every point of a trend pinned at a floor, a comparison
  whose loser is near one-class or at chance, ...); the reason says why.

Headlines count the informative verdicts (holds, fails) only and list the rest beside them (`headline`). A row that
shows a precondition itself (`precondition`) is not a claim of the paper and is never counted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

HOLDS, FAILS, NOT_TESTABLE, UNINFORMATIVE = "holds", "fails", "not testable", "uninformative"
KINDS = (HOLDS, FAILS, NOT_TESTABLE, UNINFORMATIVE)
INFORMATIVE = (HOLDS, FAILS)
COLUMNS = ["subject", "claim", "measured", "status", "reason", "margin", "source"]


@dataclass(frozen=True)
class Check:
    """A precondition's outcome and what it measured, in words with the numbers."""

    ok: bool
    what: str


def carried(original: float, reference: float, margin: float, what: str, unit: str = "") -> Check:
    """The original carried what is removed: its metric on the forget set exceeds the retrained (or clean)
    reference's by more than `margin`."""
    gap = original - reference
    return Check(gap > margin, f"{what}: original {original:.4g}{unit} against {reference:.4g}{unit} "
                               f"(gap {gap:.4g}{unit}, needs > {margin:g}{unit})")


def carried_paired(gaps: list[float], margin: float, what: str, alpha: float = 0.05,
                   se: float | None = None) -> Check:
    """The original carried what is removed, paired over seeds: `gaps` holds each seed's original-minus-reference
    effect (signed so that carrying is positive). The mean gap must exceed `margin`, and with two or more seeds a
    one-sided paired t-test must reject "no effect" at `alpha`; one seed gives no test: its gap must exceed the
    margin and, where its sampling standard error `se` is known (binomial, on the samples measured), twice it."""
    mean = statistics.fmean(gaps)
    text = f"{what}: mean gap {mean:.4g} over {len(gaps)} seed{'s' * (len(gaps) > 1)}"
    if len(gaps) < 2:
        if se is None:
            return Check(mean > margin, f"{text} (one seed: no paired test; needs > {margin:g})")
        return Check(mean > max(margin, 2 * se), f"{text} (one seed: no paired test; needs > {margin:.4g} and > "
                                                 f"twice its sampling standard error, {2 * se:.4g})")
    from scipy import stats  # here: scipy.stats is a second of the start of every job that reads a verdict word

    p = float(stats.ttest_1samp(gaps, 0.0, alternative="greater").pvalue) if statistics.stdev(gaps) > 0 else (
        0.0 if mean > 0 else 1.0)
    return Check(mean > margin and p < alpha, f"{text} (per seed {min(gaps):.4g} to {max(gaps):.4g}, paired "
                                              f"t-test p = {p:.2g}; needs > {margin:g} and p < {alpha:g})")


def precondition(check: Check | None, absent: str) -> tuple[str, str]:
    """A precondition's own row: "precondition met" or "precondition not shown" (its check was not cleared, which
    does not show the opposite either), with its numbers; "precondition not computed" (`absent`: why) without a
    check. Not a claim: `counts`, `headline` and the front page's counts pass over it."""
    if check is None:
        return "precondition not computed", absent
    return ("precondition met" if check.ok else "precondition not shown"), check.what


def above(value: float, floor: float, what: str, unit: str = "") -> Check:
    """A metric above a floor (chance, or a level the claim presupposes)."""
    return Check(value > floor, f"{what}: {value:.4g}{unit} (needs > {floor:g}{unit})")


def below(value: float, ceiling: float, what: str, unit: str = "") -> Check:
    """A metric below a ceiling (an error rate below chance)."""
    return Check(value < ceiling, f"{what}: {value:.4g}{unit} (needs < {ceiling:g}{unit})")


def per_seed(changes: list[float], ses: list[float], expected: int, alpha: float = 0.05,
             seeds: int | None = None) -> tuple[bool | None, str]:
    """A change measured on each seed, each with its own sampling standard error, pooled by Stouffer's z (the
    seeds' z-scores summed over sqrt(n)): True when the pooled z moves the `expected` way (+1 / -1) at one-sided
    `alpha`, no seed moves significantly the other way and most of the run's `seeds` (default: the seeds measured;
    a seed whose curve cannot move shows nothing) move the expected way; False when the pooled z moves the other
    way, None otherwise (within the sampling error, seeds that contradict each other, or a trend on too few seeds).
    Returns it and the numbers."""
    zs = [c / se if se > 0 else math.copysign(math.inf, c) if c else 0.0 for c, se in zip(changes, ses)]
    pooled = sum(zs) / math.sqrt(len(zs))
    from scipy import stats

    crit = float(stats.norm.isf(alpha))
    text = (f"pooled z {pooled:+.1f} over {len(zs)} seed{'s' * (len(zs) > 1)} (needs beyond {crit:.2f}); per seed "
            + ", ".join(f"{c:+.3g} (z {z:+.1f})" for c, z in zip(changes, zs)))
    against = any(expected * z < -crit for z in zs)
    seeds = len(zs) if seeds is None else seeds
    shown = sum(expected * c > 0 for c in changes)
    if expected * pooled > crit and not against and 2 * shown <= seeds:
        return None, f"{text}; {shown} of {seeds} seeds show it (a trend needs most of them)"
    if expected * pooled > crit and not against:
        return True, text
    return (False if expected * pooled < -crit else None), text


def not_one_class(top_share: float, what: str, limit: float = 0.95) -> Check:
    """A model is not near one-class: at most `limit` of its predictions fall in one class."""
    return Check(top_share <= limit, f"{what}: {100 * top_share:.1f} % of predictions in one class "
                                     f"(needs <= {100 * limit:g} %)")


def trivial_comparison(loser: Iterable[Check]) -> str | None:
    """Why "A beats B" cannot fail, else None: a loser B near one-class or at chance (its first unmet check) is
    beaten by any model above chance, so the comparison is as trivial as one against a constant (issue 56). The
    winner's own checks stay preconditions (`judge`)."""
    return next((f"{check.what}: any model above chance beats it" for check in loser if not check.ok), None)


def movable(points: Iterable[float], floor: float, margin: float) -> list[float]:
    """The points of a trend that can move: those more than `margin` above the floor they cannot go below."""
    return [p for p in points if p > floor + margin]


def judge(test: bool | None, preconditions: Iterable[Check] = (), cannot_fail: str | None = None) -> tuple[str, str]:
    """The verdict and its reason: the first unmet precondition makes the claim not testable; `cannot_fail` (why
    the test cannot fail here) makes it uninformative; else the test decides (None: not testable, no data)."""
    for check in preconditions:
        if not check.ok:
            return NOT_TESTABLE, check.what
    if cannot_fail:
        return UNINFORMATIVE, cannot_fail
    if test is None:
        return NOT_TESTABLE, "nothing to test: the runs it needs did not run"
    met = "; ".join(c.what for c in preconditions)
    return (HOLDS if test else FAILS), met


def row(subject: str, claim: str, measured: str, verdict: tuple[str, str], source: str,
        margin: float | None = None) -> dict:
    """One line of a claims table (`margin`: positive = the slack, negative = the shortfall; informative only)."""
    status, reason = verdict
    return {"subject": subject, "claim": claim, "measured": measured, "status": status, "reason": reason,
            "margin": None if margin is None or status not in INFORMATIVE else round(margin, 4), "source": source}


def counts(statuses: Iterable[str]) -> dict[str, int]:
    statuses = list(statuses)
    return {kind: statuses.count(kind) for kind in KINDS}


def headline(statuses: Iterable[str]) -> str:
    """"h of n informative claims hold" and the others beside it, e.g. "3 of 5 informative claims hold; 2 not
    testable, 1 uninformative"."""
    c = counts(statuses)
    informative = c[HOLDS] + c[FAILS]
    rest = [f"{c[k]} {k}" for k in (NOT_TESTABLE, UNINFORMATIVE) if c[k]]
    text = f"{c[HOLDS]} of {informative} informative claims hold" if informative else "no informative claim"
    return text + (f"; {', '.join(rest)}" if rest else "")
