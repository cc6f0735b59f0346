"""Centralised shuffled minibatch SGD with a per-epoch exponential step decay and a checkpoint after every epoch.

The learning algorithm of rewind-style unlearning (Mu & Klabjan 2025, Algorithm 1 and Section 4.2):

- plain SGD (no momentum, no weight decay) on the mean loss of each minibatch; the samples are shuffled
  every epoch (without replacement), the last batch may be short (S = ceil(n / B) steps per epoch);
- the step size during epoch e (0-based) is lr0 * gamma^e (an exponential schedule stepped once per epoch);
- the flat parameter vector after every epoch (and the initial one, epoch 0) is written to a
  `history.CheckpointStore` (safetensors, atomic), so a later run can resume from any epoch;
- the permutation of epoch e is drawn from a generator seeded by (seed, "epoch", e) alone, so resuming at
  epoch e on the same data replays exactly the batches the uninterrupted run would have used;
- model selection: the epoch count with the lowest validation error (ties: the earliest);
- G: the largest l2 norm of a minibatch (mean-loss) gradient over all steps; L: the largest
  ||grad f_D(theta + xi) - grad f_D(theta)|| / ||xi|| over `samples` draws xi ~ N(0, std^2 I)
  (Mu & Klabjan, Appendix D; the displayed formula there has the ratio inverted, the estimator is this one).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .. import floatmath
from ..history import CheckpointStore
from ..seeding import generator
from .flat import FlatSpec

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Diverged(RuntimeError):
    """The loss or a gradient became NaN/inf; the message names the epoch and step."""


@dataclass(frozen=True)
class Schedule:
    """lr0 * gamma^epoch, batches of `batch_size`, permutations seeded by `seed`."""
    lr0: float = 0.1
    gamma: float = 0.9
    batch_size: int = 512
    seed: int = 0

    def __post_init__(self):
        if not (isinstance(self.lr0, (int, float)) and math.isfinite(self.lr0) and self.lr0 > 0):
            raise ValueError(f"lr0 = {self.lr0!r}: valid: a finite number > 0")
        if not (isinstance(self.gamma, (int, float)) and 0 < self.gamma <= 1):
            raise ValueError(f"gamma = {self.gamma!r}: valid: a number in (0, 1]")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size = {self.batch_size!r}: valid: an integer >= 1")

    def lr(self, epoch: int) -> float:
        """The step size during 0-based epoch `epoch`."""
        return self.lr0 * self.gamma**epoch

    def steps_per_epoch(self, n: int) -> int:
        return math.ceil(n / self.batch_size)

    def permutation(self, n: int, epoch: int) -> torch.Tensor:
        return torch.randperm(n, generator=generator(self.seed, "epoch", epoch))


def set_flat(model: nn.Module, spec: FlatSpec, flat: torch.Tensor) -> None:
    """Copy a flat [d] vector into the model's parameters."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in spec.unflatten(flat.reshape(-1)).items():
            params[name].copy_(value)


def save_epoch(store: CheckpointStore, epoch: int, model: nn.Module, spec: FlatSpec) -> None:
    store.save(epoch, spec.flatten(model).unsqueeze(0), [0])


def load_epoch(store: CheckpointStore, epoch: int, model: nn.Module, spec: FlatSpec) -> None:
    """Load the state after `epoch` epochs (0: the initial weights) into `model`."""
    if epoch not in store.rounds():
        raise ValueError(f"epoch = {epoch}: no checkpoint in {store.dir}; valid: one of {store.rounds()}")
    theta, _ = store.load(epoch)
    set_flat(model, spec, theta[0].to(next(model.parameters()).device))


def run_epochs(model: nn.Module, X: torch.Tensor, y: torch.Tensor, schedule: Schedule, start: int, stop: int,
               loss_fn: Loss = F.cross_entropy, store: CheckpointStore | None = None,
               on_epoch: Callable[[int], None] | None = None, drop: int | None = None) -> list[float]:
    """Epochs start .. stop-1 (0-based) of shuffled minibatch SGD on (X, y), in place. After epoch e the state
    (the model after e + 1 epochs) is saved to `store` and `on_epoch(e + 1)` is called. Returns the largest
    minibatch gradient norm of each epoch. `drop`: a sample left out of its minibatch after the split, so every
    other batch is the one the full data's run takes (matched minibatches)."""
    spec = FlatSpec.of(model)
    params = [p for p in model.parameters()]
    n = X.shape[0]
    if n == 0:
        raise ValueError("X: no training samples; valid: at least one")
    norms = []
    model.train()
    for epoch in range(start, stop):
        lr = schedule.lr(epoch)
        order = schedule.permutation(n, epoch).to(X.device)
        top = 0.0
        batches = torch.split(order, schedule.batch_size)
        if drop is not None:
            batches = [b for b in (b[b != drop] for b in batches) if len(b)]
        for step, batch in enumerate(batches):
            loss = loss_fn(model(X[batch]), y[batch])
            grads = torch.autograd.grad(loss, params)
            norm = float(floatmath.sqrt(sum((g * g).sum() for g in grads)))
            if not (math.isfinite(norm) and math.isfinite(float(loss.detach()))):
                raise Diverged(f"epoch {epoch}, step {step}: the loss ({float(loss.detach()):g}) or its gradient norm "
                               f"({norm:g}) is not finite; valid: a smaller lr0")
            top = max(top, norm)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.add_(g, alpha=-lr)
        norms.append(top)
        if store is not None:
            save_epoch(store, epoch + 1, model, spec)
        if on_epoch is not None:
            on_epoch(epoch + 1)
    return norms


