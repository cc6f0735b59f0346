"""BadNets poisoning (data/backdoor.py): trigger place, poison choice, scaled m, test set, ASR, stamping order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unlearning.data import backdoor as bd


def _data(n=60, seed=0, shape=(1, 28, 28)):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, *shape, generator=g) * 0.5, torch.arange(n) % 10


def test_trigger_is_a_white_3x3_square_at_rows_and_cols_h4_to_h2():
    x, _ = _data(2, shape=(3, 32, 32))
    s = bd.stamp(x)
    assert torch.all(s[..., 28:31, 28:31] == 1.0)
    changed = (s != x).any(dim=(0, 1))
    assert changed.sum() == 9 and changed[28:31, 28:31].all()
    assert torch.equal(bd.stamp(x[0]), s[0])  # an unbatched image gets the same trigger
    assert not torch.equal(bd.stamp(x), x) and torch.all(x < 1.0)  # the input is not modified


def test_poison_copies_non_target_images_relabelled():
    x, y = _data()
    px, py, src = bd.poison(x, y, 20, target=0, seed=1)
    assert len(set(src.tolist())) == 20 and np.all(y.numpy()[src] != 0)
    assert torch.equal(px, x[torch.as_tensor(src)]) and torch.all(py == 0)
    _, _, again = bd.poison(x, y, 20, target=0, seed=1)
    _, _, other = bd.poison(x, y, 20, target=0, seed=2)
    assert np.array_equal(src, again) and not np.array_equal(src, other)


def test_poison_count_scales_with_the_client():
    assert bd.poison_count(6000) == 1000 and bd.poison_count(5000) == 833 and bd.poison_count(300) == 50
    m = bd.poison_count(6000)
    assert m / (6000 + m) == pytest.approx(1 / 7)


def test_too_many_poisoned_samples_is_refused():
    x, y = _data(20)
    with pytest.raises(ValueError, match=r"m \(poisoned samples\) = 19: valid: 1..18"):
        bd.poison(x, y, 19, target=0, seed=0)


def test_triggered_test_set_fixed_and_all_classes():
    x, y = _data(1000)
    a, ya, ia = bd.triggered_test_set(x, y)
    b, _, ib = bd.triggered_test_set(x, y)
    assert a.shape[0] == 500 and np.array_equal(ia, ib) and torch.equal(a, b)
    assert set(ya.tolist()) == set(range(10)) and torch.all(a[..., 24:27, 24:27] == 1.0)
    _, yx, _ = bd.triggered_test_set(x, y, size=500, exclude=0)
    assert 0 not in set(yx.tolist())


def test_asr():
    assert bd.attack_success_rate(torch.tensor([0, 0, 3, 1, 0]), 0) == pytest.approx(60.0)
    with pytest.raises(ValueError, match="predictions: empty"):
        bd.attack_success_rate(torch.tensor([]), 0)


def test_client_stamps_after_augment_and_before_normalise():
    x, y = _data(30)
    client = bd.poisoned_client(x, y, 5, target=0, seed=0, augment=lambda b: torch.flip(b, dims=(-1,)),
                                normalise=lambda b: (b - 0.5) / 0.25)
    assert len(client) == 35 and int(client.poisoned.sum()) == 5
    xb, yb = client.batch(np.arange(25, 35))
    raw = (xb * 0.25 + 0.5)
    assert torch.allclose(raw[5:, :, 24:27, 24:27], torch.ones(5, 1, 3, 3))  # stamped after the flip
    assert not torch.allclose(raw[:5, :, 24:27, 24:27], torch.ones(5, 1, 3, 3))  # clean rows untouched
    assert torch.all(yb[5:] == 0)
    forget = client.subset(client.poisoned)
    assert len(forget) == 5 and bool(forget.poisoned.all())
