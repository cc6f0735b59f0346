"""R2D's noise calibration (Mu & Klabjan, "Rewind-to-Delete", Section 3, Theorem 3.1, Corollary 3.2).

Learning runs T (S)GD steps; unlearning rewinds K of them and re-runs them on the retained data. With a
step size eta, smoothness L, per-sample gradient bound G, m of n points deleted and a = eta L n / (n - m):

    h(K)     = ((1 + a)^(T - K) - 1) (1 + eta L)^K                 (Lemmas B.2-B.3; h(T) = 0)
    Delta(K) = 2 m G h(K) / (L n)                                   (the l2 sensitivity, Theorem 3.1)
    sigma    = Delta(K) sqrt(2 log(1.25 / delta)) / epsilon         (eq. 3; classical, valid for 0 < epsilon <= 1)
    sigma    = analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8)   (the paper's choice for epsilon > 1)

Corollary 3.2 (eq. 5) bounds the K that a fixed sigma needs; `least_k` is the numerically computed inverse
(the least integer K whose sigma is at most the given one; h is decreasing, so a bisection over 0..T).

The analytic mechanism here is exact and stable: sigma solves

    delta = Phi(Delta/(2 sigma) - epsilon sigma/Delta) - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta)

(Balle & Wang, Theorem 8) with e^epsilon Phi(-b) evaluated as exp(epsilon + log Phi(-b)) (scipy's log_ndtr)
and a scipy root finder; the returned sigma is moved up by ulps until the exact delta is <= the target, so
it always certifies. `analytic_sigma_paper_compat` is Balle & Wang's Algorithm 1 as the authors' January
2025 code (and diffprivlib) compute it, with 1 + erf(-x) that cancels at large epsilon (at epsilon = 40 it
gives 0.128965 for Delta = 1, the exact value is 0.127297; at some epsilon it gives too little noise).
It exists only to reproduce that code's numbers and is never the default.

The float range: the analytic delta's exponent epsilon + log Phi(-b) carries a rounding error of about
epsilon 2^-53, so above ANALYTIC_EPSILON_MAX = 1e12 the computed delta stops being exact (from about 1e17 the
returned sigma no longer certifies delta, and from about 1e19 exp() overflows; at 1e300 the bracket spans 150
decades and Brent's method runs out of iterations): `analytic_sigma` refuses such an epsilon before the root
find. The paper-compat code evaluates e^epsilon and so stops at epsilon = 709.78; h(K) refuses a T, eta or L
whose exponent (T - K) log(1 + a) + K log(1 + eta L) leaves the float range, and every sigma returned is a
finite float, positive when Delta is.
"""

from __future__ import annotations

import math
import numbers

from scipy.special import log_ndtr, ndtr

from .search import FLOAT_MAX, LOG_FLOAT_MAX, finite, in_float_range, integer, probability

MECHANISMS = ("analytic", "classical", "paper-compat")
CLASSICAL_EPSILON_MAX = 1.0  # Theorem 3.1 (the classical Gaussian mechanism, Dwork & Roth Thm A.1)
ANALYTIC_EPSILON_MAX = 1e12  # the analytic delta is exact to about epsilon 2^-53 in its exponent (module doc)
PAPER_COMPAT_EPSILON_MAX = LOG_FLOAT_MAX  # e^epsilon is a float (709.78)


# ---------------------------------------------------------------------------------------------- the bound

def _check_run(K: int, T: int, eta: float, L: float, m: float, n: float) -> tuple[int, int, float, float, float,
                                                                                  float]:
    T = integer("T (learning steps)", T, 1)
    if isinstance(K, bool) or not isinstance(K, numbers.Integral) or not 0 <= K <= T:
        raise ValueError(f"K (rewound steps) = {K!r}: valid: an integer with 0 <= K <= T = {T}")
    eta = finite("eta (step size)", eta)
    L = finite("L (smoothness)", L)
    n = finite("n (training samples)", n)
    m = finite("m (deleted samples)", m, strict=False, high=n)
    return int(K), T, eta, L, m, n


