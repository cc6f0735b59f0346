"""The Gaussian mechanism's (epsilon, beta)-indistinguishability (PDUDT Def. 4.3; Bun & Steinke 2016,
as used by Neel et al. 2021 and FedRecovery's Algorithm 2, step 1).

N(mu1, sigma^2 I) and N(mu2, sigma^2 I) with ||mu1 - mu2|| <= Delta are (eps, beta)-indistinguishable for

    eps = Delta^2 / (2 sigma^2) + (Delta / sigma) sqrt(2 log(1/beta)),

equivalently  sigma = Delta / (sqrt(2) (sqrt(log(1/beta) + eps) - sqrt(log(1/beta)))).
"""

from __future__ import annotations

import math


def _check(name: str, value: float, low: float = 0.0, high: float = math.inf) -> None:
    if not (low < value < high):
        raise ValueError(f"{name} = {value}: valid values lie in ({low}, {high})")


def epsilon(sensitivity: float, sigma: float, beta: float) -> float:
    """eps achieved by noise `sigma` for an l2 gap `sensitivity` at confidence `beta` (Def. 4.3)."""
    _check("sigma", sigma)
    _check("beta", beta, 0.0, 1.0)
    if sensitivity < 0:
        raise ValueError(f"sensitivity = {sensitivity}: valid values are >= 0")
    ratio = sensitivity / sigma
    return ratio**2 / 2 + ratio * math.sqrt(2 * math.log(1 / beta))


def sigma_for(sensitivity: float, eps: float, beta: float) -> float:
    """The noise sigma that makes an l2 gap `sensitivity` (eps, beta)-indistinguishable (inverse of `epsilon`)."""
    _check("epsilon", eps)
    _check("beta", beta, 0.0, 1.0)
    if sensitivity < 0:
        raise ValueError(f"sensitivity = {sensitivity}: valid values are >= 0")
    log_term = math.log(1 / beta)
    return sensitivity / (math.sqrt(2) * (math.sqrt(log_term + eps) - math.sqrt(log_term)))
