"""SGLU binary features (spec sglu.md §4.1, §4.2, §7 items 7-9): class-pair order, ±1 labels, truncation,
the pixel and ResNet-18 extractors, the offline failure of the ImageNet weights, and the noiseless accuracy.

Nothing here touches the network: datasets are tiny files in the real formats under `tmp_path`, read by
torchvision with `download=False`; torch hub points at an empty directory and every download raises.
"""

from __future__ import annotations

import time
from urllib.error import URLError

import numpy as np
import pytest
import torch
import torchvision.datasets.cifar
from torchvision.models import resnet18

from test_data import _existence_only, _write_cifar10, _write_idx_images, _write_idx_labels
from unlearning.data import binary
from unlearning.data.binary import (
    WeightsUnavailable,
    binary_features,
    fit_logistic,
    pair_accuracy,
    pixel_features,
    rank_pairs,
    resnet18_features,
    resnet18_trunk,
)
from unlearning.data.datasets import DatasetUnavailable, load_torchvision
from unlearning.data.sources.synthetic import synthetic

TRAIN_LABELS = [8, 3, 1, 3, 8, 8, 3, 0, 8, 3, 8]  # 3s at 1, 3, 6, 9; 8s at 0, 4, 5, 8, 10
TEST_LABELS = [3, 8, 8, 5, 3]


def _write_mnist(raw_root, rng) -> dict[str, torch.Tensor]:
    """MNIST IDX files with the labels above and random pixels; returns what torchvision loads."""
    raw = raw_root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, labels in (("train", TRAIN_LABELS), ("t10k", TEST_LABELS)):
        _write_idx_images(raw / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (len(labels), 28, 28)))
        _write_idx_labels(raw / f"{prefix}-labels-idx1-ubyte", np.array(labels))
    return load_torchvision("mnist", raw_root, download=False)


@pytest.fixture
def mnist(tmp_path) -> dict[str, torch.Tensor]:
    return _write_mnist(tmp_path, np.random.default_rng(0))


@pytest.fixture
def offline_hub(tmp_path, monkeypatch) -> list[str]:
    """torch hub's directory is an empty tmp dir and any download raises URLError; returns the URLs tried."""
    tried: list[str] = []

    def refuse(url, *args, **kwargs):
        tried.append(url)
        raise URLError("network disabled in tests")

    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path / "hub"))
    monkeypatch.setattr(torch.hub, "download_url_to_file", refuse)
    monkeypatch.setattr(torch.hub, "urlopen", refuse)
    return tried


# ---------------------------------------------------------------------------------------------------
# pixels (§4.1 MNIST 3-vs-8)
# ---------------------------------------------------------------------------------------------------


def test_pixels_order_truncation_and_labels(mnist):
    """All 3s then all 8s, each in file order, truncated to a multiple of truncate_to; 3 -> +1, 8 -> -1."""
    out, meta = binary_features(mnist, "mnist", (3, 8), "pixels", truncate_to=4)
    kept = [1, 3, 6, 9, 0, 4, 5, 8]  # 9 samples -> 8; the last 8 (index 10) is dropped
    assert torch.equal(out["x_train"], pixel_features(mnist["x_train"][kept]))
    assert out["y_train"].tolist() == [1.0] * 4 + [-1.0] * 4
    assert torch.equal(out["x_test"], pixel_features(mnist["x_test"][[0, 4, 1, 2]]))
    assert out["y_test"].tolist() == [1.0, 1.0, -1.0, -1.0]
    assert meta == {
        "dataset": "mnist", "classes": [3, 8], "labels": {"3": 1, "8": -1}, "extractor": "pixels",
        "weights": None, "truncate_to": 4, "n_full": 9, "n": 8, "d": 784,
        "train_counts_full": [4, 5], "train_counts": [4, 4], "n_test": 4, "test_counts": [2, 2],
    }


