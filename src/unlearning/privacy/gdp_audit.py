"""A parametric audit for Gaussian mechanisms (Gaussian differential privacy, GDP), beside the Clopper-Pearson one
of audit.py, and the power of both audits by simulation of the design that ran (issue 56).

A mechanism that adds N(0, sigma^2 I) around two outputs a gap apart is mu-GDP with mu = gap / sigma (Dong, Roth
and Su 2022): every test between its two output distributions trades off as N(0, 1) against N(mu, 1), and its
exact epsilon at delta is audit.exact_epsilon(mu, 1, delta). A score linear in the output (the canary's margin
y_c w.x_c) is then Gaussian on each side with one variance and means mu standard deviations apart. Fitting the two
score distributions bounds mu, then epsilon, far tighter than counting one threshold's errors (the GDP method of
Nasr et al. 2023, "Tight auditing of differentially private machine learning"): with n runs a side, the statistic
t = (mean_p - mean_q) / (s_pooled sqrt(2 / n)) follows a noncentral t with 2n - 2 degrees of freedom and
noncentrality mu sqrt(n / 2), so the noncentrality whose `confidence` quantile is the observed t bounds mu from
below with exactly that confidence (scipy.stats.nct).

The bound is valid only where the scores are Gaussian with one variance: each side passes a Shapiro-Wilk test and
the two variances an F test, each at FIT_ALPHA. Where one fails the row falls back to Clopper-Pearson and says so.
As in audit.py, the first half of the runs is not used for the bound: it picks the direction (which side scores
higher), the second half gives the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.optimize import brentq

from . import audit

FIT_ALPHA = 0.01  # a side's Shapiro-Wilk test or the variances' F test below this: not Gaussian, fall back


@dataclass(frozen=True)
class GaussianFit:
    """The second half's two-sample statistic and its fit checks (what the bound at any confidence needs)."""

    t: float                # (mean_p - mean_q) / (s_pooled sqrt(2 / n)), oriented by the first half
    runs: int               # runs a side in the second half
    shapiro_p: tuple[float, float]
    variance_p: float       # two-sided F test of equal variances
    mu_point: float         # the fitted mu, (mean_p - mean_q) / s_pooled

    @property
    def gaussian(self) -> bool:
        return min(*self.shapiro_p, self.variance_p) >= FIT_ALPHA

    def check(self) -> str:
        """The fit check in words, with its numbers."""
        verdict = "Gaussian with one variance" if self.gaussian else "not Gaussian with one variance"
        return (f"{verdict} (Shapiro-Wilk p = {self.shapiro_p[0]:.2g} and {self.shapiro_p[1]:.2g}, equal-variance "
                f"F test p = {self.variance_p:.2g}; each needs >= {FIT_ALPHA:g})")

    def as_dict(self) -> dict:
        return {"t": self.t, "runs_per_side": self.runs, "shapiro_p": list(self.shapiro_p),
                "variance_p": self.variance_p, "mu_point": self.mu_point}

    @classmethod
    def from_dict(cls, d: dict) -> "GaussianFit":
        return cls(d["t"], d["runs_per_side"], tuple(d["shapiro_p"]), d["variance_p"], d["mu_point"])


def fit(scores_p, scores_q) -> GaussianFit:
    """The Gaussian fit of two equal-size score samples: the first half orients (the side whose mean is higher
    plays P), the second half gives the statistic and the checks."""
    p, q = np.asarray(scores_p, float), np.asarray(scores_q, float)
    if len(p) != len(q) or len(p) < 8:
        raise ValueError(f"gdp audit: {len(p)} and {len(q)} runs; valid: the same number >= 8 per side")
    if not (np.isfinite(p).all() and np.isfinite(q).all()):
        raise ValueError("gdp audit: some scores are not finite (a loss of exactly 0 or infinity)")
    half = len(p) // 2
    sign = 1.0 if p[:half].mean() >= q[:half].mean() else -1.0
    p2, q2 = sign * p[half:], sign * q[half:]
    n = len(p2)
    pooled = math.sqrt((p2.var(ddof=1) + q2.var(ddof=1)) / 2)
    diff = p2.mean() - q2.mean()
    if pooled == 0:
        raise ValueError("gdp audit: every score is the same; no distribution to fit")
    ratio = p2.var(ddof=1) / q2.var(ddof=1)
    f_p = 2 * min(stats.f.cdf(ratio, n - 1, n - 1), stats.f.sf(ratio, n - 1, n - 1))
    return GaussianFit(float(diff / (pooled * math.sqrt(2 / n))), n,
                       (float(stats.shapiro(p2).pvalue), float(stats.shapiro(q2).pvalue)), float(min(1.0, f_p)),
                       float(diff / pooled))


def log_odds(loss) -> np.ndarray:
    """The log-odds of the true label from a binary classifier's cross-entropy loss l = -log p: log(p / (1 - p)) =
    -log(expm1(l)), the margin y w.x of a logistic model. A monotone transform of the audit's score (the same
    thresholds), linear in the weights of a linear model, so Gaussian around a Gaussian mechanism's outputs."""
    with np.errstate(divide="ignore"):
        return -np.log(np.expm1(np.asarray(loss, float)))


