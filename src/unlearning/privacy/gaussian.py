"""The Gaussian mechanism's (epsilon, beta)-indistinguishability (Qiao et al. 2025, Def. 4.3;
Bun & Steinke 2016,
as used by Neel et al. 2021 and FedRecovery's Algorithm 2, step 1).

N(mu1, sigma^2 I) and N(mu2, sigma^2 I) with ||mu1 - mu2|| <= Delta are (eps, beta)-indistinguishable for

    eps = Delta^2 / (2 sigma^2) + (Delta / sigma) sqrt(2 log(1/beta)),

equivalently  sigma = Delta / (sqrt(2) (sqrt(log(1/beta) + eps) - sqrt(log(1/beta)))).

Both stay inside the float range or refuse with a one-line ValueError: `epsilon` when (Delta/sigma)^2
overflows (naming sigma), `sigma_for` when the sigma overflows or underflows to 0, or when eps is above
EPSILON_MAX, where the round trip through `epsilon` would overflow (naming epsilon).
"""

from __future__ import annotations

import math

from .search import FLOAT_MAX, finite, probability

EPSILON_MAX = FLOAT_MAX / 4  # the sigma for eps has (Delta/sigma)^2 ~ 2 eps: a float up to here
RATIO_MAX = 1e154            # Delta/sigma up to here keeps (Delta/sigma)^2 a float (sqrt(FLOAT_MAX) = 1.34e154)


def epsilon(sensitivity: float, sigma: float, beta: float) -> float:
    """eps achieved by noise `sigma` for an l2 gap `sensitivity` at confidence `beta` (Def. 4.3)."""
    sensitivity = finite("sensitivity (d1)", sensitivity, strict=False)
    sigma, beta = finite("sigma", sigma), probability("beta", beta)
    ratio = sensitivity / sigma
    try:
        value = ratio**2 / 2 + ratio * math.sqrt(2 * math.log(1 / beta))
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"sigma = {sigma:g}: epsilon = (d1/sigma)^2/2 + (d1/sigma) sqrt(2 log(1/beta)) overflows for "
                         f"d1 = {sensitivity:g}; valid: sigma >= d1 / {RATIO_MAX:g} = {sensitivity / RATIO_MAX:.6g}")
    return value


def sigma_for(sensitivity: float, eps: float, beta: float) -> float:
    """The noise sigma that makes an l2 gap `sensitivity` (eps, beta)-indistinguishable (inverse of `epsilon`).

    The closed form can land one rounding step short of the target; the result is moved up by ulps
    until `epsilon(sensitivity, sigma, beta) <= eps`, so the printed sigma always certifies eps.
    """
    sensitivity = finite("sensitivity (d1)", sensitivity, strict=False)
    eps, beta = finite("epsilon", eps, high=EPSILON_MAX, high_strict=False), probability("beta", beta)
    log_term = math.log(1 / beta)
    gap = eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))  # = sqrt(log + eps) - sqrt(log), no cancellation
    if sensitivity == 0:
        return 0.0
    sigma = sensitivity / (math.sqrt(2) * gap) if gap > 0 else math.inf
    if not math.isfinite(sigma):
        raise ValueError(f"epsilon = {eps:g} with beta = {beta:g}: the noise it needs for d1 = {sensitivity:g} "
                         "overflows; valid: a larger epsilon or beta (or a smaller d1)")
    if sigma == 0:
        raise ValueError(f"epsilon = {eps:g} with beta = {beta:g}: the noise it needs for d1 = {sensitivity:g} "
                         "underflows to 0; valid: a smaller epsilon (or a larger d1)")
    for _ in range(64):
        if epsilon(sensitivity, sigma, beta) <= eps:
            return sigma
        sigma = math.nextafter(sigma, math.inf)
    raise ValueError(f"epsilon = {eps:g}: no sigma near {sigma:.6g} reaches it in floating point; "
                     "valid: a larger epsilon")