def test_pixels_truncation_can_cut_into_the_first_class(mnist):
    """The class order decides who is dropped: 8s first, 9 rows are a multiple of 3 (all kept), while
    truncated to 5 keeps the five 8s and no 3."""
    out, meta = binary_features(mnist, "mnist", (8, 3), "pixels", truncate_to=3)
    assert meta["n_full"] == 9 and meta["n"] == 9 and meta["train_counts"] == [5, 4]
    out, meta = binary_features(mnist, "mnist", (8, 3), "pixels", truncate_to=5)
    assert meta["n"] == 5 and meta["train_counts"] == [5, 0]
    assert torch.equal(out["x_train"], pixel_features(mnist["x_train"][[0, 4, 5, 8, 10]]))
    assert out["y_train"].tolist() == [1.0] * 5


def test_pixels_unit_norm_float32(mnist):
    """Every row has L2 norm 1 and everything is float32 (§4.1: keeps M = 1)."""
    out, _ = binary_features(mnist, "mnist", (3, 8), "pixels", truncate_to=1)
    for split in ("train", "test"):
        assert out[f"x_{split}"].dtype == torch.float32 and out[f"y_{split}"].dtype == torch.float32
        assert torch.allclose(out[f"x_{split}"].double().norm(dim=1), torch.ones(len(out[f"x_{split}"])).double())


def test_pixels_minus_half_pinned_by_hand():
    """One image, hand-computed: 782 pixels of 0 -> -0.5, one 255 -> 0.5, one 51 -> -0.3; norm sqrt(195.84)."""
    image = torch.zeros(1, 1, 28, 28, dtype=torch.uint8)
    image[0, 0, 0, 5], image[0, 0, 27, 27] = 255, 51
    row = pixel_features(image)[0].double()
    norm = 195.84 ** 0.5
    assert row.shape == (784,)
    assert row[0].item() == pytest.approx(-0.5 / norm, rel=1e-6)
    assert row[5].item() == pytest.approx(0.5 / norm, rel=1e-6)
    assert row[783].item() == pytest.approx(-0.3 / norm, rel=1e-6)


def test_bad_arguments_are_refused(mnist):
    """Equal classes, an unknown extractor and a truncation that would leave nothing are ValueErrors."""
    with pytest.raises(ValueError, match="two different classes"):
        binary_features(mnist, "mnist", (3, 3), "pixels")
    with pytest.raises(ValueError, match="valid: pixels, resnet18"):
        binary_features(mnist, "mnist", (3, 8), "hog")
    with pytest.raises(ValueError, match="fewer than truncate_to=512"):
        binary_features(mnist, "mnist", (3, 8), "pixels")


# ---------------------------------------------------------------------------------------------------
# resnet18 (§4.1 CIFAR-10, §7 item 8)
# ---------------------------------------------------------------------------------------------------


def test_resnet18_random_weights_on_cifar_files(tmp_path, monkeypatch):
    """Real CIFAR pickles through torchvision: 512-d unit rows in pair order, the same features from a
    second build (fixed-seed init) in any batch size, and the global RNG left untouched."""
    _existence_only(monkeypatch, torchvision.datasets.cifar)
    written = _write_cifar10(tmp_path, np.random.default_rng(1))
    data = load_torchvision("cifar10", tmp_path, download=False)
    counts = np.bincount(written["y_train"], minlength=10)
    a, b = (int(c) for c in np.argsort(-counts, kind="stable")[:2])
    order = [i for c in (a, b) for i in np.flatnonzero(written["y_train"] == c)]
    n = len(order) // 2 * 2

    rng_state = torch.random.get_rng_state()
    out, meta = binary_features(data, "cifar10", (a, b), "resnet18", truncate_to=2, weights="none", batch_size=3)
    assert torch.equal(torch.random.get_rng_state(), rng_state)
    assert meta["d"] == 512 and meta["n"] == n and meta["weights"] == "none"
    assert out["x_train"].shape == (n, 512) and out["x_train"].dtype == torch.float32
    assert torch.allclose(out["x_train"].norm(dim=1), torch.ones(n))
    assert out["y_train"].tolist() == [1.0] * int(counts[a]) + [-1.0] * (n - int(counts[a]))

    fresh = resnet18_trunk("none")  # a second build: the same weights
    one_by_one = resnet18_features(data["x_train"][order[:n]], fresh, batch_size=1)
    assert torch.allclose(out["x_train"], one_by_one, atol=1e-5)
    test_order = [i for c in (a, b) for i in np.flatnonzero(written["y_test"] == c)]
    assert torch.allclose(out["x_test"], resnet18_features(data["x_test"][test_order], fresh), atol=1e-5)


