"""SGLU's privacy accounting (Chien, Wang, Chen, Li 2024, arXiv 2403.17105 v1; spec sglu.md 2.3, 2.4, 7).

Pure functions of floats. "Epoch" = n/b iterations of the fixed cyclic batch schedule, c = 1 - eta m.
Every Renyi bound plugs in the noise variance eta sigma^2, as the paper does, although the algorithm
adds 2 eta sigma^2: conservative by a factor 2, and the only way Table 3 reproduces (spec 2.3, 7.2).

Three accounting variants (spec 2.4):

* ``paper`` (A): F = c^{2K'} for every request, Z_B = 2 eta M / (b (1 - c^{n/b})), alpha in [2, 1e5];
* ``code_b`` (B): like A on request 1, the optimal-shift factor F_tight from request 2 (Fig. 3c/3d);
* ``code_c`` (C): F_tight always, Z_B = 2 eta M / (b (1 - c)), alpha in (1, 1e5] (Fig. 3b).

The float range: c = 1 - eta m must be below 1 in floating point (else 1 - c^{n/b} = 0 divides), R at most
R_MAX (Theorem 3.2 squares 2R and Z <= 4R) and 2 eta sigma^2, the Renyi bounds' denominator, above 0 (it
underflows for a tiny sigma, and the bound divides by it); each is refused with a one-line ValueError. A
Renyi bound that overflows to inf (huge M, tiny sigma) counts as "not enough", and numpy's overflow warnings
are silenced, so such inputs end in the search's one-line "no sigma / no K" error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .search import FLOAT_MAX, FLOAT_TINY, SIGMA_BRACKET, SIGMA_TOL, finite, integer, least_sigma, probability

Variant = Literal["paper", "code_b", "code_c"]
VARIANTS: tuple[str, ...] = ("paper", "code_b", "code_c")
_ALIASES = {"a": "paper", "b": "code_b", "c": "code_c"}

ALPHA_ONE = 1 + 1e-6  # "alpha > 1": the 1/(alpha - 1) conversion term is infinite at alpha = 1
ALPHA_HI = 1e5
TABLE3_ALPHA = (2.0, 1e5)  # reproduces Table 3 (so does (2, 1e4): the optimum alpha stays below 1e3 there)
BURN_IN = {32: 10, 128: 20, 512: 50}  # Table 2; full batch: 1000
BURN_IN_FULL = 1000
R_MAX = math.sqrt(FLOAT_MAX) / 4  # (4R)^2 is a float: Theorem 3.2 squares 2R and Z_T <= 4R


@dataclass(frozen=True)
class Constants:
    """Problem constants: n points (after drop-last), batch b, L-smooth, m-strongly convex, M-Lipschitz, radius R."""

    n: int
    b: int
    L: float
    m: float
    M: float = 1.0
    R: float = 100.0
    eta: float | None = None  # step size; None means 1/L

    def __post_init__(self) -> None:
        integer("n", self.n, 1)
        integer("b", self.b, 1)
        for name in ("L", "m", "M", "R"):
            finite(name, getattr(self, name))
        if self.eta is not None:
            finite("eta", self.eta)
        if not 0 < self.b <= self.n:
            raise ValueError(f"b = {self.b}: valid values lie in [1, n = {self.n}]")
        if not 0 < self.m <= self.L:
            raise ValueError(f"m = {self.m}, L = {self.L}: need 0 < m <= L")
        if not 0 < self.step <= 1 / self.L * (1 + 1e-12):
            raise ValueError(f"eta = {self.step}: the bounds need 0 < eta <= 1/L = {1 / self.L}")
        if not self.c < 1:
            raise ValueError(f"m = {self.m:g}, L = {self.L:g}: the contraction c = 1 - eta m rounds to 1 in floating "
                             f"point (eta m = {self.step * self.m:.3g}), so 1 - c^(n/b) = 0; valid: eta m >= 2^-53, "
                             f"i.e. m >= {2**-53 / self.step:.3g} (lambda = lam_per_n n for logistic regression)")
        if self.R > R_MAX:
            raise ValueError(f"R = {self.R:g}: Theorem 3.2 squares 2R (and Z <= 4R), which overflows; valid: "
                             f"R <= {R_MAX:.6g}")

    @property
    def step(self) -> float:
        """The step size eta (1/L unless given)."""
        return 1 / self.L if self.eta is None else self.eta

    @property
    def c(self) -> float:
        """Contraction factor of one noisy gradient step, c = 1 - eta m."""
        return 1 - self.step * self.m

    @property
    def iters(self) -> int:
        """Iterations per epoch, n // b (the last n mod b points are dropped)."""
        return self.n // self.b