def h(K: int, T: int, eta: float, L: float, m: float, n: float) -> float:
    """h(K) = ((1 + eta L n/(n-m))^(T-K) - 1) (1 + eta L)^K (Theorem 3.1; Lemmas B.2 and B.3).

    Computed as expm1((T-K) log1p(a)) exp(K log1p(eta L)), exact to rounding for the tiny a of the experiments.
    Refused (naming T, eta and L) when it leaves the float range (its exponent (T-K) log1p(a) + K log1p(eta L)
    above about 709.78).
    """
    K, T, eta, L, m, n = _check_run(K, T, eta, L, m, n)
    eta_L = eta * L
    a = eta_L * n / (n - m)
    e1, e2 = (T - K) * math.log1p(a), K * math.log1p(eta_L)
    if e1 <= LOG_FLOAT_MAX and e2 <= LOG_FLOAT_MAX:  # False also for nan (eta L or a overflowing)
        value = math.expm1(e1) * math.exp(e2)
        if math.isfinite(value):
            return value
    raise ValueError(f"T (learning steps) = {T}, eta (step size) = {eta:g}, L (smoothness) = {L:g}: h(K) = "
                     f"((1 + a)^(T-K) - 1)(1 + eta L)^K with a = eta L n/(n-m) = {a:.6g} leaves the float range "
                     f"(its exponent (T-K) log(1 + a) + K log(1 + eta L) = {e1 + e2:.6g} > {LOG_FLOAT_MAX:.6g}); "
                     f"valid: a smaller T, eta or L, with that exponent at most {LOG_FLOAT_MAX:.6g}")


def sensitivity(K: int, T: int, eta: float, L: float, G: float, m: float, n: float) -> float:
    """Delta(K) = 2 m G h(K) / (L n), the bound on ||theta'_T - theta''_K|| (Theorem 3.1)."""
    G = finite("G (gradient bound)", G, strict=False)
    hk = h(K, T, eta, L, m, n)
    if L * n == math.inf:
        raise ValueError(f"L (smoothness) = {L:g}, n (training samples) = {n:g}: L n leaves the float range; "
                         f"valid: L n <= {FLOAT_MAX:.6g}")
    return in_float_range(lambda: 2 * m * G * hk / (L * n),
                          f"Delta (sensitivity) for G = {G:g}, m = {m:g}, n = {n:g}, L = {L:g}, h(K) = {hk:.6g}",
                          "Delta(K) = 2 m G h(K) / (L n)", "G, m, n, L, T, eta with that product a positive float",
                          positive=m * G * hk > 0)


def sensitivity_steps(K: int, etas: list[float], L: float, G: float, m: float, n: float) -> float:
    """Theorem 3.1's bound with the step sizes actually taken (`etas`, one per step; T = len(etas)) in place of one
    constant eta: over the first T - K steps the gap obeys e <- (1 + a_t) e + b_t with a_t = eta_t L n / (n - m),
    b_t = 2 m G eta_t / (n - m) (Lemma B.2, step by step); the last K steps multiply it by (1 + eta_t L) each
    (Lemma B.3). For constant steps this is `sensitivity` (the sum of b_t times the later products is then
    2 m G ((1 + a)^(T - K) - 1) / (L n))."""
    T = len(etas)
    K, T, _, L, m, n = _check_run(K, T, max(etas, default=0.0) or 1.0, L, m, n)
    G = finite("G (gradient bound)", G, strict=False)
    gap = 0.0
    for eta in etas[:T - K]:
        gap = (1 + eta * L * n / (n - m)) * gap + 2 * m * G * eta / (n - m)
    for eta in etas[T - K:]:
        gap *= 1 + eta * L
    if not math.isfinite(gap):
        raise ValueError(f"the step sizes' bound overflows for L = {L:g}, G = {G:g} over T = {T} steps; valid: "
                         "smaller steps or L")
    return gap


# ---------------------------------------------------------------------------------------------- mechanisms

def gaussian_factor(delta: float) -> float:
    """sqrt(2 log(1.25 / delta)) (eq. 3)."""
    return math.sqrt(2 * math.log(1.25 / probability("delta", delta)))


def classical_sigma(epsilon: float, delta: float, Delta: float, *, strict: bool = True) -> float:
    """sigma = Delta sqrt(2 log(1.25/delta)) / epsilon (eq. 3, Theorem 3.1 / B.1).

    The theorem needs 0 < epsilon <= 1; above it this refuses (strict) and points to the analytic mechanism.
    `strict=False` evaluates the formula anyway, for tables that show how it compares (it certifies nothing there).
    """
    high = CLASSICAL_EPSILON_MAX if strict else math.inf
    try:
        epsilon = finite("epsilon", epsilon, high=high, high_strict=False)
    except ValueError as err:
        if strict and isinstance(epsilon, numbers.Real) and math.isfinite(epsilon) and epsilon > high:
            raise ValueError(f"epsilon = {epsilon:g}: the classical Gaussian mechanism (Theorem 3.1) holds for "
                             "0 < epsilon <= 1; valid: epsilon in (0, 1], or the analytic mechanism") from None
        raise err from None
    Delta = finite("Delta (sensitivity)", Delta, strict=False)
    return _float_sigma(Delta * gaussian_factor(delta) / epsilon, epsilon, delta, Delta)


