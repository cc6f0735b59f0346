"""LiRA (evaluate/attacks/lira.py) on constructed reference confidences: online, offline, the variance choice."""

from __future__ import annotations

import numpy as np
import pytest

from unlearning.evaluate.attacks import lira, rmia


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _world(n: int = 400, k: int = 8, gap: float = 2.0, seed: int = 0, online: bool = True):
    """n candidates (the first half members of the target), k references in complementary pairs, each trained
    on a random half of them (online), or on none (offline); a model's logit-scaled confidence is N(gap, 1) on its
    members and N(0, 1) elsewhere, around a per-candidate difficulty."""
    rng = np.random.default_rng(seed)
    hard = rng.normal(0, 2, n)
    half = rng.random((k // 2, n)) < 0.5  # complementary pairs, as the pipeline's references: each IN half of them
    member = np.stack([x for h in half for x in (h, ~h)]) if online else np.zeros((k, n), bool)
    p_ref = _sigmoid(hard + gap * member + rng.standard_normal((k, n)))
    target_in = np.arange(n) < n // 2
    p_target = _sigmoid(hard + gap * target_in + rng.standard_normal(n))
    return p_target, p_ref, (member if online else None), n // 2


def test_logit_scale_inverts_the_sigmoid():
    z = np.array([-30.0, -1.0, 0.0, 3.0, 20.0])
    assert np.allclose(lira.logit_scale(_sigmoid(z)), z, atol=1e-6)
    assert np.isfinite(lira.logit_scale([0.0, 1.0])).all()


def test_online_and_offline_lira_find_members_and_are_blind_without_a_signal():
    for online in (True, False):
        p_target, p_ref, member, m = _world(online=online)
        for variance in lira.VARIANCES:
            s = lira.scores(p_target, p_ref, member, variance)
            assert rmia.metrics(s[:m], s[m:])["auc"] > 0.8, (online, variance)
    p_target, p_ref, member, m = _world(gap=0.0, seed=1)
    s = lira.scores(p_target, p_ref, member)
    assert 0.4 < rmia.metrics(s[:m], s[m:])["auc"] < 0.6


def test_the_offline_score_is_the_one_sided_test_against_the_out_references():
    p_ref = _sigmoid(np.array([[0.0, 1.0], [2.0, 1.0]]))
    low, high = lira.scores(_sigmoid(np.array([1.0, 1.0])), p_ref), lira.scores(_sigmoid(np.array([3.0, 3.0])), p_ref)
    assert (0 <= low).all() and (high <= 1).all() and (high > low).all()
    assert low[0] == pytest.approx(0.5)  # the target at the OUT references' mean


def test_bad_inputs_name_what_is_valid():
    p_target, p_ref, _, _ = _world(n=10, k=2)
    member = np.array([[True] * 10, [False] * 10])
    with pytest.raises(ValueError, match="variance = 'pooled'; valid: global, per_example"):
        lira.scores(p_target, p_ref, member, "pooled")
    with pytest.raises(ValueError, match="no OUT reference"):
        lira.scores(p_target, p_ref, np.ones_like(member))
    mixed = np.zeros_like(member)
    mixed[0, 0] = True
    with pytest.raises(ValueError, match="all or none"):
        lira.scores(p_target, p_ref, mixed)


def test_the_gaussian_log_density_is_scipys_bit_for_bit():
    """lira._norm_logpdf (kept off scipy.stats, a second of every job's start) gives scipy.stats.norm.logpdf's
    bits, and the offline score scipy.stats.norm.cdf's, on random draws."""
    from scipy import stats
    from scipy.special import ndtr

    from unlearning.evaluate.attacks.lira import _norm_logpdf

    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 300))
        x, mean, std = rng.normal(0, 5, n), rng.normal(0, 3, n), np.exp(rng.normal(0, 2, n)) + 1e-6
        assert np.array_equal(_norm_logpdf(x, mean, std), stats.norm.logpdf(x, mean, std))
        assert np.array_equal(ndtr((x - mean) / std), stats.norm.cdf(x, mean, std))