def test_imagenet_weights_offline_fail_fast_naming_cache(mnist, offline_hub, monkeypatch):
    """No cache, no network: WeightsUnavailable (a DatasetUnavailable) naming the weights, the cache
    directory and both fixes, raised in well under a second and before any image is touched."""
    monkeypatch.setattr(binary, "imagenet_input", lambda images: pytest.fail("features computed"))
    data = {k: v.expand(-1, 3, -1, -1) if k.startswith("x") else v for k, v in mnist.items()}
    start = time.perf_counter()
    with pytest.raises(WeightsUnavailable) as info:
        binary_features(data, "mnist", (3, 8), "resnet18", truncate_to=1)
    assert time.perf_counter() - start < 5
    assert isinstance(info.value, DatasetUnavailable)
    message = str(info.value)
    for part in ("IMAGENET1K_V1", "resnet18-f37072fd.pth", str(torch.hub.get_dir()), "network", "copy"):
        assert part in message
    assert offline_hub == ["https://download.pytorch.org/models/resnet18-f37072fd.pth"]


def test_imagenet_weights_read_from_hub_cache_without_network(tmp_path, offline_hub):
    """A file named resnet18-f37072fd.pth in <hub>/checkpoints is what weights="imagenet" loads."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        state = resnet18().state_dict()
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    torch.save(state, tmp_path / "hub" / "checkpoints" / "resnet18-f37072fd.pth")
    trunk = resnet18_trunk("imagenet")
    assert torch.equal(trunk[0].weight, state["conv1.weight"]) and not trunk.training
    assert offline_hub == []


# ---------------------------------------------------------------------------------------------------
# Noiseless accuracy (§4.2) and the pair ranking
# ---------------------------------------------------------------------------------------------------


def test_fit_logistic_matches_sklearn():
    """GD with step 1/L reaches the minimiser of (1/n)Σ log-loss + (λ/2)||w||², λ = 1e-6·n, no bias;
    sklearn's C = 1/(λ n) is the same problem."""
    from sklearn.linear_model import LogisticRegression

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(300, 5, generator=gen, dtype=torch.float64)
    x = x / x.norm(dim=1, keepdim=True)
    y = torch.where(x[:, 0] + 0.5 * torch.randn(300, generator=gen, dtype=torch.float64) > 0, 1.0, -1.0)
    lam_per_n = 1e-3
    w = fit_logistic(x, y, lam_per_n=lam_per_n)
    ref = LogisticRegression(C=1 / (lam_per_n * 300 * 300), fit_intercept=False, tol=1e-12, max_iter=10000)
    ref.fit(x.numpy(), y.numpy())
    assert np.allclose(w.numpy(), ref.coef_[0], atol=1e-5)
    acc = pair_accuracy(x, y, x, y, lam_per_n=lam_per_n)
    assert acc == pytest.approx(float((torch.sign(x @ w) == y).double().mean()))


def test_rank_pairs_covers_all_pairs_sorted_by_gap():
    """45 rows for a 10-class dataset, each pair once, sorted by |accuracy - target|."""
    data = synthetic(0, n_train=100, n_test=50)
    rows = rank_pairs(data, "synthetic", 0.9, truncate_to=1, lam_per_n=1e-2)
    assert len(rows) == 45
    assert {(r["class_a"], r["class_b"]) for r in rows} == {(a, b) for a in range(10) for b in range(a + 1, 10)}
    gaps = [r["gap"] for r in rows]
    assert gaps == sorted(gaps)
    assert all(r["gap"] == pytest.approx(abs(r["accuracy"] - 0.9)) and 0 <= r["accuracy"] <= 1 for r in rows)
    assert all(r["n"] == r["n_full"] == r["train_a"] + r["train_b"] for r in rows)
