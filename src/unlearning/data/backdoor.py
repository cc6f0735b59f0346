"""BadNets backdoor (Gu et al. 2017): a fixed trigger stamped on images relabelled to a target class.

Images are in [0, 1] pixel space, shape [..., C, H, W]; the trigger is stamped there, after any augmentation
and before normalisation, so it always sits at the same place (`BackdoorClient`). The default trigger is a
white 3x3 square at rows and columns H-4..H-2 (lower right, 1-pixel margin).

Poison: m copies of a client's own images whose true label is not the target, chosen by a seeded generator,
stamped and relabelled to the target, appended to the client's data (the clean originals stay). A client
too small for a fixed m scales it with its data (`poison_count`: m = n / 6 keeps m / (n + m) = 1/7, the
ratio of 1000 poisoned copies on 6000 images).

Attack success rate (ASR): the percentage of a fixed triggered test set classified as the target. The set
draws from all classes (the target's too, so a clean model scores about 1/classes) unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


def stamp(x: torch.Tensor, size: int = 3, margin: int = 1, value: float = 1.0) -> torch.Tensor:
    """A copy of the images x [..., C, H, W] with a size x size square of `value` (all channels) at the lower
    right, `margin` pixels from the border."""
    h, w = x.shape[-2], x.shape[-1]
    if size < 1 or margin < 0 or size + margin > min(h, w):
        raise ValueError(f"trigger size = {size}, margin = {margin}: valid: size >= 1, margin >= 0, "
                         f"size + margin <= {min(h, w)}")
    out = x.clone()
    out[..., h - margin - size:h - margin, w - margin - size:w - margin] = value
    return out


def poison_count(n_clean: int, per_clean: float = 1 / 6) -> int:
    """m scaled with a client's clean data: round(n_clean * per_clean) (1000 at 6000 images)."""
    if n_clean < 1 or not 0 < per_clean:
        raise ValueError(f"n_clean = {n_clean}, per_clean = {per_clean}: valid: n_clean >= 1, per_clean > 0")
    return int(round(n_clean * per_clean))


def poison(x: torch.Tensor, y: torch.Tensor, m: int, target: int, seed: int) -> tuple[torch.Tensor, torch.Tensor,
                                                                                        np.ndarray]:
    """m poisoned copies of images of (x, y) whose label != target: (clean copies in pixel space, labels all
    `target`, the source indices). The copies are not stamped here: `stamp` them (or let `BackdoorClient` do it
    after augmentation)."""
    eligible = np.flatnonzero(y.numpy() != target)
    if not 1 <= m <= len(eligible):
        raise ValueError(f"m (poisoned samples) = {m}: valid: 1..{len(eligible)} (the client's images whose "
                         f"label is not the target {target})")
    chosen = np.sort(np.random.default_rng(seed).choice(eligible, size=m, replace=False))
    index = torch.as_tensor(chosen, dtype=torch.long)
    return x[index].clone(), torch.full((m,), target, dtype=y.dtype), chosen


def triggered_test_set(x: torch.Tensor, y: torch.Tensor, size: int = 500, seed: int = 12345,
                       exclude: int | None = None) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """A fixed set of `size` test images (pixel space) drawn uniformly without replacement (from all classes,
    or all but `exclude`), stamped: (images, true labels, indices)."""
    pool = np.arange(len(y)) if exclude is None else np.flatnonzero(y.numpy() != exclude)
    if not 1 <= size <= len(pool):
        raise ValueError(f"backdoor test size = {size}: valid: 1..{len(pool)}")
    chosen = np.sort(np.random.default_rng(seed).choice(pool, size=size, replace=False))
    index = torch.as_tensor(chosen, dtype=torch.long)
    return stamp(x[index]), y[index].clone(), chosen


def attack_success_rate(predictions: torch.Tensor, target: int) -> float:
    """Percentage of predictions equal to the target."""
    if predictions.numel() == 0:
        raise ValueError("predictions: empty; valid: at least one triggered image")
    return 100.0 * float((predictions == target).float().mean())


@dataclass
class BackdoorClient:
    """A client's data in pixel space with poisoned rows marked: a minibatch is augmented (optional), the
    trigger stamped on its poisoned rows, then normalised (optional). Fits train/random_walk.ClientData."""

    x: torch.Tensor
    y: torch.Tensor
    poisoned: torch.Tensor                       # bool [n]
    augment: Callable[[torch.Tensor], torch.Tensor] | None = None
    normalise: Callable[[torch.Tensor], torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.y)

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.as_tensor(idx, dtype=torch.long)
        xb = self.x[index]
        if self.augment is not None:
            xb = self.augment(xb)
        mask = self.poisoned[index]
        if bool(mask.any()):
            xb = xb.clone()
            xb[mask] = stamp(xb[mask])
        if self.normalise is not None:
            xb = self.normalise(xb)
        return xb, self.y[index]

    def subset(self, keep: torch.Tensor) -> "BackdoorClient":
        """The rows where `keep` (bool [n]) holds, e.g. D_u minus D_f or D_f alone."""
        return BackdoorClient(self.x[keep], self.y[keep], self.poisoned[keep], self.augment, self.normalise)


def poisoned_client(x: torch.Tensor, y: torch.Tensor, m: int, target: int, seed: int,
                    **kwargs) -> BackdoorClient:
    """The client's clean images with m poisoned copies appended (poisoned = True on the last m rows)."""
    px, py, _ = poison(x, y, m, target, seed)
    mask = torch.cat([torch.zeros(len(y), dtype=torch.bool), torch.ones(m, dtype=torch.bool)])
    return BackdoorClient(torch.cat([x, px]), torch.cat([y, py]), mask, **kwargs)
