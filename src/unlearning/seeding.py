"""Deterministic generators derived from (global seed, purpose, ...) keys."""

from __future__ import annotations

import hashlib

import torch


def derive_seed(seed: int, *keys: object) -> int:
    """A 63-bit integer from the global seed and any tuple of keys (paper, experiment, client, round)."""
    digest = hashlib.sha256(repr((seed, *keys)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(seed: int, *keys: object) -> torch.Generator:
    """A CPU torch generator seeded from `derive_seed(seed, *keys)`."""
    return torch.Generator().manual_seed(derive_seed(seed, *keys))
