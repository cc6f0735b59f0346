"""DU's noise calibration (Wu et al. 2026, Algorithm 1, Lemma 3 and Theorem 1).

The paper's formulas, as stated in Algorithm 1's header and Theorem 1:

    Delta F_c = 2 M L^2 m_c^2 / (lambda^3 n_c^2)            (Lemma 3, eq. 9; named Delta F in eq. 10)
    sigma_c   = (Delta F_c / epsilon) sqrt(2 ln(1.25 / delta))   (Algorithm 1; proof of Theorem 1)

M is the Hessian-Lipschitz constant, L the Lipschitz constant, lambda the strong convexity (the L2
strength of eq. 4), m_c of n_c samples deleted. The constants do not exist for non-convex networks and
are absurd even for logistic regression, so the default calibration writes the product 2 M L^2 / lambda^3
as one effective constant C_eff:

    sigma_c = (C_eff (m_c / n_c)^2 / epsilon) sqrt(2 ln(1.25 / delta)),   C_eff = 0.02064,

which gives sigma = 1e-3 at m/n = 0.1, epsilon = 1, delta = 1e-5. Client-wise removal (Sec. IV-C, no
formula in the paper) uses m/n -> 1/N: Delta F = 2 M L^2 / (lambda^3 N^2) (Lemma 3's argument applied
to the global objective, eq. 1, where the departing client has weight 1/N).

The classical Gaussian mechanism behind Theorem 1 (Dwork & Roth, Thm A.1) is proved for epsilon < 1;
at epsilon = 1 its exact delta is 4.1e-8, safe. Epsilon is accepted in (0, 1] and refused above.

Algorithm 1 adds (1/N) nu_c to every model, so a final model carries noise of std sigma sqrt(|C|) / N,
below the sigma that Theorem 1's Gaussian mechanism needs. `certified_noise_fix` scales each nu_c by
N / sqrt(|C|) so that the final model's noise std is exactly sigma (default off, as in the paper).

Every sigma and Delta F returned is a finite float, positive when the deletion is not empty: an epsilon whose
sigma overflows, or constants whose Delta F leaves the float range, are refused with a one-line ValueError.
"""

from __future__ import annotations

import math
import numbers

from .search import FLOAT_MAX, FLOAT_TINY, finite, in_float_range, integer, probability

C_EFF = 0.02064       # sigma = 1e-3 at m/n = 0.1, epsilon = 1, delta = 1e-5
EPSILON_MAX = 1.0     # the classical Gaussian mechanism's range (Dwork & Roth, Thm A.1)


def _epsilon(value: float) -> float:
    return finite("epsilon", value, 0.0, high=EPSILON_MAX, high_strict=False)


def _deletion(m: int, n: int) -> tuple[int, int]:
    """m_c (>= 0) deleted of n_c (>= 1) local samples, m <= n."""
    n = integer("n (local samples)", n, 1)
    m = integer("m (deleted samples)", m, 0)
    if m > n:
        raise ValueError(f"m (deleted samples) = {m}: more than n = {n} local samples; valid: 0 <= m <= n")
    return m, n


def deletion_ratio(m: int, n: int) -> float:
    """m_c / n_c, checked: integers with 0 <= m <= n and n >= 1."""
    m, n = _deletion(m, n)
    return m / n


def gaussian_factor(delta: float) -> float:
    """sqrt(2 ln(1.25 / delta)), the Gaussian mechanism's factor in sigma (Algorithm 1, Theorem 1)."""
    return math.sqrt(2 * math.log(1.25 / probability("delta", delta)))


def sensitivity(M: float, L: float, lam: float, m: int, n: int) -> float:
    """Delta F_c = 2 M L^2 m^2 / (lambda^3 n^2) (Lemma 3, eq. 9-10): the distance between the noiseless
    unlearned model and the retrained one, for m of n samples deleted at every client."""
    M, L, lam = finite("M", M), finite("L", L), finite("lambda", lam)
    m, n = _deletion(m, n)
    return in_float_range(lambda: 2 * M * L**2 * m**2 / (lam**3 * n**2), _constants(M, L, lam),
                          "Delta F = 2 M L^2 m^2 / (lambda^3 n^2)", VALID_CONSTANTS, positive=m > 0)


VALID_CONSTANTS = "M, L and lambda with 2 M L^2 / lambda^3 a finite positive float (L^2 and lambda^3 included)"


def _constants(M: float, L: float, lam: float) -> str:
    return f"sensitivity (Delta F) for M = {M:g}, L = {L:g}, lambda = {lam:g}"


def sensitivity_client(M: float, L: float, lam: float, clients: int) -> float:
    """Client-wise Delta F = 2 M L^2 / (lambda^3 N^2): eq. 9 with m/n -> 1/N (the departing client's
    weight in eq. 1); the paper calls client-wise removal a corollary and prints no formula."""
    M, L, lam = finite("M", M), finite("L", L), finite("lambda", lam)
    clients = integer("N (clients)", clients, 2)
    return in_float_range(lambda: 2 * M * L**2 / (lam**3 * clients**2), _constants(M, L, lam),
                          "Delta F = 2 M L^2 / (lambda^3 N^2)", VALID_CONSTANTS, positive=True)


