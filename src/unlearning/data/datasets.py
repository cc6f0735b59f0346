"""Raw datasets through torchvision's own classes, cached as uint8 tensors under data/processed/.

Offline, torchvision cannot download; the error then names the dataset and both ways to get it.
Fashion-MNIST is available offline from Debian's `dataset-fashion-mnist` (scripts/get_data.sh).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import DATASET_INFO
from ..files import save_tensors
from ..seeding import derive_seed

DATASETS = tuple(DATASET_INFO)
TORCHVISION_CLASSES = {"fashion_mnist": "FashionMNIST", "mnist": "MNIST", "cifar10": "CIFAR10", "svhn": "SVHN"}
HINTS = {
    "fashion_mnist": "offline: `apt-get install dataset-fashion-mnist` then `bash scripts/get_data.sh`; "
                     "online: the pipeline downloads it through torchvision",
}


RAW_FILES = {  # a file torchvision's class needs, relative to data.raw_root
    "fashion_mnist": "FashionMNIST/raw/train-images-idx3-ubyte",
    "mnist": "MNIST/raw/train-images-idx3-ubyte",
    "cifar10": "cifar-10-batches-py/data_batch_1",
    "svhn": "SVHN/train_32x32.mat",
}


def missing_reason(name: str, raw_root: str | Path, processed: str | Path) -> str | None:
    """Why `name` cannot be used offline, or None when its raw files or processed cache are on disk.
    Workflows call this when planning, so that an absent dataset shows as missing, with this reason."""
    if name == "synthetic" or Path(processed).is_file() or (Path(raw_root) / RAW_FILES[name]).is_file():
        return None
    how = HINTS.get(name, "needs a network: `python -m unlearning prepare --dataset "
                          f"{name} --out {processed}` downloads it through torchvision")
    return f"{Path(raw_root) / RAW_FILES[name]} not found; {how}"


class DatasetUnavailable(RuntimeError):
    """The dataset is neither on disk nor downloadable; the message says what to do."""


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
    tensors = synthetic(seed) if name == "synthetic" else load_torchvision(name, raw_root, download)
    classes, shape, _ = DATASET_INFO[name]
    save_tensors(out, tensors, {"dataset": name, "classes": classes, "shape": list(shape)})


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