def logistic_constants(n: int, b: int, lam_per_n: float = 1e-6, M: float = 1.0, R: float = 100.0) -> Constants:
    """Constants of L2-regularised logistic regression on unit-norm features (spec 4.2, Table 1).

    lambda = lam_per_n * n, L = 1/4 + lambda, m = lambda, eta = 1/L.
    """
    lam = finite("lam_per_n", lam_per_n) * integer("n", n, 1)
    if not 1 - 1 / (0.25 + lam) * lam < 1:  # Constants.c, 1 - eta m
        raise ValueError(f"lam_per_n = {lam_per_n:g}: lambda = lam_per_n n = {lam:g} makes the contraction "
                         f"c = 1 - eta lambda round to 1 in floating point (eta = 1/(1/4 + lambda)); valid: lam_per_n "
                         f">= {2**-52 / n:.3g}")
    return Constants(n=n, b=b, L=0.25 + lam, m=lam, M=M, R=R)


def burn_in(k: Constants) -> int:
    """Table 2's burn-in T in epochs: 10 / 20 / 50 for b = 32 / 128 / 512, 1000 for full batch."""
    return BURN_IN_FULL if k.b == k.n else BURN_IN[k.b]


def variant_name(variant: str) -> str:
    """Canonical variant name: accepts "paper" | "code_b" | "code_c" and the letters A | B | C."""
    name = _ALIASES.get(variant.lower(), variant.lower())
    if name not in VARIANTS:
        raise ValueError(f"variant = {variant!r}: valid: {', '.join(VARIANTS)} (or A, B, C)")
    return name


def alpha_range(variant: str) -> tuple[float, float]:
    """The RDP order range of the variant's (epsilon, delta) conversion: [2, 1e5], or (1, 1e5] for code_c."""
    return (ALPHA_ONE, ALPHA_HI) if variant_name(variant) == "code_c" else (2.0, ALPHA_HI)


# ---------------------------------------------------------------------------------------------- W-infinity bounds


def z_b(k: Constants, variant: str = "paper", cap: bool = False) -> float:
    """Converged W-infinity gap Z_B between adjacent datasets (Lemma 3.5 with T -> infinity, Cor. 3.8).

    paper / code_b: 2 eta M / (b (1 - c^{n/b})); code_c: 2 eta M / (b (1 - c)) (the per-iteration-mismatch
    bound). ``cap`` takes min(., 2R), which no variant used (it never binds at R = 100).
    """
    per_epoch = 1 - k.c if variant_name(variant) == "code_c" else 1 - k.c**k.iters
    z = 2 * k.step * k.M / (k.b * per_epoch)
    return min(z, 2 * k.R) if cap else z


def z_batch(k: Constants, S: int) -> float:
    """Cor. 3.12 (prefactor typo fixed) for S replaced points, worst case: min(2 eta M S / (b (1 - c^{n/b})), 2R)."""
    return min(2 * k.step * k.M * S / (k.b * (1 - k.c**k.iters)), 2 * k.R)