def _float_sigma(sigma_: float, epsilon: float, delta: float, Delta: float) -> float:
    """`sigma_` when it is a finite float, positive when Delta is; else the one-line refusal naming epsilon."""
    if math.isfinite(sigma_) and (sigma_ > 0 or Delta == 0):
        return sigma_
    how = "overflows" if not math.isfinite(sigma_) else "underflows to 0"
    valid = "a larger epsilon or delta, or a smaller Delta(K)" if how == "overflows" else \
        "a smaller epsilon, or a larger Delta(K)"
    raise ValueError(f"epsilon = {epsilon:g}, delta = {delta:g}: the noise sigma for Delta = {Delta:g} {how}; "
                     f"valid: {valid}")


def analytic_delta(epsilon: float, sigma: float, Delta: float) -> float:
    """The exact delta of the Gaussian mechanism N(0, sigma^2) for an l2 sensitivity Delta at epsilon
    (Balle & Wang 2018, Theorem 8), with e^epsilon Phi(-b) = exp(epsilon + log Phi(-b))."""
    if Delta == 0:
        return 0.0
    if sigma == 0:
        return 1.0
    u, v = Delta / (2 * sigma), epsilon * sigma / Delta
    return float(ndtr(u - v) - math.exp(epsilon + float(log_ndtr(-u - v))))


def _capped_epsilon(epsilon: float, cap: float, above: str) -> float:
    """epsilon finite, > 0 and at most `cap`; above the cap, one line saying why (`above`) and what is valid."""
    try:
        return finite("epsilon", epsilon, high=cap, high_strict=False)
    except ValueError:
        if isinstance(epsilon, numbers.Real) and math.isfinite(epsilon) and epsilon > cap:
            raise ValueError(f"epsilon = {epsilon:g}: {above}") from None
        raise


def check_analytic_epsilon(epsilon: float) -> float:
    """epsilon for the analytic mechanism: finite, > 0 and at most ANALYTIC_EPSILON_MAX (module doc)."""
    return _capped_epsilon(epsilon, ANALYTIC_EPSILON_MAX,
                           f"above {ANALYTIC_EPSILON_MAX:g} the analytic Gaussian delta is not exact in floating point "
                           "(its exponent epsilon + log Phi loses the digits that decide delta) and the root finding "
                           f"fails; valid: 0 < epsilon <= {ANALYTIC_EPSILON_MAX:g}")


def analytic_sigma(epsilon: float, delta: float, Delta: float) -> float:
    """The least sigma with analytic_delta(epsilon, sigma, Delta) <= delta (Balle & Wang 2018, Theorem 8/Alg. 1),
    exact: a Brent root find of the exact delta(sigma) (decreasing in sigma), then moved up by ulps until the
    exact delta is at most the target. epsilon above ANALYTIC_EPSILON_MAX is refused before the root find."""
    epsilon = check_analytic_epsilon(epsilon)
    delta = probability("delta", delta)
    Delta = finite("Delta (sensitivity)", Delta, strict=False)
    if Delta == 0:
        return 0.0
    # in units of Delta: s = sigma / Delta; delta(s) falls from 1 (s -> 0) to 0 (s -> inf)
    def gap(s: float) -> float:
        return analytic_delta(epsilon, s, 1.0) - delta

    lo, hi = 1e-3, 1.0
    while gap(lo) <= 0:
        lo /= 10
        if lo < 1e-300:
            raise ValueError(f"delta = {delta:g}: no sigma > 0 is small enough; valid: a smaller delta")
    while gap(hi) > 0:
        hi *= 10
        if hi > 1e300:
            raise ValueError(f"epsilon = {epsilon:g}, delta = {delta:g}: the noise overflows; valid: a larger epsilon "
                             "or delta")
    from scipy.optimize import brentq  # here: scipy.optimize is a third of a second of every job's start

    s = brentq(gap, lo, hi, xtol=1e-300, rtol=4 * 2.220446049250313e-16, maxiter=500)
    for _ in range(1000):
        if gap(s) <= 0:
            break
        s = math.nextafter(s, math.inf)
    else:
        raise ValueError(f"epsilon = {epsilon:g}, delta = {delta:g}: no sigma reaches the target in floating point")
    return _float_sigma(s * Delta, epsilon, delta, Delta)


