"""A parametric audit for mechanisms whose audit score is Gaussian on each side (Gaussian differential privacy,
GDP; Nasr et al. 2023, "Tight auditing of differentially private machine learning"), beside the distribution-free
Clopper-Pearson one of audit.py, and the power of the audit as it runs (issues 56 and 68).

A mechanism that adds N(0, sigma^2 I) around two outputs a gap apart is mu-GDP with mu = gap / sigma (Dong, Roth
and Su 2022); a score linear in its output (the released parameters projected on a direction, or a linear model's
margin on the canary) is then N(m_p, s^2) on one side and N(m_q, s^2) on the other. More generally, for any two
Gaussian score distributions P = N(d, r^2) and Q = N(0, 1) (standardised by Q), the exact epsilon at delta of the
pair (pair_epsilon) is at least

- the epsilon of mu-GDP at mu = |d| / sqrt((1 + r^2) / 2), the mean difference over the pooled standard deviation
  (the "shift" bound), and
- the epsilon of N(0, r^2) against N(0, 1), the spread alone (the "spread" bound),

two inequalities checked on a grid of (d, r) in tests/test_gdp_audit.py (by post-processing, the score's epsilon
is at most the mechanism's). The audit bounds both from all runs, each at confidence 1 - alpha/2, each two-sided
(both tails at alpha/4, so no run is spent choosing a direction): the shift by inverting the noncentral t of
Welch's statistic t = (mean_p - mean_q) / sqrt((s_p^2 + s_q^2) / n) (noncentrality mu sqrt(n / 2),
Welch-Satterthwaite degrees of freedom), the spread by the F distribution of s_p^2 / s_q^2. Their maximum bounds
epsilon with confidence 1 - alpha wherever both sides' scores are Gaussian.

Where the mechanism is not known to give Gaussian scores (a noisy-GD chain, a nonlinear model's log-odds, an
accountant's claim), this bound extrapolates a 4-sigma tail that 500 runs cannot check: a logistic or a
Gaussian-plus-Laplace mechanism inside its claim is then faulted far above the nominal rate. There the audit
faults only where the Clopper-Pearson bound (valid for any distribution) agrees (`robust`). Shapiro-Wilk's p on each
side is reported (`check`), not used to choose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.optimize import brentq
from scipy.special import ndtr

from . import audit

FIT_ALPHA = 0.01  # a side's Shapiro-Wilk p below this: its scores are reported as not Gaussian


@dataclass(frozen=True)
class GaussianFit:
    """Two equal-size score samples' sufficient statistics over all runs (what the bound at any confidence and the
    power at the measured separation need), and each side's Shapiro-Wilk p."""

    runs: int               # runs a side
    mean_diff: float        # mean_p - mean_q
    var_p: float            # sample variances (ddof 1)
    var_q: float
    shapiro_p: tuple[float, float]

    @property
    def t(self) -> float:
        """Welch's statistic (with equal runs a side, the pooled two-sample t)."""
        return self.mean_diff / math.sqrt((self.var_p + self.var_q) / self.runs)

    @property
    def df(self) -> float:
        """Welch-Satterthwaite degrees of freedom (2n - 2 at equal variances)."""
        return welch_df(self.var_p, self.var_q, self.runs)

    @property
    def mu_point(self) -> float:
        """The measured separation: the mean difference over the pooled standard deviation."""
        return self.mean_diff / math.sqrt((self.var_p + self.var_q) / 2)

    @property
    def ratio(self) -> float:
        """The measured standard-deviation ratio s_p / s_q."""
        return math.sqrt(self.var_p / self.var_q)

    @property
    def gaussian(self) -> bool:
        return min(self.shapiro_p) >= FIT_ALPHA

    def check(self) -> str:
        """The shape check in words, with its numbers."""
        shape = "Gaussian" if self.gaussian else "not Gaussian"
        return (f"scores {shape} by Shapiro-Wilk (p = {self.shapiro_p[0]:.2g} and {self.shapiro_p[1]:.2g}; "
                f"each needs >= {FIT_ALPHA:g}), spread ratio {self.ratio:.3g}")

    def as_dict(self) -> dict:
        return {"runs_per_side": self.runs, "mean_diff": self.mean_diff, "var_p": self.var_p, "var_q": self.var_q,
                "shapiro_p": list(self.shapiro_p)}

    @classmethod
    def from_dict(cls, d: dict) -> "GaussianFit":
        return cls(d["runs_per_side"], d["mean_diff"], d["var_p"], d["var_q"], tuple(d["shapiro_p"]))


