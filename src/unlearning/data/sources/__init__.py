"""One module per dataset (dataset_names.py says what each declares); data/datasets.py's `prepare` loads them."""

from __future__ import annotations

from importlib import import_module

from ...dataset_names import names
from ..errors import DatasetUnavailable


def source(name: str):
    """The module of this package that declares dataset `name` (imported here, by name: every module of the
    package is an input of the steps that prepare data, unlearning/sources.py)."""
    if name not in names():
        raise DatasetUnavailable(f"dataset {name!r}: unknown; valid: {', '.join(names())} (a module of "
                                 "unlearning/data/sources/ each)")
    return import_module(f"{__name__}.{name}")
