"""The empirical epsilon lower bound (privacy/audit.py): Clopper-Pearson bounds and the (epsilon, delta) test
inequality, on numbers computed by hand."""

import math

import pytest

from unlearning.privacy import audit


def test_clopper_pearson_with_no_events_is_the_closed_form():
    # k = 0: the upper bound solves (1 - p)^n = 1 - confidence
    assert audit.clopper_pearson_upper(0, 1000, 0.975) == pytest.approx(1 - 0.025 ** (1 / 1000), rel=1e-9)
    assert audit.clopper_pearson_upper(0, 1000, 0.975) == pytest.approx(0.0036821, abs=1e-7)
    assert audit.clopper_pearson_upper(5, 5, 0.9) == 1.0 and audit.clopper_pearson_lower(0, 5, 0.9) == 0.0
    # k = n: the lower bound solves p^n = 1 - confidence
    assert audit.clopper_pearson_lower(20, 20, 0.95) == pytest.approx(0.05 ** (1 / 20), rel=1e-9)


def test_a_perfect_distinguisher_over_1000_runs_proves_epsilon_5_6():
    b = audit.epsilon_lower_bound(0, 0, 1000, delta=0.0, confidence=0.95)
    p = 1 - 0.025 ** (1 / 1000)
    assert b.epsilon_lower == pytest.approx(math.log((1 - p) / p), rel=1e-9)
    assert b.epsilon_lower == pytest.approx(5.6006, abs=1e-3) and b.epsilon_point == math.inf


def test_rates_a_guarantee_allows_give_zero():
    assert audit.epsilon_from_rates(0.5, 0.5, 0.0) == 0.0  # a coin flip
    # e^1 FPR + FNR = 1 sits exactly on epsilon = 1
    fpr = 0.2
    assert audit.epsilon_from_rates(fpr, 1 - math.e * fpr, 0.0) == pytest.approx(1.0)
    # delta absorbs part of the error: (1 - delta - FNR) / FPR
    assert audit.epsilon_from_rates(0.1, 0.3, 0.05) == pytest.approx(math.log(0.65 / 0.1))
    b = audit.epsilon_lower_bound(480, 510, 1000, delta=1e-5)
    assert b.epsilon_lower == 0.0  # chance-level guesses prove nothing


def test_best_threshold_scans_every_cut():
    p = [1.0] * 99 + [0.0]  # one run of P looks like Q's
    q = [0.0] * 100
    b = audit.best_threshold_bound(p, q, delta=0.0, confidence=0.95)
    assert (b.false_positives, b.false_negatives) == (0, 1)  # the cut at 1.0
    assert b.epsilon_lower == audit.epsilon_lower_bound(0, 1, 100, 0.0).epsilon_lower > 2.5
    # four runs a side prove nothing at 95 %: every cut's bound is 0
    assert audit.best_threshold_bound([0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4], 0.0).epsilon_lower == 0.0


def test_bad_counts_name_the_problem():
    with pytest.raises(ValueError, match="valid: 0 <= k <= n"):
        audit.clopper_pearson_upper(5, 3, 0.9)
    with pytest.raises(ValueError, match="delta"):
        audit.epsilon_from_rates(0.1, 0.1, 1.0)
    with pytest.raises(ValueError, match="the same number"):
        audit.best_threshold_bound([1.0], [], 0.0)


def test_the_auditor_recovers_the_gaussian_mechanisms_epsilon():
    """Outputs N(0, 1) (retraining) against N(1, 1) (a mechanism of sensitivity 1, sigma 1): the threshold is chosen
    on one set of runs, the bound computed on fresh runs. Its interval holds the epsilon that threshold's exact
    rates imply, and the lower bound stays below the mechanism's true epsilon(delta) (the best threshold's)."""
    import numpy as np
    from scipy.stats import norm

    delta, runs = 1e-5, 20_000
    rng = np.random.default_rng(0)

    def exact(t):  # the epsilon of the test "output >= t means the mechanism" from its exact rates
        return audit.epsilon_from_rates(norm.sf(t), norm.cdf(t - 1), delta)

    true_eps = max(exact(t) for t in np.linspace(-2, 6, 8001))
    assert true_eps == pytest.approx(4.377, abs=0.01)  # 1-GDP at delta 1e-5
    p, q = rng.normal(1, 1, runs), rng.normal(0, 1, runs)
    chosen = audit.best_threshold_bound(p[:2000], q[:2000], delta)  # optimistic: threshold and bound on one set
    cuts = np.linspace(0, 4, 81)  # the threshold, chosen on 2,000 held-out runs a side
    fp_fn = [(int((q[:2000] >= c).sum()), int((p[:2000] < c).sum())) for c in cuts]
    t = cuts[max(range(len(cuts)), key=lambda k: audit.epsilon_lower_bound(*fp_fn[k], 2000, delta).epsilon_lower)]
    fresh_p, fresh_q = p[2000:], q[2000:]
    b = audit.epsilon_lower_bound(int((fresh_q >= t).sum()), int((fresh_p < t).sum()), len(fresh_p), delta)
    assert b.epsilon_lower <= exact(t) <= b.epsilon_upper
    assert 1.0 < b.epsilon_lower <= true_eps and chosen.epsilon_lower <= true_eps  # measured: 1.86 <= 4.38
