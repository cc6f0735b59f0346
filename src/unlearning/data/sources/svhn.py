"""SVHN's cropped digits (Netzer et al. 2011) through torchvision (a network, or its files under data.raw_root)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

CLASSES = 10
SHAPE = (3, 32, 32)
TRAIN_SIZE = 73257
TORCHVISION = "SVHN"  # torchvision.datasets' class
RAW_FILE = "SVHN/train_32x32.mat"


def layout(ds) -> tuple[torch.Tensor, torch.Tensor]:
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(ds.data)), torch.from_numpy(ds.labels.astype(np.int64))


def open_split(cls, raw_root, train: bool, download: bool):
    """torchvision's SVHN takes a folder of its own and `split` where the others take `train`."""
    return cls(str(raw_root / "SVHN"), split="train" if train else "test", download=download)


def load(raw_root, download: bool, seed: int):
    from ..datasets import load_torchvision

    return load_torchvision("svhn", raw_root, download), {}