def welch_df(var_p, var_q, n):
    """Welch-Satterthwaite degrees of freedom of two samples of n with these variances (arrays allowed)."""
    a, b = np.asarray(var_p) / n, np.asarray(var_q) / n
    return (a + b) ** 2 / ((a * a + b * b) / (n - 1))


def fit(scores_p, scores_q) -> GaussianFit:
    """The statistics of two equal-size score samples (all runs)."""
    p, q = np.asarray(scores_p, float), np.asarray(scores_q, float)
    if len(p) != len(q) or len(p) < 8:
        raise ValueError(f"gdp audit: {len(p)} and {len(q)} runs; valid: the same number >= 8 per side")
    if not (np.isfinite(p).all() and np.isfinite(q).all()):
        raise ValueError("gdp audit: some scores are not finite")
    if p.var() == 0 or q.var() == 0:
        raise ValueError("gdp audit: a side's scores are all the same; no distribution to fit")
    return GaussianFit(len(p), float(p.mean() - q.mean()), float(p.var(ddof=1)), float(q.var(ddof=1)),
                       (float(stats.shapiro(p).pvalue), float(stats.shapiro(q).pvalue)))


# --- the exact (epsilon, delta) of two Gaussians with unequal variances ----------------------------------------------


def _hockey_stick(eps: float, d: float, r: float) -> float:
    """sup_S P(S) - e^eps Q(S) for P = N(d, r^2), Q = N(0, 1): S is where the privacy loss log p/q (a quadratic
    a x^2 + b x + c, here less eps) is positive, an interval or its complement."""
    a, b = 0.5 - 0.5 / r ** 2, d / r ** 2
    c = -math.log(r) - d * d / (2 * r * r) - eps
    if abs(a) < 1e-12:  # equal variances: a half-line
        if b <= 0:
            return 0.0
        x0 = -c / b
        return max(0.0, float(ndtr(-(x0 - d) / r) - math.exp(eps) * ndtr(-x0)))
    disc = b * b - 4 * a * c
    if disc <= 0:
        return max(0.0, 1 - math.exp(eps)) if a > 0 else 0.0
    s = math.sqrt(disc)
    x1, x2 = sorted(((-b - s) / (2 * a), (-b + s) / (2 * a)))
    if a > 0:  # outside the roots
        pm, qm = ndtr((x1 - d) / r) + ndtr(-(x2 - d) / r), ndtr(x1) + ndtr(-x2)
    else:      # between them
        pm, qm = ndtr((x2 - d) / r) - ndtr((x1 - d) / r), ndtr(x2) - ndtr(x1)
    return max(0.0, float(pm - math.exp(eps) * qm))


def pair_delta(eps: float, d: float, r: float) -> float:
    """The delta at `eps` between N(d, r^2) and N(0, 1), both directions (at r = 1, audit.gaussian_delta at d)."""
    return max(_hockey_stick(eps, d, r), _hockey_stick(eps, -d / r, 1 / r))


def pair_epsilon(d: float, r: float, delta: float) -> float:
    """The exact epsilon at `delta` of N(d, r^2) against N(0, 1): the least eps >= 0 with pair_delta <= delta."""
    if pair_delta(0.0, d, r) <= delta:
        return 0.0
    hi = 1.0
    while pair_delta(hi, d, r) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf
    return float(brentq(lambda e: pair_delta(e, d, r) - delta, 0.0, hi, xtol=1e-12))


def ratio_for_epsilon(epsilon: float, delta: float) -> float:
    """The standard-deviation ratio r > 1 at which N(0, r^2) against N(0, 1) has exactly `epsilon` at `delta`."""
    hi = 2.0
    while pair_epsilon(0.0, hi, delta) < epsilon:
        hi *= 2
    return float(brentq(lambda r: pair_epsilon(0.0, r, delta) - epsilon, 1.0, hi, xtol=1e-12))


