"""An empirical lower bound on epsilon from a distinguisher's guesses (the auditing recipe of Jagielski, Ullman and
Oprea, NeurIPS 2020, Sec. 3-4, and Nasr et al., IEEE S&P 2021).

An (epsilon, delta) guarantee between two output distributions P (say, the unlearning method's) and Q (retraining's)
bounds every test that tells them apart: for any rejection region, FPR and FNR (P's outputs guessed as Q's and the
reverse) satisfy 1 - delta - FNR <= e^epsilon FPR and 1 - delta - FPR <= e^epsilon FNR. So

    epsilon >= max( ln((1 - delta - FNR) / FPR), ln((1 - delta - FPR) / FNR) ).

From `trials` independent runs per side the rates are only estimated: each is replaced by its Clopper-Pearson upper
bound (scipy's beta quantiles), each at confidence 1 - alpha/2, so that the bound holds with probability at least
1 - alpha (a union bound). A bound of 0 means the runs show nothing the certificate forbids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .r2d_noise import analytic_delta, analytic_sigma

# an audit's verdict words (it never says "holds"): the claim is exceeded, or nothing here exceeded it
VIOLATED, NOT_FAULTED = "violated", "not faulted"


def clopper_pearson_upper(k: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson upper bound on a rate from k events in n trials (1 when k = n)."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"audit: {k} events in {n} trials; valid: 0 <= k <= n, n >= 1")
    if not 0 < confidence < 1:
        raise ValueError(f"audit: confidence = {confidence!r}; valid: in (0, 1)")
    from scipy.stats import beta  # here: scipy.stats is a second of the start of every job that imports this module

    return 1.0 if k == n else float(beta.ppf(confidence, k + 1, n - k))


def clopper_pearson_lower(k: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson lower bound on a rate from k events in n trials (0 when k = 0)."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"audit: {k} events in {n} trials; valid: 0 <= k <= n, n >= 1")
    from scipy.stats import beta

    return 0.0 if k == 0 else float(beta.ppf(1 - confidence, k, n - k + 1))


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """The epsilon an (epsilon, delta) guarantee needs to allow a test with these error rates (0 if any allows)."""
    if not 0 <= delta < 1:
        raise ValueError(f"audit: delta = {delta!r}; valid: in [0, 1)")
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        num = 1 - delta - b
        if num > 0:
            best = max(best, math.inf if a == 0 else math.log(num / a))
    return best


@dataclass(frozen=True)
class AuditBound:
    epsilon_lower: float      # the bound at the stated confidence (from the rates' upper bounds)
    epsilon_point: float      # the same formula on the observed rates (no confidence)
    epsilon_upper: float      # the same formula on the rates' lower bounds: with epsilon_lower, the confidence
                              # interval of the epsilon this threshold's exact rates imply
    false_positives: int
    false_negatives: int
    trials: int               # runs per side
    confidence: float


def epsilon_lower_bound(false_positives: int, false_negatives: int, trials: int, delta: float,
                        confidence: float = 0.95) -> AuditBound:
    """The audit's epsilon lower bound from one distinguisher threshold: `false_positives` of `trials` runs of Q
    flagged as P, `false_negatives` of `trials` runs of P flagged as Q; holds with probability >= `confidence`."""
    per_rate = 1 - (1 - confidence) / 2
    fpr_hi = clopper_pearson_upper(false_positives, trials, per_rate)
    fnr_hi = clopper_pearson_upper(false_negatives, trials, per_rate)
    fpr_lo = clopper_pearson_lower(false_positives, trials, per_rate)
    fnr_lo = clopper_pearson_lower(false_negatives, trials, per_rate)
    return AuditBound(epsilon_from_rates(fpr_hi, fnr_hi, delta),
                      epsilon_from_rates(false_positives / trials, false_negatives / trials, delta),
                      epsilon_from_rates(fpr_lo, fnr_lo, delta),
                      false_positives, false_negatives, trials, confidence)


def best_threshold(scores_p, scores_q, delta: float, confidence: float = 0.95) -> tuple[float, AuditBound]:
    """The threshold of a score (higher = more like P; a run at or above it is guessed P) whose bound is largest,
    and that bound, from equal run counts per side. Choosing the threshold on the same runs makes the confidence
    optimistic; audits pick it on a separate set of runs (as Jagielski et al. do) and pass the other runs' counts
    to epsilon_lower_bound."""
    if len(scores_p) != len(scores_q) or not len(scores_p):
        raise ValueError(f"audit: {len(scores_p)} and {len(scores_q)} runs; valid: the same number > 0 per side")
    import numpy as np

    p, q = np.sort(np.asarray(scores_p, float)), np.sort(np.asarray(scores_q, float))
    cuts = np.unique(np.r_[p, q])
    fps = len(q) - np.searchsorted(q, cuts, side="left")  # runs of Q at or above the cut
    fns = np.searchsorted(p, cuts, side="left")           # runs of P below it
    best = None
    for cut, fp, fn in zip(cuts.tolist(), fps.tolist(), fns.tolist()):
        bound = epsilon_lower_bound(fp, fn, len(p), delta, confidence)
        if best is None or bound.epsilon_lower > best[1].epsilon_lower:
            best = (cut, bound)
    return best


def best_threshold_bound(scores_p, scores_q, delta: float, confidence: float = 0.95) -> AuditBound:
    """The largest lower bound over the thresholds of a score (best_threshold's bound)."""
    return best_threshold(scores_p, scores_q, delta, confidence)[1]


def gaussian_delta(epsilon: float, mu: float) -> float:
    """The exact delta at `epsilon` between N(0, 1) and N(mu, 1), i.e. two Gaussians of std sigma whose means are
    mu sigma apart (Balle & Wang 2018, Theorem 8; r2d_noise.analytic_delta at sigma 1, sensitivity mu)."""
    return 0.0 if mu <= 0 else max(0.0, analytic_delta(epsilon, 1.0, mu))


def exact_epsilon(gap: float, sigma: float, delta: float) -> float:
    """The exact epsilon at `delta` of the pair N(m1, sigma^2 I), N(m2, sigma^2 I) with ||m1 - m2|| = `gap`: the
    least epsilon >= 0 with gaussian_delta(epsilon, gap / sigma) <= delta. It is what a mechanism that adds Gaussian
    noise around two fixed (noiseless) outputs achieves on that pair, exactly; an audit's lower bound can only
    approach it."""
    if not 0 < delta < 1:
        raise ValueError(f"audit: delta = {delta!r}; valid: in (0, 1)")
    if gap < 0 or not sigma > 0:
        raise ValueError(f"audit: gap = {gap!r}, sigma = {sigma!r}; valid: gap >= 0, sigma > 0")
    mu = gap / sigma
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf
    from scipy.optimize import brentq

    return float(brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-14))


def exact_sigma(epsilon: float, gap: float, delta: float) -> float:
    """The noise sigma at which the pair N(m1, sigma^2 I), N(m2, sigma^2 I) with ||m1 - m2|| = `gap` has exact
    epsilon `epsilon` at `delta` (the inverse of exact_epsilon): the analytic Gaussian mechanism's sigma for
    sensitivity `gap` (Balle & Wang 2018, Theorem 8). A positive control sets its noise by it."""
    if not gap > 0:
        raise ValueError(f"audit: gap = {gap!r}; valid: > 0 (identical outputs have epsilon 0 at every sigma)")
    return analytic_sigma(epsilon, delta, gap)
