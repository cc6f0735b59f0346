"""Synthetic user-structured data (the offline stand-in for eICU-like and Lacuna-like user-level data)."""

from __future__ import annotations

import pytest
import torch

from unlearning.data import user_synthetic as us


@pytest.fixture(scope="module")
def eicu():
    return us.user_dataset(0, "eicu-like", users=1500, dim=12, ood_users=50, ood_per_user=4)


@pytest.fixture(scope="module")
def lacuna():
    return us.user_dataset(0, "lacuna-like", users=10, dim=12, per_user=50, ood_users=6, ood_per_user=10)


def test_splits_partition_the_samples(eicu, lacuna):
    for d in (eicu, lacuna):
        n = len(d["y"])
        parts = torch.cat([d["train"], d["val"], d["test"], d["ood"]])
        assert torch.equal(torch.sort(parts).values, torch.arange(n))
        assert d["x"].shape == (n, 12) and d["x"].dtype == torch.float32


def test_eicu_like_users_have_1_to_24_samples_and_overlap_test(eicu):
    counts = torch.bincount(eicu["user"][:len(eicu["user"]) - len(eicu["ood"])])
    assert counts.min() >= 1 and counts.max() <= 24 and (counts == 1).sum() > len(counts) / 4
    rate = eicu["y"][eicu["train"]].float().mean()
    assert 0.25 < rate < 0.45
    assert set(eicu["user"][eicu["test"]].tolist()) & set(eicu["user"][eicu["train"]].tolist())
    ood_users = set(eicu["user"][eicu["ood"]].tolist())
    assert not ood_users & set(eicu["user"][eicu["train"]].tolist())


def test_lacuna_like_structure(lacuna):
    users = lacuna["user"]
    assert torch.equal(torch.bincount(users[lacuna["test"]]), torch.full((10,), 10))
    labels = us.user_labels(lacuna, lacuna["train"])
    # a large offset makes the label mostly a property of the user
    agree = [float((lacuna["y"][lacuna["train"]][users[lacuna["train"]] == u] == lab).float().mean())
             for u, lab in labels.items()]
    assert sum(agree) / len(agree) > 0.75
    val_rate, train_rate = lacuna["y"][lacuna["val"]].float().mean(), lacuna["y"][lacuna["train"]].float().mean()
    assert abs(float(val_rate - train_rate)) < 0.05  # stratified


def test_deterministic_per_seed():
    a = us.user_dataset(3, "eicu-like", users=200, dim=5)
    b = us.user_dataset(3, "eicu-like", users=200, dim=5)
    c = us.user_dataset(4, "eicu-like", users=200, dim=5)
    assert all(torch.equal(a[k], b[k]) for k in a) and not torch.equal(a["x"], c["x"][:len(a["x"])])


def test_forget_users_and_indices(eicu, lacuna):
    chosen = us.forget_users(eicu, 30, seed=1)
    assert len(set(chosen)) == 30 and chosen == us.forget_users(eicu, 30, seed=1)
    Z = us.forget_indices(eicu, chosen)
    assert set(eicu["user"][Z].tolist()) == set(chosen) and set(Z.tolist()) <= set(eicu["train"].tolist())
    pair = us.forget_users(lacuna, 2, seed=0, per_class=True)
    labels = us.user_labels(lacuna, lacuna["train"])
    assert sorted(labels[u] for u in pair) == [0, 1]


@pytest.mark.parametrize("call, name", [
    (lambda d: us.forget_indices(d, [10 ** 6]), "forget users"),
    (lambda d: us.forget_indices(d, [int(d["user"][d["ood"][0]])]), "forget users"),
    (lambda d: us.forget_users(d, 0, 0), "forget_users"),
    (lambda d: us.forget_users(d, 10 ** 6, 0), "forget_users"),
    (lambda d: us.forget_users(d, 3, 0, per_class=True), "forget_users"),
    (lambda d: us.user_dataset(0, "mnist", 10, 3), "kind"),
    (lambda d: us.user_dataset(0, "eicu-like", 1, 3), "users"),
    (lambda d: us.user_dataset(0, "eicu-like", 10, 3, test_frac=1.0), "test_frac"),
])
def test_bad_input(eicu, call, name):
    with pytest.raises(ValueError) as err:
        call(eicu)
    assert str(err.value).startswith(name) and "valid" in str(err.value)