def z_burn_in(k: Constants, T: int) -> float:
    """Theorem 3.2's Z after T burn-in epochs: 2R c^{Tn/b} + min((1 - c^{Tn/b}) / (1 - c^{n/b}) 2 eta M / b, 2R)."""
    ct = k.c ** (T * k.iters)
    return 2 * k.R * ct + min((1 - ct) / (1 - k.c**k.iters) * 2 * k.step * k.M / k.b, 2 * k.R)


def next_z(k: Constants, z: float, K: int, zb: float, cap: bool = False) -> float:
    """Theorem 3.11: Z^{(s+1)} = c^{K_s n/b} Z^{(s)} + Z_B (min(., 2R) with ``cap``)."""
    z = k.c ** (K * k.iters) * z + zb
    return min(z, 2 * k.R) if cap else z


# ---------------------------------------------------------------------------------------------- Renyi bounds


def factor_loose(c: float, K_iters: int) -> float:
    """Lemma 3.4's PABI shift factor c^{2K'} after K' iterations."""
    return c ** (2 * K_iters)


def factor_tight(c: float, K_iters: int) -> float:
    """Optimal-shift PABI factor (1 - c^2) c^{2K'} / (1 - c^{2K'}) (Altschuler & Talwar 2022a; not in v1)."""
    c2k = c ** (2 * K_iters)
    return (1 - c * c) * c2k / (1 - c2k)


def factor(k: Constants, K_iters: int, variant: str = "paper", request: int = 1) -> float:
    """The variant's shift factor: paper always loose, code_b loose on request 1 then tight, code_c always tight."""
    name = variant_name(variant)
    if K_iters < 1:
        raise ValueError(f"K_iters = {K_iters}: at least one unlearning iteration is needed")
    tight = name == "code_c" or (name == "code_b" and request >= 2)
    return factor_tight(k.c, K_iters) if tight else factor_loose(k.c, K_iters)


def cor38_rdp(k: Constants, sigma: float, K: int, Z: float, alpha: float, variant: str = "paper",
              request: int = 1) -> float:
    """Cor. 3.8 (with Thm. 3.11's Z for later requests): eps(alpha) = alpha Z^2 / (2 eta sigma^2) F(K n/b)."""
    return alpha * Z * Z / (2 * k.step * sigma * sigma) * factor(k, K * k.iters, variant, request)


def thm32_rdp(k: Constants, sigma: float, K: int, T: int, alpha: float) -> float:
    """Theorem 3.2, finite burn-in T: (alpha - 1/2)/(alpha - 1) (eps1(2 alpha) + eps2(2 alpha)), with
    eps1(a) = a (2R)^2 / (2 eta sigma^2) c^{2Tn/b} and eps2(a) = a Z^2 / (2 eta sigma^2) c^{2Kn/b}."""
    scale = 2 * alpha / (2 * k.step * sigma * sigma)
    eps1 = scale * (2 * k.R) ** 2 * k.c ** (2 * T * k.iters)
    eps2 = scale * z_burn_in(k, T) ** 2 * k.c ** (2 * K * k.iters)
    return (alpha - 0.5) / (alpha - 1) * (eps1 + eps2)


# ---------------------------------------------------------------------------------------------- RDP -> DP


def eps_dp(rdp: Callable[[float], float], delta: float, alpha_lo: float, alpha_hi: float,
           grid: int = 48) -> float:
    """Prop. K.2 minimised over alpha: min_{alpha in [lo, hi]} rdp(alpha) + log(1/delta) / (alpha - 1).

    A grid log-spaced in alpha - 1, then a bounded Brent refinement between the best point's neighbours;
    returns the smaller of the two minima.
    """
    if not 1 < alpha_lo < alpha_hi:
        raise ValueError(f"alpha range [{alpha_lo}, {alpha_hi}]: need 1 < alpha_lo < alpha_hi")
    log_inv = math.log(1 / delta)

    def total(alpha: float) -> float:
        value = rdp(alpha) + log_inv / (alpha - 1)
        return value if value == value else math.inf  # nan (inf x 0 of an overflowed bound): not a certificate

    alphas = 1 + np.geomspace(alpha_lo - 1, alpha_hi - 1, grid)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowed bound is inf, which certifies nothing
        values = [total(float(a)) for a in alphas]
        best = int(np.argmin(values))
        lo, hi = float(alphas[max(best - 1, 0)]), float(alphas[min(best + 1, grid - 1)])
        from scipy.optimize import minimize_scalar  # here: scipy.optimize is a third of a second of every job's start

        refined = minimize_scalar(total, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9 * hi})
    return min(values[best], float(refined.fun))