def analytic_sigma_paper_compat(epsilon: float, delta: float, Delta: float, tol: float = 1e-12) -> float:
    """`paper-compat`: Balle & Wang's Algorithm 1 as in the authors' January 2025 code and diffprivlib.

    Phi(t) = (1 + erf(t / sqrt 2)) / 2, which cancels at large epsilon; doubling then bisection on s until
    |caseA/B - delta| <= tol; alpha = sqrt(1 + s/2) -/+ sqrt(s/2); sigma = alpha Delta / sqrt(2 epsilon).
    NOT exact: use `analytic_sigma`. Kept only to reproduce numbers computed with that code. epsilon above
    709.78 (where e^epsilon overflows) is refused.
    """
    epsilon = check_paper_compat_epsilon(epsilon)
    delta = probability("delta", delta)
    Delta = finite("Delta (sensitivity)", Delta, strict=False)

    def phi(t: float) -> float:
        return 0.5 * (1.0 + math.erf(t / math.sqrt(2.0)))

    def case_a(s: float) -> float:
        return phi(math.sqrt(epsilon * s)) - math.exp(epsilon) * phi(-math.sqrt(epsilon * (s + 2.0)))

    def case_b(s: float) -> float:
        return phi(-math.sqrt(epsilon * s)) - math.exp(epsilon) * phi(-math.sqrt(epsilon * (s + 2.0)))

    delta0 = case_a(0.0)
    if delta == delta0:
        alpha = 1.0
    else:
        if delta > delta0:
            pred, func = (lambda s: case_a(s) <= delta), case_a
        else:
            pred, func = (lambda s: case_b(s) >= delta), case_b
        s_inf, s_sup = 0.0, 1.0
        while pred(s_sup):
            s_inf, s_sup = s_sup, 2.0 * s_sup
        s_mid = s_inf + (s_sup - s_inf) / 2.0
        for _ in range(10_000):
            if abs(func(s_mid) - delta) <= tol:
                break
            if pred(s_mid):
                s_inf = s_mid
            else:
                s_sup = s_mid
            s_mid = s_inf + (s_sup - s_inf) / 2.0
        sign = -1.0 if delta > delta0 else 1.0
        alpha = math.sqrt(1.0 + s_mid / 2.0) + sign * math.sqrt(s_mid / 2.0)
    if Delta > 0 and not (math.isfinite(alpha) and alpha > 0):  # small epsilon: 1 + erf(-x) cancels to 0
        raise ValueError(f"epsilon = {epsilon:g}, delta = {delta:g}: the paper-compat code breaks down in floating "
                         f"point here (alpha = {alpha:g}, so sigma = {alpha * Delta / math.sqrt(2.0 * epsilon):g}: "
                         "no noise); valid: a larger epsilon, or the analytic mechanism")
    return _float_sigma(alpha * Delta / math.sqrt(2.0 * epsilon), epsilon, delta, Delta)


def check_paper_compat_epsilon(epsilon: float) -> float:
    """epsilon for the paper-compat code: finite, > 0 and at most 709.78, where its e^epsilon overflows."""
    return _capped_epsilon(epsilon, PAPER_COMPAT_EPSILON_MAX,
                           f"the paper-compat code evaluates e^epsilon, which overflows above "
                           f"{PAPER_COMPAT_EPSILON_MAX:.6g}; valid: 0 < epsilon <= {PAPER_COMPAT_EPSILON_MAX:.6g}, or "
                           "the analytic mechanism")


def mechanism_sigma(mechanism: str, epsilon: float, delta: float, Delta: float) -> float:
    """sigma for sensitivity Delta under `mechanism` in MECHANISMS (analytic is the default everywhere)."""
    if mechanism == "analytic":
        return analytic_sigma(epsilon, delta, Delta)
    if mechanism == "classical":
        return classical_sigma(epsilon, delta, Delta)
    if mechanism == "paper-compat":
        return analytic_sigma_paper_compat(epsilon, delta, Delta)
    raise ValueError(f"mechanism = {mechanism!r}: valid: one of {', '.join(MECHANISMS)}")