def mu_lower(t: float, runs: int, confidence: float) -> float:
    """The lower confidence bound on mu from the statistic `t` with `runs` runs a side: the noncentrality at which
    `t` is the noncentral t's `confidence` quantile (a larger one makes so large a t likelier than 1 - confidence),
    over sqrt(runs / 2); 0 where even mu = 0 explains it."""
    if not 0 < confidence < 1:
        raise ValueError(f"gdp audit: confidence = {confidence!r}; valid: in (0, 1)")
    df, scale = 2 * runs - 2, math.sqrt(runs / 2)
    if stats.t.cdf(t, df) <= confidence:  # t is not beyond mu = 0's quantile
        return 0.0
    hi = max(2 * t, 1.0)
    while stats.nct.cdf(t, df, hi) > confidence:  # the cdf at t falls as the noncentrality grows
        hi *= 2
    return float(brentq(lambda nc: stats.nct.cdf(t, df, nc) - confidence, 0.0, hi, xtol=1e-10)) / scale


def epsilon_from_mu(mu: float, delta: float) -> float:
    """The epsilon at `delta` of a mu-GDP mechanism (audit.exact_epsilon with gap mu and sigma 1)."""
    return 0.0 if mu <= 0 else audit.exact_epsilon(mu, 1.0, delta)


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The mu at which a mu-GDP mechanism has exactly `epsilon` at `delta` (the inverse of epsilon_from_mu)."""
    return 1.0 / audit.exact_sigma(epsilon, 1.0, delta)


def epsilon_lower(fit_: GaussianFit, delta: float, confidence: float) -> float:
    """The GDP audit's epsilon lower bound at `confidence` (None-free: valid only where fit_.gaussian)."""
    return epsilon_from_mu(mu_lower(fit_.t, fit_.runs, confidence), delta)


# --- power: of the GDP audit exactly, of the Clopper-Pearson one by simulation of the design -----------------------


def _cp_bounds(trials: int, per_rate: float) -> np.ndarray:
    """Clopper-Pearson upper bounds of k events in `trials`, k = 0..trials (audit.clopper_pearson_upper)."""
    k = np.arange(trials + 1)
    out = np.ones(trials + 1)
    out[:-1] = stats.beta.ppf(per_rate, k[:-1] + 1, trials - k[:-1])
    return out


def _cp_epsilon(fp: np.ndarray, fn: np.ndarray, ub: np.ndarray, delta: float) -> np.ndarray:
    """audit.epsilon_from_rates on the rates' upper bounds, vectorised over counts."""
    a, b = ub[fp], ub[fn]
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.where((1 - delta - b > 0), np.log(np.maximum(1 - delta - b, 1e-300) / a), 0.0)
        two = np.where((1 - delta - a > 0), np.log(np.maximum(1 - delta - a, 1e-300) / b), 0.0)
    return np.maximum(np.maximum(one, two), 0.0)


def gdp_power(mu: float, runs: int, claim: float, delta: float, confidence: float) -> float:
    """The probability that the GDP audit as run (`runs` per side: the first half orients, the second bounds at
    `confidence`) bounds epsilon above `claim` when the mechanism is mu-GDP, exactly: the bound exceeds the claim's
    mu when the oriented t exceeds the noncentral t's `confidence` quantile at the claim's noncentrality, and the
    first half orients it rightly with probability Phi(mu sqrt(half / 2))."""
    half, n = runs // 2, runs - runs // 2
    df, scale = 2 * n - 2, math.sqrt(n / 2)
    target = mu_for_epsilon(claim, delta)
    crit = stats.nct.ppf(confidence, df, target * scale)
    right = stats.norm.cdf(mu * math.sqrt(half / 2))
    return float(right * stats.nct.sf(crit, df, mu * scale) + (1 - right) * stats.nct.sf(crit, df, -mu * scale))


def cp_power(mu: float, runs: int, claim: float, delta: float, confidence: float, audits: int = 200,
             seed: int = 0) -> float:
    """The probability that the Clopper-Pearson audit as run (audit.best_threshold on the first half of `runs` a
    side, audit.epsilon_lower_bound at `confidence` on the second) bounds epsilon above `claim` when the mechanism is
    mu-GDP: the share of `audits` simulated audits of scores N(mu, 1) against N(0, 1) that do (seeded)."""
    rng = np.random.default_rng(seed)
    half = runs // 2
    per_rate = 1 - (1 - confidence) / 2
    ub_first, ub_second = _cp_bounds(half, per_rate), _cp_bounds(runs - half, per_rate)
    hits = 0
    for _ in range(audits):
        p, q = rng.standard_normal(runs) + mu, rng.standard_normal(runs)
        p1, q1 = np.sort(p[:half]), np.sort(q[:half])
        cuts = np.unique(np.r_[p1, q1])
        fps = half - np.searchsorted(q1, cuts, side="left")
        fns = np.searchsorted(p1, cuts, side="left")
        cut = cuts[int(np.argmax(_cp_epsilon(fps, fns, ub_first, delta)))]
        fp, fn = int((q[half:] >= cut).sum()), int((p[half:] < cut).sum())
        hits += bool(_cp_epsilon(np.array([fp]), np.array([fn]), ub_second, delta)[0] > claim)
    return hits / audits


def runs_for_power(mu: float, claim: float, delta: float, confidence: float, power: float = 0.9) -> int:
    """About how many runs a side the GDP audit needs to bound epsilon above `claim` with probability `power`
    when the mechanism is mu-GDP (normal approximation of the fitted mu: its standard error at n runs in the bound's
    half is sqrt(2 / n + mu^2 / (4 n))); the design's runs are twice that (half choose the direction)."""
    target = mu_for_epsilon(claim, delta)
    if mu <= target:
        return math.inf
    z = stats.norm.isf(1 - confidence) + stats.norm.isf(1 - power)
    n = (2 + mu * mu / 4) * (z / (mu - target)) ** 2
    return 2 * math.ceil(n)
