"""Forget requests as per-client boolean masks over each client's samples."""

from __future__ import annotations

import torch

from ..seeding import generator

FORGET_KINDS = ("client", "fraction", "class")


def forget_masks(kind: str, client_indices: list[torch.Tensor], labels: torch.Tensor, seed: int,
                 client: int = 0, fraction: float = 0.1, cls: int = 0) -> list[torch.Tensor]:
    """True marks a sample to forget: all of one client's, a fraction of every client's, or one class."""
    masks = []
    for c, idx in enumerate(client_indices):
        if kind == "client":
            mask = torch.full((len(idx),), c == client)
        elif kind == "fraction":
            chosen = torch.randperm(len(idx), generator=generator(seed, "forget", c))[: round(fraction * len(idx))]
            mask = torch.zeros(len(idx), dtype=torch.bool)
            mask[chosen] = True
        elif kind == "class":
            mask = labels[idx] == cls
        else:
            raise ValueError(f"forget kind {kind!r}: unknown; valid: {', '.join(FORGET_KINDS)}")
        masks.append(mask)
    return masks


def removed_clients(kind: str, masks: list[torch.Tensor]) -> tuple[int, ...]:
    """Clients left with no data to train on after the request (they leave the network)."""
    return tuple(c for c, m in enumerate(masks) if len(m) and bool(m.all())) if kind == "client" else ()
