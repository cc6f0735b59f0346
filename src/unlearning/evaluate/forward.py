"""The one batched forward pass of a flat parameter vector, for every metric and attack."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.func import functional_call

from ..experiment import Setup


@torch.no_grad()
def logits_in_batches(setup: Setup, flat: torch.Tensor, x: torch.Tensor, batch: int = 2048) -> Iterator[torch.Tensor]:
    """The model's logits on `x`, `batch` rows at a time, with the parameters `flat` (moved to the device)."""
    params = setup.spec.unflatten(flat.to(setup.device))
    for start in range(0, len(x), batch):
        yield functional_call(setup.model, params, (x[start:start + batch],))