def least_k(satisfied: Callable[[int], bool], start: int = 1, k_max: int = 10**7) -> int:
    """Least K >= 1 with ``satisfied(K)``, for a predicate monotone in K (false ... false true true ...).

    Exponential search from ``start`` (a hint, e.g. the previous request's K) and then bisection, so it
    returns exactly what ``K = 1; while not satisfied(K): K += 1`` would, in O(log K) evaluations.
    """
    start = max(1, start)
    if satisfied(start):
        good, step = start, 1
        while good > 1 and satisfied(max(1, good - step)):
            good, step = max(1, good - step), step * 2
        bad = 0 if good == 1 else max(1, good - step)  # not satisfied(bad), or bad == 0
    else:
        bad, step = start, 1
        while not satisfied(bad + step):
            bad, step = bad + step, step * 2
            if bad > k_max:
                raise ValueError(f"no K <= {k_max} reaches the target")
        good = bad + step
    while good - bad > 1:
        mid = (good + bad) // 2
        if satisfied(mid):
            good = mid
        else:
            bad = mid
    return good


# ---------------------------------------------------------------------------------------------- single request


def thm32_epsilon(k: Constants, sigma: float, K: int, T: int, delta: float,
                  alpha: tuple[float, float] = TABLE3_ALPHA) -> float:
    """(epsilon, delta) of K unlearning epochs after T burn-in epochs, Theorem 3.2 + Prop. K.2."""
    _check_run(k, sigma, K, delta, T)
    return eps_dp(lambda a: thm32_rdp(k, sigma, K, T, a), delta, *alpha)


def cor38_epsilon(k: Constants, sigma: float, K: int, delta: float, variant: str = "paper", request: int = 1,
                  Z: float | None = None, alpha: tuple[float, float] | None = None) -> float:
    """(epsilon, delta) of K unlearning epochs from a converged model, Cor. 3.8 + Prop. K.2 (Z defaults to Z_B)."""
    _check_run(k, sigma, K, delta)
    z = z_b(k, variant) if Z is None else Z
    lo, hi = alpha_range(variant) if alpha is None else alpha
    return eps_dp(lambda a: cor38_rdp(k, sigma, K, z, a, variant, request), delta, lo, hi)


def _check_run(k: Constants, sigma: float, K: int, delta: float, T: int | None = None) -> None:
    """sigma finite > 0 (`_check_sigma`), K >= 1 epochs, delta in (0, 1), burn-in T >= 0 epochs (or None)."""
    _check_sigma(k, sigma)
    integer("K", K, 1)
    probability("delta", delta)
    if T is not None:
        integer("burn-in T", T, 0)


def _check_sigma(k: Constants, sigma: float) -> float:
    """sigma finite > 0, with 2 eta sigma^2 (the Renyi bounds' denominator) not underflowing to 0, which the bound
    would divide by (sigma >= sqrt(2.2e-308 / (2 eta)), a normal 2 eta sigma^2, is enough)."""
    sigma = finite("sigma", sigma)
    if not 2 * k.step * sigma * sigma > 0:
        least = math.sqrt(FLOAT_TINY / (2 * k.step)) * (1 + 1e-9)
        raise ValueError(f"sigma = {sigma:g}: 2 eta sigma^2 (eta = {k.step:g}) underflows in the Renyi bound alpha "
                         f"Z^2 / (2 eta sigma^2); valid: sigma >= {least:.6g}")
    return sigma


