"""Input checks and the one noise search of the privacy package.

`least_sigma` is Algorithm 4 of Chien et al. 2024: a bisection on a monotone predicate
"sigma is enough" that returns the upper end of its final bracket, so the sigma it returns always
satisfies the predicate (a certificate that holds). scipy's `bisect` / `brentq` return a point within
`xtol` on either side of the root, which can miss the target, and would move the published sigmas in
their last digits; the bracket, tolerance and return value here are the paper's. Where the bracket's
upper end is not enough, the bracket widens (x10) until it is, or stops with a ValueError saying so.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

SIGMA_BRACKET = (1e-15, 10.0)  # Algorithm 4's bisection bracket
SIGMA_TOL = 1e-8
SIGMA_MAX = 1e12  # the widened bracket's last upper end


def finite(name: str, value: float, low: float = 0.0, *, strict: bool = True, high: float = math.inf,
           high_strict: bool = True) -> float:
    """`value` as a float when it is a finite number in (low, high) (`strict=False`: [low, ...)); else a
    one-line ValueError naming `name` and the valid range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} = {value!r}: not a number; valid: {_range(low, strict, high, high_strict)}")
    v = float(value)
    ok = math.isfinite(v) and (v > low if strict else v >= low) and (v < high if high_strict else v <= high)
    if not ok:
        raise ValueError(f"{name} = {value}: valid: {_range(low, strict, high, high_strict)}")
    return v


def _range(low: float, strict: bool, high: float, high_strict: bool) -> str:
    lo = f"> {low:g}" if strict else f">= {low:g}"
    if math.isinf(high):
        return f"a finite number {lo}"
    return f"a number {lo} and {'<' if high_strict else '<='} {high:g}"


def probability(name: str, value: float) -> float:
    """A delta or beta: a number strictly between 0 and 1."""
    return finite(name, value, 0.0, high=1.0)


def integer(name: str, value: int, low: int = 1) -> int:
    """An integer >= `low` (a bool or a float such as 2.0 is refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} = {value!r}: valid: an integer >= {low}")
    return int(value)


def least_sigma(enough: Callable[[float], bool], bracket: tuple[float, float] = SIGMA_BRACKET,
                tol: float = SIGMA_TOL, sigma_max: float = SIGMA_MAX, target: str = "the target") -> float:
    """The least sigma that is `enough` (monotone: false ... false true true ...), to within `tol`.

    Algorithm 4: lo, hi = bracket; halve until hi - lo <= tol; return hi. If `enough(hi)` is false the
    bracket moves up (lo, hi = hi, 10 hi) until it holds; past `sigma_max`, a ValueError naming `target`.
    Whenever the bracket's upper end is enough, the bisection and its result are Algorithm 4's exactly.
    """
    lo, hi = bracket
    while not enough(hi):
        if hi >= sigma_max:
            raise ValueError(f"no noise sigma <= {sigma_max:g} reaches {target}")
        lo, hi = hi, hi * 10
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if not lo < mid < hi:  # a widened bracket can reach float resolution before tol
            break
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