def sigma(sensitivity_: float, epsilon: float, delta: float) -> float:
    """sigma_c = (Delta F_c / epsilon) sqrt(2 ln(1.25/delta)) (Algorithm 1; proof of Theorem 1)."""
    sensitivity_ = finite("sensitivity (Delta F)", sensitivity_, strict=False)
    epsilon = _epsilon(epsilon)
    factor = gaussian_factor(delta)
    value = sensitivity_ / epsilon * factor
    if math.isfinite(value) and (value > 0 or sensitivity_ == 0):
        return value
    if value == 0:  # a Delta F so small that sigma underflows
        raise ValueError(f"sensitivity (Delta F) = {sensitivity_:g}: sigma = Delta F sqrt(2 ln(1.25/delta)) / epsilon "
                         f"underflows to 0; valid: Delta F = 0 or >= {FLOAT_TINY:g}")
    least = sensitivity_ * factor / (FLOAT_MAX / 2)  # epsilon >= least keeps sigma <= FLOAT_MAX / 2
    if not least <= EPSILON_MAX:
        raise ValueError(f"sensitivity (Delta F) = {sensitivity_:g}: sigma = Delta F sqrt(2 ln(1.25/delta)) / epsilon "
                         f"overflows for every epsilon in (0, 1]; valid: Delta F <= {FLOAT_MAX / 2 / factor:.6g}")
    raise ValueError(f"epsilon = {epsilon:g}: sigma = Delta F sqrt(2 ln(1.25/delta)) / epsilon overflows for Delta F "
                     f"= {sensitivity_:g}; valid: epsilon in [{least:.6g}, {EPSILON_MAX:g}]")


def sigma_theory(M: float, L: float, lam: float, m: int, n: int, epsilon: float, delta: float) -> float:
    """Theorem 1's sigma from the loss constants (M, L, lambda) and the deletion (m of n)."""
    return sigma(sensitivity(M, L, lam, m, n), epsilon, delta)


def sigma_c_eff(ratio: float, epsilon: float, delta: float, c_eff: float = C_EFF) -> float:
    """sigma = (C_eff ratio^2 / epsilon) sqrt(2 ln(1.25/delta)), with ratio = m_c/n_c (sample- and class-wise)
    or 1/N (client-wise), and C_eff standing for 2 M L^2 / lambda^3 of eq. 9."""
    return sigma(sensitivity_c_eff(c_eff, ratio), epsilon, delta)


def sensitivity_c_eff(c_eff: float, ratio: float) -> float:
    """Delta F = C_eff ratio^2 (ratio = m_c/n_c or 1/N): a finite float, positive when ratio is."""
    ratio = finite("m/n (deleted fraction)", ratio, 0.0, strict=False, high=1.0, high_strict=False)
    c_eff = finite("c_eff", c_eff)
    return in_float_range(lambda: c_eff * ratio**2, f"c_eff = {c_eff:g}", f"Delta F = C_eff ({ratio:g})^2",
                          "a larger c_eff (Delta F at least the least float)", positive=ratio > 0)


def c_eff_for(target_sigma: float, ratio: float, epsilon: float, delta: float) -> float:
    """The C_eff that gives `target_sigma` at deleted fraction `ratio` (0.02064 for 1e-3 at 0.1, eps 1, delta 1e-5)."""
    target_sigma = finite("sigma", target_sigma)
    ratio = finite("m/n (deleted fraction)", ratio, 0.0, high=1.0, high_strict=False)
    return target_sigma * _epsilon(epsilon) / (ratio**2 * gaussian_factor(delta))


def epsilon_for(sigma_: float, sensitivity_: float, delta: float) -> float:
    """The epsilon that noise `sigma_` buys for sensitivity Delta F (Theorem 1's sigma solved for epsilon).

    Refused (ValueError) when it exceeds 1, where the classical Gaussian bound is not proved."""
    sigma_ = finite("sigma", sigma_)
    sensitivity_ = finite("sensitivity (Delta F)", sensitivity_, strict=False)
    eps = sensitivity_ * gaussian_factor(delta) / sigma_
    if eps > EPSILON_MAX:
        least = sensitivity_ * gaussian_factor(delta) / EPSILON_MAX
        raise ValueError(f"sigma = {sigma_:g} buys epsilon = {eps:.6g} > 1, where the classical Gaussian bound "
                         f"(Theorem 1) is not proved; valid: sigma >= {least:.6g}")
    return eps


def noise_scale(clients: int, requesters: int, certified_noise_fix: bool) -> float:
    """The factor on each nu_c: N / sqrt(|C|) with `certified_noise_fix` (then every final model's noise,
    (1/N) sum_c nu_c, has std sigma), else 1 (Algorithm 1 as printed)."""
    if not isinstance(certified_noise_fix, bool):
        raise ValueError(f"certified_noise_fix = {certified_noise_fix!r}: valid: true or false")
    clients = integer("N (clients)", clients, 1)
    requesters = integer("|C| (requesting clients)", requesters, 1)
    if requesters > clients:
        raise ValueError(f"|C| (requesting clients) = {requesters}: more than N = {clients}; valid: 1 <= |C| <= N")
    return clients / math.sqrt(requesters) if certified_noise_fix else 1.0


def final_noise_std(sigma_: float, clients: int, requesters: int, certified_noise_fix: bool) -> float:
    """The std of (1/N) sum_{c in C} scale nu_c that every final model carries (equal sigma per requester)."""
    if not isinstance(sigma_, numbers.Real) or sigma_ < 0:
        raise ValueError(f"sigma = {sigma_!r}: valid: a number >= 0")
    return sigma_ * noise_scale(clients, requesters, certified_noise_fix) * math.sqrt(requesters) / clients