def sigma(epsilon: float, delta: float, K: int, T: int, eta: float, L: float, G: float, m: float, n: float,
          mechanism: str = "analytic") -> float:
    """R2D's noise sigma for rewinding K of T steps (Theorem 3.1 with Delta(K); the analytic mechanism by default)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism = {mechanism!r}: valid: one of {', '.join(MECHANISMS)}")
    epsilon = finite("epsilon", epsilon)
    probability("delta", delta)
    if mechanism == "classical":
        classical_sigma(epsilon, delta, 0.0)  # refuse epsilon > 1 before anything else
    elif mechanism == "analytic":
        check_analytic_epsilon(epsilon)
    else:
        check_paper_compat_epsilon(epsilon)
    return mechanism_sigma(mechanism, epsilon, delta, sensitivity(K, T, eta, L, G, m, n))


def epoch_steps(K_ep: int, E_sel: int, steps_per_epoch: int) -> tuple[int, int]:
    """(K, T) in steps for rewinding K_ep of E_sel selected epochs: K = K_ep S, T = (E_sel - 1) S (Section 4.2's
    accounting: a rewind to the state after epoch 1 counts as K = T)."""
    E_sel = integer("E_sel (selected epochs)", E_sel, 2)
    S = integer("steps_per_epoch", steps_per_epoch, 1)
    if isinstance(K_ep, bool) or not isinstance(K_ep, numbers.Integral) or not 0 <= K_ep <= E_sel - 1:
        raise ValueError(f"K_ep (rewound epochs) = {K_ep!r}: valid: an integer with 0 <= K_ep <= E_sel - 1 = "
                         f"{E_sel - 1} for the noise (K_ep = E_sel is a retrain from the initial weights, sigma 0)")
    return int(K_ep) * S, (E_sel - 1) * S


# ---------------------------------------------------------------------------------------------- K for a sigma

def corollary_k(sigma_target: float, epsilon: float, delta: float, T: int, eta: float, L: float, G: float,
                m: float, n: float) -> float:
    """Corollary 3.2 (eq. 5): K(epsilon) <= log((1+a)^T - sigma L n epsilon / (2 m G sqrt(2 log(1.25/delta))))
    / log(1+a), a = eta L n / (n-m); a K at least this certifies with the classical sigma. Clipped below at 0
    (the argument <= 1: no rewinding is needed)."""
    sigma_target = finite("sigma", sigma_target)
    epsilon = finite("epsilon", epsilon)
    _, T, eta, L, m, n = _check_run(0, T, eta, L, m, n)
    G = finite("G (gradient bound)", G)
    if m == 0:
        return 0.0
    a = eta * L * n / (n - m)
    if not T * math.log1p(a) <= LOG_FLOAT_MAX:
        h(0, T, eta, L, m, n)  # the same exponent: raises naming T, eta and L
    den = 2 * m * G * gaussian_factor(delta)
    if den == 0:  # m G underflows: Delta(K) is 0 in floating point, nothing to rewind
        return 0.0
    arg = math.exp(T * math.log1p(a)) - sigma_target * L * n * epsilon / den
    if arg != arg:  # inf / inf: sigma L n epsilon and m G both beyond the float range
        raise ValueError(f"sigma = {sigma_target:g}: Corollary 3.2's sigma L n epsilon / (2 m G sqrt(2 log(1.25/"
                         f"delta))) is inf / inf for m = {m:g}, G = {G:g}; valid: values whose products are finite "
                         "floats")
    if arg <= 1:
        return 0.0
    return math.log(arg) / math.log1p(a)


def least_k(sigma_target: float, epsilon: float, delta: float, T: int, eta: float, L: float, G: float, m: float,
            n: float, mechanism: str = "analytic") -> int:
    """The numerically computed inverse: the least integer K in 0..T with sigma(K) <= sigma_target (sigma(T) = 0,
    and sigma(K) decreases in K, so a bisection)."""
    sigma_target = finite("sigma", sigma_target)

    def ok(K: int) -> bool:
        return sigma(epsilon, delta, K, T, eta, L, G, m, n, mechanism) <= sigma_target

    lo, hi = 0, integer("T (learning steps)", T, 1)
    if ok(lo):
        return 0
    while hi - lo > 1:  # invariant: ok(hi), not ok(lo)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