def conversion_floor(delta: float, alpha_hi: float) -> float:
    """log(1/delta) / (alpha_hi - 1): Prop. K.2's epsilon as the Renyi bound goes to 0 (sigma or K -> infinity),
    the infimum of what any certificate of this package reaches with RDP orders up to alpha_hi."""
    return math.log(1 / delta) / (alpha_hi - 1)


def check_target(eps: float, delta: float, alpha_hi: float) -> None:
    """The target epsilon is finite, positive and above the RDP -> DP conversion's floor."""
    finite("epsilon", eps)
    probability("delta", delta)
    floor = conversion_floor(delta, alpha_hi)
    if eps <= floor:
        raise ValueError(f"epsilon = {eps:g}: no sigma or K reaches it; with delta = {delta:g} and Renyi orders up "
                         f"to {alpha_hi:g}, log(1/delta)/(alpha_max - 1) = {floor:.6g} is the least epsilon any "
                         f"certificate can state; valid: epsilon > {floor:.6g}")


def sigma_for_budget(k: Constants, eps_target: float, delta: float, K_hat: int = 1, T: int | None = None,
                     alpha: tuple[float, float] = TABLE3_ALPHA, bracket: tuple[float, float] = SIGMA_BRACKET,
                     tol: float = SIGMA_TOL) -> float:
    """Algorithm 4: bisection for the least sigma whose least K (Algorithm 5, Theorem 3.2) is <= K_hat.

    lo, hi = 1e-15, 10; halve until hi - lo <= 1e-8; return hi. T defaults to Table 2's burn-in. Since the
    bound falls with K, "least K <= K_hat" is tested as "epsilon(K_hat) <= target".
    """
    T = burn_in(k) if T is None else T
    check_target(eps_target, delta, alpha[1])
    return least_sigma(lambda sigma: thm32_epsilon(k, sigma, K_hat, T, delta, alpha) <= eps_target, bracket, tol,
                       target=f"epsilon {eps_target:g} (Theorem 3.2, K = {K_hat}, T = {T})")


def least_k_thm32(k: Constants, sigma: float, eps_target: float, delta: float, T: int | None = None,
                  alpha: tuple[float, float] = TABLE3_ALPHA) -> int:
    """Algorithm 5: least K with Theorem 3.2's (epsilon, delta) <= target (finite burn-in T, Table 2 default)."""
    T = burn_in(k) if T is None else T
    return least_k(lambda K: thm32_epsilon(k, sigma, K, T, delta, alpha) <= eps_target)


# ---------------------------------------------------------------------------------------------- sequential requests


def sequential_k(k: Constants, sigma: float, eps: float, delta: float, requests: int,
                 variant: str = "paper", S: int = 1) -> list[int]:
    """Least K_s for each of ``requests`` sequential requests (Algorithm 6 with Theorem 3.11's recursion).

    Z^{(1)} = Z_B, Z^{(s+1)} = c^{K_s n/b} Z^{(s)} + Z_B; K_s = least K with the variant's Cor. 3.8 bound
    alpha Z^{(s)2} / (2 eta sigma^2) F_s(K n/b) converted to (epsilon, delta) over the variant's alpha range.
    ``S`` > 1 replaces S points per request (Cor. 3.12's Z_B^{(S)}, paper / code_b only).
    """
    name = variant_name(variant)
    if S != 1 and name == "code_c":
        raise ValueError("code_c has no batch (S > 1) form")
    zb = z_b(k, name) if S == 1 else z_batch(k, S)
    lo, hi = alpha_range(name)
    ks: list[int] = []
    z = zb
    for s in range(1, requests + 1):
        if ks:
            z = next_z(k, z, ks[-1], zb)

        def ok(K: int, z: float = z, s: int = s) -> bool:
            return eps_dp(lambda a: cor38_rdp(k, sigma, K, z, a, name, s), delta, lo, hi) <= eps

        ks.append(least_k(ok, start=ks[-1] if ks else 1))
    return ks


