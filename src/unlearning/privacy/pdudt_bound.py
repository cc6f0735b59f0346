"""PDUDT's Theorem 4.9: the bound d1 on E||avg_i theta-bar_i - avg_i theta-tilde_i|| (spec section 3).

d1 = sqrt(I1 s1 + I2 s2 + I3 df_n + I4 df_{n-1}) + sqrt(I1' s1 + I2' s2 + I3' df_n), with s1, s2 the
gradient variance and heterogeneity (Assumption 4.6) and df the optimality gaps of Lemma B.1. The
paper prints D2 in I2' where the derivation gives D1 (spec 7-T): `i2_prime_denominator` picks which.
Inputs whose powers (up to eta^5 L^3 t1^4) leave the float range are refused with a one-line ValueError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .search import finite, in_float_range, integer

VALID = "inputs whose products in Theorem 4.9 (up to eta^5 L^3 n^2 t1^4) stay finite floats"


@dataclass(frozen=True)
class BoundInputs:
    eta: float        # step size
    L: float          # smoothness (Assumption 4.5)
    n: int            # clients before removal
    t1: int           # round of the request
    rho1: float       # max_t spectral quantity of W^t (Assumption 4.8)
    rho2: float       # max_t spectral quantity of W-tilde^t
    sigma1_sq: float  # gradient variance
    sigma2_sq: float  # gradient heterogeneity
    df_n: float       # E f(theta^0) - E f(avg theta^{t1})
    df_n1: float      # E f(theta^0) - E f-bar(avg theta-tilde^{t1})

    def __post_init__(self) -> None:
        """Every input finite: eta, L > 0; n >= 2 clients (one is removed); t1 >= 1; the rest >= 0."""
        finite("eta", self.eta)
        finite("L", self.L)
        integer("n", self.n, 2)
        integer("t1", self.t1, 1)
        for name in ("rho1", "rho2", "sigma1_sq", "sigma2_sq", "df_n", "df_n1"):
            finite(name, getattr(self, name), strict=False)


def step_size_limit(L: float, n: int, t1: int, rho1: float, rho2: float) -> float:
    """eta must lie below this for Lemmas B.1, B.2 and Theorem 4.9 (a positive float, or a one-line ValueError)."""
    def limit() -> float:
        limits = [math.sqrt(1 / (12 * L**2 * t1**2))]
        if rho1 > 0:
            limits.append(math.sqrt(1 / (24 * L**2 * rho1**2 * n * t1)))
        if rho2 > 0:
            limits.append(math.sqrt(1 / (36 * L**2 * rho2**2 * (n - 1) * t1)))
        return min(limits)

    return in_float_range(limit, f"L = {L:g}, rho1 = {rho1:g}, rho2 = {rho2:g}, n = {n}, t1 = {t1}",
                          "Theorem 4.9's step-size limit", VALID, positive=True)


def d1_bound(x: BoundInputs, i2_prime_denominator: str = "D2") -> float:
    """Theorem 4.9's d1 as printed (I2' over D2), or with the derived D1 (`i2_prime_denominator="D1"`)."""
    if i2_prime_denominator not in ("D1", "D2"):
        raise ValueError(f"i2_prime_denominator = {i2_prime_denominator!r}: valid: 'D1', 'D2'")
    limit = step_size_limit(x.L, x.n, x.t1, x.rho1, x.rho2)
    if not 0 < x.eta < limit:
        raise ValueError(f"eta = {x.eta}: Theorem 4.9 needs 0 < eta < {limit:.6g} for these L, n, t1, rho")
    return in_float_range(lambda: _d1(x, i2_prime_denominator),
                          f"L = {x.L:g}, eta = {x.eta:g}, rho1 = {x.rho1:g}, rho2 = {x.rho2:g}, n = {x.n}, "
                          f"t1 = {x.t1}, sigma1_sq = {x.sigma1_sq:g}, sigma2_sq = {x.sigma2_sq:g}, df_n = {x.df_n:g}, "
                          f"df_n1 = {x.df_n1:g}", "Theorem 4.9's d1", VALID)


def _d1(x: BoundInputs, i2_prime_denominator: str) -> float:
    eta, L, n, t1, r1, r2 = x.eta, x.L, x.n, x.t1, x.rho1**2, x.rho2**2  # r1, r2 are rho squared
    D1 = 1 - 24 * eta**2 * L**2 * r1 * n * t1
    D2 = 1 - 36 * eta**2 * L**2 * r2 * (n - 1) * t1
    D3 = r1 + r2 + 1 / (n - 1) ** 2
    E1 = (6 + 4 * r1) * r1 / D1
    E2 = r2 / D2
    E3 = 8 * (1 + r1) * r1 / (n * D1)
    I1 = ((24 * eta**4 * L**2 * n * t1**4 + 144 * eta**5 * L**3 * t1**4) * (E1 + E2 + E3)
          + 8 * eta**2 * (5 + 2 * r1) * t1**3)
    I2 = 144 * eta**4 * L**2 * n * t1**4 * (E1 + 3 * E2 + 2 * E3) + 48 * eta**2 * (1 + r1) * t1**3
    I3 = 288 * eta**3 * L**2 * n * t1**3 * (E1 + E3) + 192 * eta * (1 + r1) * t1**2 / n
    I4 = 288 * eta**3 * L**2 * n * t1**3 * E2
    Ip1 = 6 * (eta**2 * n + 3 * eta**3 * L + 12 * eta**4 * L**2 * r1 * n**2 * t1 / D1
               + 72 * eta**5 * L**3 * r1 * n * t1 / D1) * D3 * t1**2
    Ip2 = (18 * eta**2 * n + 432 * eta**4 * L**2 * r1 * n**2 * t1 / (D2 if i2_prime_denominator == "D2" else D1)) \
        * D3 * t1**2
    Ip3 = (36 * eta * n * t1 + 864 * eta**3 * L**2 * r1 * n**2 * t1**2 / D1) * D3
    before = I1 * x.sigma1_sq + I2 * x.sigma2_sq + I3 * x.df_n + I4 * x.df_n1
    correction = Ip1 * x.sigma1_sq + Ip2 * x.sigma2_sq + Ip3 * x.df_n
    return math.sqrt(before) + math.sqrt(correction)
