"""A tiny learnable image dataset for tests: a fixed pattern per class plus noise, uint8 1x28x28, generated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...seeding import derive_seed

if TYPE_CHECKING:
    import torch

CLASSES = 10
SHAPE = (1, 28, 28)
TRAIN_SIZE = 2000
RAW_FILE = None  # generated from the seed


def synthetic(seed: int, n_train: int = 2000, n_test: int = 500, classes: int = 10) -> dict[str, torch.Tensor]:
    """A tiny learnable image dataset for tests: a fixed pattern per class plus noise, uint8 1x28x28."""
    import numpy as np
    import torch

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


def load(raw_root, download: bool, seed: int):
    return synthetic(seed), {}
