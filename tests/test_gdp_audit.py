"""The parametric (GDP) audit and the audits' power (privacy/gdp_audit.py), on simulated Gaussian scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from unlearning.privacy import audit
from unlearning.privacy import gdp_audit as g

DELTA = 1e-5


def _mc_floor(level: float, n: int) -> float:
    """The least coverage a bound of exactly `level` shows over n simulated audits but with probability ~0.6 %
    (2.5 standard errors of the simulation below it)."""
    return level - 2.5 * math.sqrt(level * (1 - level) / n)


def test_the_gdp_bound_covers_mu_at_its_stated_level_over_1000_simulated_audits():
    """Over simulated audits the bound covers the true mu at its level (up to the simulation's error), and audit by
    audit it covers exactly when the statistic lies below the noncentral t's quantile at the true mu (the direct
    computation of what a one-sided bound at that level must do)."""
    rng = np.random.default_rng(0)
    mu, runs, audits = 0.8, 200, 1000
    fits = [g.fit(rng.standard_normal(runs) + mu, rng.standard_normal(runs)) for _ in range(audits)]
    n = fits[0].runs
    for level in (0.9, 0.95):
        covered = np.array([g.mu_lower(f.t, f.runs, level) <= mu for f in fits])
        direct = np.array([f.t <= stats.nct.ppf(level, 2 * n - 2, mu * math.sqrt(n / 2)) for f in fits])
        assert (covered == direct).all()
        assert covered.mean() >= _mc_floor(level, audits), (level, covered.mean())
    half = np.mean([g.mu_lower(f.t, f.runs, 0.5) <= mu for f in fits])  # not a bound that is merely low
    assert 0.4 <= half <= 0.6


def test_the_gdp_bound_is_the_direct_computation():
    """The bound solves nct.cdf(t; 2n - 2, mu_L sqrt(n / 2)) = confidence, and on many runs it is the normal
    approximation mu_hat - z se, se = sqrt(2 / n + mu^2 / (4 n))."""
    rng = np.random.default_rng(1)
    f = g.fit(rng.standard_normal(200) + 1.0, rng.standard_normal(200))
    low = g.mu_lower(f.t, f.runs, 0.95)
    assert stats.nct.cdf(f.t, 2 * f.runs - 2, low * math.sqrt(f.runs / 2)) == pytest.approx(0.95, abs=1e-8)
    big = g.fit(rng.standard_normal(10000) + 1.0, rng.standard_normal(10000))
    se = math.sqrt(2 / big.runs + big.mu_point ** 2 / (4 * big.runs))
    assert g.mu_lower(big.t, big.runs, 0.95) == pytest.approx(big.mu_point - 1.6449 * se, abs=2e-3)
    assert g.mu_lower(-3.0, 100, 0.95) == 0.0  # a t that mu = 0 explains bounds nothing


def test_epsilon_and_mu_are_the_exact_gaussian_pair():
    for eps in (0.5, 1.0, 4.0):
        mu = g.mu_for_epsilon(eps, DELTA)
        assert g.epsilon_from_mu(mu, DELTA) == pytest.approx(eps, rel=1e-6)
        assert g.epsilon_from_mu(mu, DELTA) == audit.exact_epsilon(mu, 1.0, DELTA)
    assert g.epsilon_from_mu(0.0, DELTA) == 0.0


def test_non_gaussian_scores_fail_the_fit_check_and_gaussian_ones_pass():
    rng = np.random.default_rng(2)
    skewed = g.fit(rng.exponential(size=400), rng.exponential(size=400))
    assert not skewed.gaussian and "not Gaussian" in skewed.check()
    unequal = g.fit(3 * rng.standard_normal(400), rng.standard_normal(400))
    assert not unequal.gaussian and unequal.variance_p < g.FIT_ALPHA
    fine = g.fit(rng.standard_normal(400) + 0.5, rng.standard_normal(400))
    assert fine.gaussian and fine.check().startswith("Gaussian with one variance")
    assert g.GaussianFit.from_dict(fine.as_dict()) == fine
    with pytest.raises(ValueError, match="not finite"):
        g.fit([math.inf] * 8, [0.0] * 8)


def test_log_odds_inverts_the_logistic_loss():
    margin = np.array([-30.0, -2.0, 0.0, 0.5, 20.0])
    loss = np.logaddexp(0, -margin)  # softplus(-m)
    assert np.allclose(g.log_odds(loss), margin, atol=1e-6)


def test_the_gdp_audits_power_is_what_its_simulation_gives():
    level, runs, claim = 1 - 0.05 / 9, 200, 1.0
    mu = g.mu_for_epsilon(4 * claim, DELTA)
    rng = np.random.default_rng(3)
    hits = [g.epsilon_lower(g.fit(rng.standard_normal(runs) + mu, rng.standard_normal(runs)), DELTA, level) > claim
            for _ in range(300)]
    exact = g.gdp_power(mu, runs, claim, DELTA, level)
    assert abs(np.mean(hits) - exact) <= 3 * math.sqrt(exact * (1 - exact) / 300) + 1e-9
    # at the claim itself the audit faults a compliant mechanism at most its error rate
    assert g.gdp_power(g.mu_for_epsilon(claim, DELTA), runs, claim, DELTA, level) <= 1 - level + 1e-9


def test_the_clopper_pearson_power_simulates_the_audit_as_run():
    """cp_power's vectorised design agrees with audit.best_threshold and audit.epsilon_lower_bound on one draw,
    and the record's design (1,000 runs a side) shows the issue's numbers: 2x never faulted, 4x rarely."""
    level, runs, mu = 0.99, 60, 1.5
    rng = np.random.default_rng(0)
    p, q = rng.standard_normal(runs) + mu, rng.standard_normal(runs)
    half = runs // 2
    cut, _ = audit.best_threshold(p[:half].tolist(), q[:half].tolist(), DELTA, level)
    scalar = audit.epsilon_lower_bound(int((q[half:] >= cut).sum()), int((p[half:] < cut).sum()), runs - half, DELTA,
                                       level).epsilon_lower
    p1, q1 = np.sort(p[:half]), np.sort(q[:half])
    cuts = np.unique(np.r_[p1, q1])
    ub = g._cp_bounds(half, 1 - (1 - level) / 2)
    eps = g._cp_epsilon(half - np.searchsorted(q1, cuts, side="left"), np.searchsorted(p1, cuts, side="left"), ub,
                        DELTA)
    vcut = cuts[int(np.argmax(eps))]
    assert vcut == cut
    vec = g._cp_epsilon(np.array([int((q[half:] >= vcut).sum())]), np.array([int((p[half:] < vcut).sum())]),
                        g._cp_bounds(runs - half, 1 - (1 - level) / 2), DELTA)[0]
    assert vec == pytest.approx(scalar, rel=1e-9)
    level9 = 1 - 0.05 / 9
    assert g.cp_power(g.mu_for_epsilon(2, DELTA), 1000, 1.0, DELTA, level9) == 0.0
    assert g.cp_power(g.mu_for_epsilon(4, DELTA), 1000, 1.0, DELTA, level9) < 0.3
    assert g.gdp_power(g.mu_for_epsilon(4, DELTA), 1000, 1.0, DELTA, level9) > 0.99


def test_runs_for_power_reaches_the_power_it_names():
    level, claim = 1 - 0.05 / 9, 1.0
    mu = g.mu_for_epsilon(2 * claim, DELTA)
    runs = g.runs_for_power(mu, claim, DELTA, level, 0.9)
    assert 0.85 <= g.gdp_power(mu, runs, claim, DELTA, level) <= 0.95
    assert g.runs_for_power(g.mu_for_epsilon(claim, DELTA), claim, DELTA, level) == math.inf