@torch.no_grad()
def error(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int = 4096) -> float:
    """0-1 error (1 - accuracy) in eval mode."""
    model.eval()
    wrong = sum(int((model(X[i:i + batch_size]).argmax(1) != y[i:i + batch_size]).sum())
                for i in range(0, X.shape[0], batch_size))
    model.train()
    return wrong / max(X.shape[0], 1)


@dataclass
class TrainResult:
    val_errors: list[float]          # after epochs 1..max_epochs
    grad_norms: list[float]          # the largest minibatch gradient norm of each epoch
    epoch_seconds: list[float]       # wall time of each training epoch (no evaluation)
    selected: int                    # E_sel: the number of epochs with the lowest validation error
    G: float                         # max of grad_norms over the whole run
    extra: dict = field(default_factory=dict)


def train(model: nn.Module, X: torch.Tensor, y: torch.Tensor, X_val: torch.Tensor, y_val: torch.Tensor,
          schedule: Schedule, max_epochs: int, directory: str | Path, loss_fn: Loss = F.cross_entropy,
          min_selected: int = 1) -> TrainResult:
    """Train for `max_epochs`, checkpoint every epoch under `directory`, select by validation error among the
    epoch counts min_selected .. max_epochs.

    The model is left at the selected epoch's state (theta_T of the paper)."""
    if isinstance(max_epochs, bool) or not isinstance(max_epochs, int) or max_epochs < max(1, min_selected):
        raise ValueError(f"max_epochs = {max_epochs!r}: valid: an integer >= {max(1, min_selected)}")
    spec = FlatSpec.of(model)
    store = CheckpointStore(directory)
    save_epoch(store, 0, model, spec)
    val_errors: list[float] = []
    norms: list[float] = []
    seconds: list[float] = []
    for epoch in range(max_epochs):
        start = time.perf_counter()
        norms += run_epochs(model, X, y, schedule, epoch, epoch + 1, loss_fn, store)
        seconds.append(time.perf_counter() - start)
        val_errors.append(error(model, X_val, y_val))
    selected = 1 + min(range(max(min_selected, 1) - 1, max_epochs), key=lambda i: (val_errors[i], i))
    load_epoch(store, selected, model, spec)
    return TrainResult(val_errors, norms, seconds, selected, max(norms))


def full_gradient(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int,
                  loss_fn: Loss = F.cross_entropy) -> torch.Tensor:
    """grad f_D as a flat vector: the sum over batches of (batch-mean gradient x batch size) / n, eval mode."""
    params = [p for p in model.parameters()]
    model.eval()
    total = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
    for i in range(0, X.shape[0], batch_size):
        xb, yb = X[i:i + batch_size], y[i:i + batch_size]
        grads = torch.autograd.grad(loss_fn(model(xb), yb), params)
        total += torch.cat([g.reshape(-1) for g in grads]) * xb.shape[0]
    model.train()
    return total / X.shape[0]


def estimate_smoothness(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int, samples: int = 400,
                        std: float = 0.01, seed: int = 0, loss_fn: Loss = F.cross_entropy) -> float:
    """L = max over `samples` draws xi ~ N(0, std^2 I) of ||grad f_D(theta + xi) - grad f_D(theta)|| / ||xi||
    at the model's current theta (Mu & Klabjan, Appendix D). The model is restored afterwards."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples = {samples!r}: valid: an integer >= 1")
    if not (math.isfinite(std) and std > 0):
        raise ValueError(f"std = {std!r}: valid: a finite number > 0")
    spec = FlatSpec.of(model)
    theta = spec.flatten(model).clone()
    g0 = full_gradient(model, X, y, batch_size, loss_fn)
    gen = generator(seed, "smoothness")
    best = 0.0
    try:
        for _ in range(samples):
            xi = (torch.randn(theta.shape, generator=gen, dtype=theta.dtype) * std).to(theta.device)
            moved = theta + xi
            set_flat(model, spec, moved)
            g1 = full_gradient(model, X, y, batch_size, loss_fn)
            best = max(best, float(torch.linalg.vector_norm(g1 - g0) / torch.linalg.vector_norm(moved - theta)))
    finally:
        set_flat(model, spec, theta)
    return best