def epsilon_from_mu(mu: float, delta: float) -> float:
    """The epsilon at `delta` of a mu-GDP mechanism (audit.exact_epsilon with gap mu and sigma 1)."""
    return 0.0 if mu <= 0 else audit.exact_epsilon(mu, 1.0, delta)


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The mu at which a mu-GDP mechanism has exactly `epsilon` at `delta` (the inverse of epsilon_from_mu)."""
    return 1.0 / audit.exact_sigma(epsilon, 1.0, delta)


# --- the bound ------------------------------------------------------------------------------------------------------


def mu_lower(t: float, df: float, runs: int, confidence: float) -> float:
    """The one-sided lower confidence bound on mu from Welch's `t` with `runs` a side: the noncentrality at which
    `t` is the noncentral t's `confidence` quantile, over sqrt(runs / 2); 0 where even mu = 0 explains it."""
    if not 0 < confidence < 1:
        raise ValueError(f"gdp audit: confidence = {confidence!r}; valid: in (0, 1)")
    if stats.t.cdf(t, df) <= confidence:
        return 0.0
    hi = max(2 * t, 1.0)
    while stats.nct.cdf(t, df, hi) > confidence:  # the cdf at t falls as the noncentrality grows
        hi *= 2
    return float(brentq(lambda nc: stats.nct.cdf(t, df, nc) - confidence, 0.0, hi, xtol=1e-10)) / math.sqrt(runs / 2)


def ratio_lower(fit_: GaussianFit, confidence: float) -> float:
    """The lower confidence bound on the spread's distance from equal, max(r, 1 / r) >= 1 (r the true standard
    deviation ratio), both tails at (1 - confidence) / 2 (the F distribution of s_p^2 / s_q^2)."""
    tail, dof = (1 - confidence) / 2, fit_.runs - 1
    f = fit_.var_p / fit_.var_q
    return math.sqrt(max(1.0, f / stats.f.isf(tail, dof, dof), stats.f.ppf(tail, dof, dof) / f))


@dataclass(frozen=True)
class Bound:
    epsilon: float          # max of the two: the parametric bound at the stated confidence
    shift: float            # the shift bound's epsilon (at 1 - alpha/2)
    spread: float           # the spread bound's epsilon (at 1 - alpha/2)


def epsilon_lower(fit_: GaussianFit, delta: float, confidence: float) -> Bound:
    """The parametric bound on epsilon at `confidence`, valid where both sides' scores are Gaussian (module
    docstring): the shift and the spread bound, each at 1 - alpha/2, each two-sided."""
    half = 1 - (1 - confidence) / 2
    tail = 1 - (1 - confidence) / 4
    mu = max(mu_lower(fit_.t, fit_.df, fit_.runs, tail), mu_lower(-fit_.t, fit_.df, fit_.runs, tail))
    shift = epsilon_from_mu(mu, delta)
    spread = pair_epsilon(0.0, ratio_lower(fit_, half), delta)
    return Bound(max(shift, spread), shift, spread)


# --- power: the audit as run, by simulation -------------------------------------------------------------------------


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


def cp_faults(p: np.ndarray, q: np.ndarray, claim: float, delta: float, confidence: float) -> np.ndarray:
    """Whether the Clopper-Pearson audit as run faults `claim` on each of a batch of score samples ([audits,
    runs] a side; higher = more like P): the threshold with the largest bound on the first half of the runs
    (audit.best_threshold), the bound from its counts on the second (audit.epsilon_lower_bound)."""
    runs = p.shape[1]
    half = runs // 2
    per_rate = 1 - (1 - confidence) / 2
    ub_first, ub_second = _cp_bounds(half, per_rate), _cp_bounds(runs - half, per_rate)
    out = np.zeros(len(p), bool)
    for i in range(len(p)):
        p1, q1 = np.sort(p[i, :half]), np.sort(q[i, :half])
        cuts = np.unique(np.r_[p1, q1])
        fps = half - np.searchsorted(q1, cuts, side="left")
        fns = np.searchsorted(p1, cuts, side="left")
        cut = cuts[int(np.argmax(_cp_epsilon(fps, fns, ub_first, delta)))]
        fp, fn = int((q[i, half:] >= cut).sum()), int((p[i, half:] < cut).sum())
        out[i] = _cp_epsilon(np.array([fp]), np.array([fn]), ub_second, delta)[0] > claim
    return out


