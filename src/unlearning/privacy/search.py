"""Input checks and the one noise search of the privacy package.

`least_sigma` is Algorithm 4 of Chien et al. 2024: a bisection on a monotone predicate
"sigma is enough" that returns the upper end of its final bracket, so the sigma it returns always
satisfies the predicate (a certificate that holds). scipy's `bisect` / `brentq` return a point within
`xtol` on either side of the root, which can miss the target, and would move the published sigmas in
their last digits; the bracket, tolerance and return value here are the paper's. Where the bracket's
upper end is not enough, the bracket widens (x10) until it is, or stops with a ValueError saying so.

The float range: a delta or beta below the least normal float (2.2e-308) makes 1/delta overflow, and a count
above 2^53 is not exact as a float (and one above 1.8e308 is not a float at all), so both are refused here;
`in_float_range` turns a closed form that overflows, divides by an underflowed zero or underflows to 0 into
the same one-line ValueError naming its inputs, before the search that would use it.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable

SIGMA_BRACKET = (1e-15, 10.0)  # Algorithm 4's bisection bracket
SIGMA_TOL = 1e-8
SIGMA_MAX = 1e12  # the widened bracket's last upper end
FLOAT_MAX = sys.float_info.max           # 1.8e308
FLOAT_TINY = sys.float_info.min          # 2.2e-308, the least normal float
LOG_FLOAT_MAX = math.log(FLOAT_MAX)      # 709.78: exp() overflows above it
COUNT_MAX = 2**53                        # the largest count every float formula holds exactly


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
    """A delta or beta: a number below 1 and at least the least normal float 2.2e-308 (below it 1/value
    overflows, and log(1/value) with it)."""
    v = finite(name, value, 0.0, high=1.0)
    if v < FLOAT_TINY:
        raise ValueError(f"{name} = {value}: 1/{name} overflows below the least normal float; valid: "
                         f"{_range(FLOAT_TINY, False, 1.0, True)}")
    return v


def integer(name: str, value: int, low: int = 1, high: int = COUNT_MAX) -> int:
    """An integer in [low, high] (a bool or a float such as 2.0 is refused); `high` defaults to 2^53, the
    largest count the float formulas hold exactly."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} = {value!r}: valid: an integer >= {low}")
    if value > high:
        digits = str(int(value))
        shown = digits if len(digits) <= 20 else f"{digits[0]}.{digits[1:4]}e+{len(digits) - 1}"
        raise ValueError(f"{name} = {shown}: valid: an integer >= {low} and <= {high}")
    return int(value)


def in_float_range(value: Callable[[], float], inputs: str, what: str, valid: str, *,
                   positive: bool = False) -> float:
    """`value()` when it is a finite float (and, with `positive`, not an underflowed 0); else, when it overflows,
    divides by a 0 that underflowed, or gives inf or nan, a one-line ValueError "{inputs}: {what} leaves the
    float range; valid: {valid}". `inputs` starts with the key the message names ("L = 1e+300, ...")."""
    try:
        v = float(value())
    except (OverflowError, ZeroDivisionError):
        v = math.nan
    if not math.isfinite(v) or (positive and v == 0):
        how = "underflows to 0" if math.isfinite(v) else "leaves the float range"
        raise ValueError(f"{inputs}: {what} {how}; valid: {valid}")
    return v


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
