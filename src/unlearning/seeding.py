"""Deterministic generators derived from (global seed, purpose, ...) keys, and torch's deterministic kernels."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def derive_seed(seed: int, *keys: object) -> int:
    """A 63-bit integer from the global seed and any tuple of keys (paper, experiment, client, round)."""
    digest = hashlib.sha256(repr((seed, *keys)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(seed: int, *keys: object) -> torch.Generator:
    """A CPU torch generator seeded from `derive_seed(seed, *keys)`."""
    import torch  # here: derive_seed alone stays torch-free (the dataset modules, read while planning)

    return torch.Generator().manual_seed(derive_seed(seed, *keys))


def deterministic_algorithms() -> None:
    """`torch.use_deterministic_algorithms(True, warn_only=True)` for the eager kernels every step runs. The public
    function also sets torch._inductor's flag, which imports the compiler (about 1 s of every job's start on a CPU);
    nothing here compiles, so the eager switch it wraps is set directly where torch has it, else the public one."""
    import torch

    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        setter(True, warn_only=True)
