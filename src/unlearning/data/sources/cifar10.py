"""CIFAR-10 (Krizhevsky 2009) through torchvision (a network, or its files under data.raw_root)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

CLASSES = 10
SHAPE = (3, 32, 32)
TRAIN_SIZE = 50000
TORCHVISION = "CIFAR10"  # torchvision.datasets' class
RAW_FILE = "cifar-10-batches-py/data_batch_1"


def layout(ds) -> tuple[torch.Tensor, torch.Tensor]:
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(ds.data.transpose(0, 3, 1, 2))), torch.tensor(ds.targets)


def load(raw_root, download: bool, seed: int):
    from ..datasets import load_torchvision

    return load_torchvision("cifar10", raw_root, download), {}
