"""The classifier-based MIA: it separates what a model memorised, and sits near 50 % when there is nothing to find."""

import numpy as np
import pytest
import torch
from torch import nn

from unlearning.evaluate.attacks import Attack, ClassifierAttack
from unlearning.evaluate.attacks.classifier import balanced_eval_sets, binomial_interval, features

N = 300  # members to fit on, forget-set members, and non-members in each test half


def _data(seed: int):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4 * N, 20, generator=gen)
    y = torch.randint(0, 5, (4 * N,), generator=gen)  # random labels: only memorisation predicts them
    return x, y


def _model(x, y, steps: int) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def _attack(steps: int) -> dict:
    """Members (fit) = rows 0..N, forget set = N..2N (both trained on), half A = 2N..3N, half B = 3N..4N."""
    x, y = _data(1)
    model = _model(x[: 2 * N], y[: 2 * N], steps)
    with torch.no_grad():
        probs = model(x).softmax(1)
    sl = {k: slice(i * N, (i + 1) * N) for i, k in enumerate(("fit", "forget", "a", "b"))}
    attack = ClassifierAttack(seed=0).fit({"member_probs": probs[sl["fit"]], "member_labels": y[sl["fit"]],
                                           "nonmember_probs": probs[sl["a"]], "nonmember_labels": y[sl["a"]]})
    members, others = balanced_eval_sets(torch.arange(N, 2 * N), torch.arange(3 * N, 4 * N), seed=0)
    return attack.metrics(attack.member_scores(probs[members], y[members]),
                          attack.member_scores(probs[others], y[others]))


def test_memorised_members_are_separated():
    out = _attack(steps=300)
    assert out["samples"] == 2 * N
    assert out["accuracy"] > 85, out
    assert out["ci_low"] < out["accuracy"] < out["ci_high"]


def test_nothing_memorised_sits_near_50():
    out = _attack(steps=0)  # an untrained model treats members and non-members alike
    assert abs(out["accuracy"] - 50) < 7, out  # 2s = 600: the standard error is about 2 points
    assert out["ci_low"] < 50 < out["ci_high"]


def test_features_of_known_outputs():
    probs = torch.tensor([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0]])
    f = features(probs, torch.tensor([1, 0]))
    np.testing.assert_allclose(f[0], [np.log(4), 0.25, 0.5, 1.5 * np.log(2)], rtol=1e-9)
    np.testing.assert_allclose(f[1, :3], [0.0, 1.0, 1.0], atol=1e-9)
    assert abs(f[1, 3]) < 1e-9


def test_metrics_count_and_gate():
    attack = ClassifierAttack(seed=0)
    out = attack.metrics(np.array([0.9, 0.8, 0.2]), np.array([0.1, 0.6, 0.3]))
    assert out["correct"] == 4 and out["samples"] == 6 and out["accuracy"] == pytest.approx(100 * 4 / 6)
    assert out["gated"] is False
    assert attack.metrics(np.full(500, 0.9), np.full(500, 0.1))["gated"] is True
    assert attack.metrics(np.zeros(0), np.array([0.1]))["accuracy"] is None


def test_wilson_interval_and_balanced_sets():
    low, high = binomial_interval(50, 100)
    assert low == pytest.approx(40.38, abs=0.05) and high == pytest.approx(59.62, abs=0.05)
    members, others = balanced_eval_sets(torch.arange(10), torch.arange(100, 104), seed=3)
    assert len(members) == len(others) == 4 and set(others.tolist()) == {100, 101, 102, 103}
    again = balanced_eval_sets(torch.arange(10), torch.arange(100, 104), seed=3)
    assert torch.equal(members, again[0])


def test_fit_refuses_empty_sides_and_follows_the_protocol():
    attack: Attack = ClassifierAttack(seed=0)
    with pytest.raises(ValueError, match="at least one of each"):
        attack.fit({"member_probs": torch.zeros(0, 3), "member_labels": torch.zeros(0, dtype=torch.long),
                    "nonmember_probs": torch.full((2, 3), 1 / 3), "nonmember_labels": torch.zeros(2, dtype=torch.long)})
