"""Flat parameter vectors: a model's parameters as one [d] row, clients stacked as [n, d]."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class FlatSpec:
    names: tuple[str, ...]
    shapes: tuple[torch.Size, ...]

    @classmethod
    def of(cls, module: nn.Module) -> "FlatSpec":
        if any(True for _ in module.buffers()):
            raise ValueError(f"{type(module).__name__} has buffers; stacked clients need stateless models")
        named = list(module.named_parameters())
        return cls(tuple(n for n, _ in named), tuple(p.shape for _, p in named))

    @property
    def numels(self) -> list[int]:
        return [s.numel() for s in self.shapes]

    @property
    def dim(self) -> int:
        return sum(self.numels)

    def flatten(self, module: nn.Module) -> torch.Tensor:
        params = dict(module.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self.names])

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of `flat` ([..., d]) as named parameters of shape [..., *shape]."""
        lead = flat.shape[:-1]
        parts = torch.split(flat, self.numels, dim=-1)
        return {n: p.reshape(*lead, *s) for n, p, s in zip(self.names, parts, self.shapes)}