def _parametric_faults(mean_diff, var_p, var_q, runs: int, claim: float, delta: float, confidence: float):
    """epsilon_lower(...).epsilon > claim, vectorised over audits' statistics: the shift bound exceeds the claim
    where |t| is beyond the noncentral t's quantile at the claim's mu, the spread bound where the F bound on the
    spread is beyond the claim's ratio."""
    tail = (1 - confidence) / 4
    df = welch_df(var_p, var_q, runs)
    t = mean_diff / np.sqrt((var_p + var_q) / runs)
    mu_c = mu_for_epsilon(claim, delta) * math.sqrt(runs / 2)
    # the quantile once per distinct rounded df (a root search each; thousands of audits share a few hundred)
    dfs, where = np.unique(np.round(df), return_inverse=True)
    shift = np.abs(t) > stats.nct.isf(tail, dfs, mu_c)[where.reshape(np.shape(df))]
    f, dof, r_c = var_p / var_q, runs - 1, ratio_for_epsilon(claim, delta) ** 2
    spread = (f / stats.f.isf(tail, dof, dof) > r_c) | (stats.f.ppf(tail, dof, dof) / f > r_c)
    return shift | spread


def faults(p: np.ndarray, q: np.ndarray, claim: float, delta: float, confidence: float,
           robust: bool = False) -> np.ndarray:
    """Whether the audit as run faults `claim` on each of a batch of score samples ([audits, runs] a side): the
    parametric bound of all runs above the claim, and with `robust` Clopper-Pearson's too (cp_faults)."""
    out = _parametric_faults(p.mean(1) - q.mean(1), p.var(1, ddof=1), q.var(1, ddof=1), p.shape[1], claim, delta,
                             confidence)
    if robust:
        out[out] = cp_faults(p[out], q[out], claim, delta, confidence)
    return out


def power(mu: float, runs: int, claim: float, delta: float, confidence: float, ratio: float = 1.0,
          robust: bool = False, audits: int = 400, seed: int = 0) -> float:
    """The probability that the audit as run (`faults`) bounds epsilon above `claim` when the scores are Gaussian
    `mu` pooled standard deviations apart with standard-deviation ratio `ratio`, `runs` a side: the share of
    `audits` simulated audits (seeded; without `robust`, 20 times as many, drawn as the statistics' exact
    distributions)."""
    rng = np.random.default_rng(seed)
    s_q = math.sqrt(2 / (1 + ratio * ratio))
    s_p = ratio * s_q
    if robust:
        return float(faults(mu + s_p * rng.standard_normal((audits, runs)), s_q * rng.standard_normal((audits, runs)),
                            claim, delta, confidence, robust).mean())
    k = 20 * audits
    mean_diff = mu + math.sqrt((s_p ** 2 + s_q ** 2) / runs) * rng.standard_normal(k)
    var_p = s_p ** 2 * rng.chisquare(runs - 1, k) / (runs - 1)
    var_q = s_q ** 2 * rng.chisquare(runs - 1, k) / (runs - 1)
    return float(_parametric_faults(mean_diff, var_p, var_q, runs, claim, delta, confidence).mean())


def runs_for_power(mu: float, claim: float, delta: float, confidence: float, target: float = 0.9) -> float:
    """The fewest runs a side (within 2 %) at which the parametric audit faults `claim` with probability
    `target` when the scores are Gaussian `mu` apart with one variance (inf where mu is within the claim)."""
    if mu <= mu_for_epsilon(claim, delta):
        return math.inf
    lo, hi = 8, 64
    while power(mu, hi, claim, delta, confidence) < target:
        lo, hi = hi, 2 * hi
    while hi - lo > max(2, hi // 50):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mu, mid, claim, delta, confidence) >= target else (mid, hi)
    return hi