def sequential_z(k: Constants, ks: list[int], variant: str = "paper") -> list[float]:
    """Theorem 3.11's Z^{(s)} for requests run with epochs ``ks`` (Z^{(1)} = Z_B)."""
    zb = z_b(k, variant)
    zs = [zb]
    for K in ks[:-1]:
        zs.append(next_z(k, zs[-1], K, zb))
    return zs


# ---------------------------------------------------------------------------------------------- certificates


@dataclass(frozen=True)
class Certificate:
    """An (epsilon, delta)-unlearning certificate: noise sigma, K unlearning epochs, epsilon achieved."""

    sigma: float
    K: int
    epsilon: float
    delta: float
    bound: str  # "thm3.2" (finite burn-in T) or "cor3.8" (converged learning)


def certificate_epsilon(k: Constants, sigma: float, K: int, delta: float, T: int | None = None,
                        variant: str = "paper") -> float:
    """Epsilon certified for one request by K epochs at noise sigma: Theorem 3.2 when the burn-in T is
    given (alpha in [2, 1e5]), else Cor. 3.8 (converged learning, the variant's Z_B, factor and alpha range)."""
    if T is not None:
        return thm32_epsilon(k, sigma, K, T, delta)
    return cor38_epsilon(k, sigma, K, delta, variant)


def certify_sigma(k: Constants, eps: float, delta: float, K: int = 1, T: int | None = None,
                  variant: str = "paper") -> Certificate:
    """Given epsilon, delta and K: the least sigma (Algorithm 4's bisection, its bracket widened where 10 is not
    enough) and the epsilon it achieves, which is <= eps. Bad input raises a one-line ValueError."""
    _check_certificate(k, eps, delta, T, variant)
    integer("K", K, 1)
    hi = least_sigma(lambda sigma: certificate_epsilon(k, sigma, K, delta, T, variant) <= eps,
                     target=f"epsilon {eps:g} with K = {K} ({_bound(T)})")
    return Certificate(hi, K, certificate_epsilon(k, hi, K, delta, T, variant), delta, _bound(T))


def certify_k(k: Constants, sigma: float, eps: float, delta: float, T: int | None = None,
              variant: str = "paper") -> Certificate:
    """Given sigma, epsilon and delta: the least K (Algorithm 5) and the epsilon it achieves, which is <= eps."""
    _check_certificate(k, eps, delta, T, variant)
    _check_sigma(k, sigma)
    try:
        K = least_k(lambda K: certificate_epsilon(k, sigma, K, delta, T, variant) <= eps)
    except ValueError as err:
        why = (f"after burn-in T = {T} the burn-in term (2R)^2 c^(2Tn/b) of Theorem 3.2 stays however large K is; "
               "valid: a larger burn-in T or sigma, or a larger epsilon") if T is not None else \
            "valid: a larger sigma or epsilon"
        raise ValueError(f"sigma = {sigma:g}, epsilon = {eps:g}: {err}; {why}") from None
    return Certificate(sigma, K, certificate_epsilon(k, sigma, K, delta, T, variant), delta, _bound(T))


def _check_certificate(k: Constants, eps: float, delta: float, T: int | None, variant: str) -> None:
    """What a certificate for one request needs: n a multiple of b (training drops the last n mod b points of
    each epoch, so the certificate is for the n it trains on), a valid target, delta and burn-in."""
    if k.n % k.b:
        raise ValueError(f"n = {k.n} is not a multiple of b = {k.b}: training drops the last n mod b = {k.n % k.b} "
                         f"points, so the certificate is for n = {k.n - k.n % k.b}; valid: n = {k.n - k.n % k.b} "
                         "(or a b that divides n)")
    if T is not None:
        integer("burn-in T", T, 0)
    alpha_hi = TABLE3_ALPHA[1] if T is not None else alpha_range(variant)[1]
    check_target(eps, delta, alpha_hi)


def _bound(T: int | None) -> str:
    return "cor3.8" if T is None else "thm3.2"
