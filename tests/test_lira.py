"""LiRA (evaluate/attacks/lira.py) on constructed reference log-odds: online, offline, the variance choice, the
zero-degree-of-freedom case; the log-odds from logits (protocol.log_odds)."""

from __future__ import annotations

import numpy as np
import pytest

from unlearning.evaluate.attacks import lira, protocol, rmia


def _world(n: int = 400, k: int = 8, gap: float = 2.0, seed: int = 0, online: bool = True):
    """n candidates (the first half members of the target), k references in complementary pairs, each trained
    on a random half of them (online), or on none (offline); a model's true-label log-odds is N(gap, 1) on its
    members and N(0, 1) elsewhere, around a per-candidate difficulty."""
    rng = np.random.default_rng(seed)
    hard = rng.normal(0, 2, n)
    half = rng.random((k // 2, n)) < 0.5  # complementary pairs, as the pipeline's references: each IN half of them
    member = np.stack([x for h in half for x in (h, ~h)]) if online else np.zeros((k, n), bool)
    p_ref = hard + gap * member + rng.standard_normal((k, n))
    target_in = np.arange(n) < n // 2
    p_target = hard + gap * target_in + rng.standard_normal(n)
    return p_target, p_ref, (member if online else None), n // 2


def test_log_odds_from_logits_do_not_saturate_where_a_float32_softmax_does():
    """issue 68 item 5: margins of 16, 16.5 and 40 stay 16, 16.5 and 40 (a float32 softmax's log p - log(1 - p)
    gives 15.94 for the first two and jumps for the third); a 10-class row is z_y - logsumexp of the others."""
    import torch

    margins = np.array([16.0, 16.5, 40.0, -3.0])
    logits = np.stack([np.zeros(4), margins], 1).astype(np.float32)
    assert protocol.log_odds(logits, [1, 1, 1, 1]) == pytest.approx(margins, abs=1e-9)
    p = torch.from_numpy(logits).softmax(1)[:, 1].double().numpy()
    with np.errstate(divide="ignore"):
        saturated = np.log(p) - np.log1p(-p)
    assert not np.allclose(saturated[:3], margins[:3], atol=0.1)  # the old signal: what the new one avoids
    z = np.random.default_rng(0).normal(0, 5, (3, 10))
    want = [z[i, 2] - np.log(np.exp(np.delete(z[i], 2)).sum()) for i in range(3)]
    assert protocol.log_odds(z, [2, 2, 2]) == pytest.approx(want, abs=1e-12)
    assert np.isfinite(protocol.log_odds(np.array([[1e4, -1e4, 0.0]]), [0])).all()


def test_two_references_leave_no_degree_of_freedom_and_rank_as_one_common_variance():
    """issue 68 item 5: with 2 references online each candidate has one IN and one OUT value, no variance to
    estimate; the scores then rank as the equal-variance likelihood ratio (phi - mu_out)^2 - (phi - mu_in)^2 does,
    the floor of 1e-6 the pooled estimate would take left out; with 4 references a variance is estimated."""
    p_target, p_ref, member, m = _world(k=2)
    assert lira.zero_dof(member) and not lira.zero_dof(_world(k=4)[2])
    s = lira.scores(p_target, p_ref, member)
    mu_in = np.where(member, p_ref, 0).sum(0)
    mu_out = np.where(~member, p_ref, 0).sum(0)
    ratio = (p_target - mu_out) ** 2 - (p_target - mu_in) ** 2
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(ratio, kind="stable"))
    assert np.abs(s).max() < 1e3  # not divided by a floored 1e-12 variance
    fitted = lira.fit_reference_attack(protocol.References(p_ref, p_ref[:, :5], member, member[:, :5]))
    assert "one common variance" in fitted.describe


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
    p_ref = np.array([[0.0, 1.0], [2.0, 1.0]])
    low, high = lira.scores(np.array([1.0, 1.0]), p_ref), lira.scores(np.array([3.0, 3.0]), p_ref)
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
    with pytest.raises(ValueError, match="not finite"):
        lira.scores(np.r_[np.inf, p_target[1:]], p_ref, member)


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
