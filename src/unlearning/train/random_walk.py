"""Token-based decentralized training: one model walks a graph of clients (Network-SGD, Cyffers & Bellet 2022;
Lamri & Maniatakos 2025, Alg. 2).

The token is the model (its parameters as one flat vector [d], plus any BatchNorm buffers, carried along in
the module) and its optimizer state, created once and carried with the token. The client holding it runs
local minibatch steps in train mode and passes it on; the next hop comes from a rule `next_hop(current,
rng)` so that a method can change the routing (e.g. toward one client with probability p).

Optimizer steps use `LocalOptimizer` (train/optim.py) on the token as a one-row [1, d] tensor, so Adam's
rule and state are torch.optim.Adam's. Randomness comes from separate seeded streams (`Streams`): routing,
minibatches and noise, so that changing one choice (a noise scale, a radius) leaves the others' draws intact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .optim import LocalOptimizer, OptState

NextHop = Callable[[int | None, np.random.Generator], int]  # (current node or None at the start, rng) -> next


class ClientData(Protocol):
    """A client's local data: its size and a minibatch (inputs ready for the model, labels) by index."""

    def __len__(self) -> int: ...

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]: ...


@dataclass(frozen=True)
class TensorClient:
    """Local data held as tensors (already transformed)."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)

    def batch(self, idx: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.as_tensor(idx, dtype=torch.long)
        return self.x[index], self.y[index]


@dataclass
class Streams:
    """Separate generators for routing, minibatches and noise (numpy for indices, torch for Gaussian noise)."""

    route: np.random.Generator
    batch: np.random.Generator
    noise: torch.Generator

    @classmethod
    def from_seed(cls, seed: int) -> "Streams":
        route, batch, noise = np.random.SeedSequence(seed).spawn(3)
        gen = torch.Generator().manual_seed(int(noise.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)))
        return cls(np.random.default_rng(route), np.random.default_rng(batch), gen)


def uniform_neighbour(n_clients: int) -> NextHop:
    """Complete graph without self-loops: uniform over V minus the current node; uniform over V at the start
    (Alg. 2; spec A21)."""
    if n_clients < 2:
        raise ValueError(f"N (clients) = {n_clients}: valid: an integer >= 2")

    def rule(current: int | None, rng: np.random.Generator) -> int:
        if current is None:
            return int(rng.integers(n_clients))
        nxt = int(rng.integers(n_clients - 1))
        return nxt + (nxt >= current)

    return rule


def uniform_any(n_clients: int) -> NextHop:
    """I.i.d. uniform over V, repeats allowed (Network-private SGD, Alg. 3 line 5)."""
    return lambda current, rng: int(rng.integers(n_clients))


def minibatches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch: a random permutation of range(n) in batches of `size` (the last partial batch kept)."""
    order = rng.permutation(n)
    return [order[i:i + size] for i in range(0, n, size)]


def sample_batch(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """`size` indices (all n if fewer) drawn without replacement."""
    return rng.choice(n, size=min(size, n), replace=False)


class Token:
    """The walking model and its optimizer state; the parameters move by -lr * u for an optimizer direction u."""

    def __init__(self, model: nn.Module, lr: float, optimizer: LocalOptimizer | None = None):
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.lr = float(lr)
        self.opt = optimizer or LocalOptimizer("adam")
        self.state: OptState = self.opt.init(self.theta().unsqueeze(0))
        self.examples = 0  # examples whose gradient was evaluated (a method's cost, Table 2's gradient count)
        self.fresh_per_hop = False  # a fresh optimizer state at every hop (RR-DU spec 2.4(c)), else carried

    def begin_hop(self) -> None:
        """Called by every walk before a hop's update: resets the optimizer state if `fresh_per_hop`."""
        if self.fresh_per_hop:
            self.state = self.opt.init(self.theta().unsqueeze(0))

    @property
    def dim(self) -> int:
        return sum(p.numel() for p in self.params)

    @property
    def device(self) -> torch.device:
        """Where the model lives: the clients' batches move there, the walk's streams stay on the CPU."""
        return self.params[0].device

    def theta(self) -> torch.Tensor:
        """The parameters as one flat vector [d] (a copy)."""
        return nn.utils.parameters_to_vector(self.params).detach().clone()

    def set_theta(self, flat: torch.Tensor) -> None:
        with torch.no_grad():
            nn.utils.vector_to_parameters(flat.to(self.device), self.params)

    def grad(self, x: torch.Tensor, y: torch.Tensor, train: bool = True) -> tuple[torch.Tensor, float]:
        """Flat gradient [d] of the mean cross-entropy on (x, y), and the loss (train mode: BN batch statistics,
        running statistics updated, dropout active)."""
        self.model.train(train)
        self.examples += len(y)
        x, y = x.to(self.device), y.to(self.device)
        loss = F.cross_entropy(self.model(x), y)
        grads = torch.autograd.grad(loss, self.params)
        return torch.cat([g.reshape(-1) for g in grads]), float(loss.detach())

    def step(self, g: torch.Tensor) -> None:
        """One optimizer step on the flat gradient g (descent; pass -g to ascend)."""
        theta = self.theta()
        u, self.state = self.opt.step(g.unsqueeze(0), theta.unsqueeze(0), self.state)
        self.set_theta(theta - self.lr * u[0])

    def averaged_grad(self, client: ClientData, s: int, batch_size: int,
                      rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        """The average of the gradients of s i.i.d. minibatches of `client` (Alg. 4 line 17)."""
        total, losses = None, 0.0
        for _ in range(s):
            g, loss = self.grad(*client.batch(sample_batch(len(client), batch_size, rng)))
            total = g if total is None else total + g
            losses += loss
        return total / s, losses / s

    def local_epochs(self, client: ClientData, batch_size: int, rng: np.random.Generator,
                     epochs: int = 1) -> float:
        """`epochs` passes over the client's shuffled minibatches, one optimizer step each; the mean loss."""
        losses = []
        for _ in range(epochs):
            for idx in minibatches(len(client), batch_size, rng):
                g, loss = self.grad(*client.batch(idx))
                self.step(g)
                losses.append(loss)
        return float(np.mean(losses)) if losses else float("nan")


@dataclass(frozen=True)
class Hop:
    """What happened at one hop: its index (1-based), the node visited and the local training loss."""

    t: int
    node: int
    loss: float


def walk(token: Token, clients: Sequence[ClientData], hops: int, next_hop: NextHop, streams: Streams,
         batch_size: int = 64, epochs: int = 1, start: int | None = None,
         on_hop: Callable[[Hop, Token], None] | None = None) -> list[Hop]:
    """Network-SGD (Alg. 2): for t = 1..hops the token's holder runs `epochs` local epochs, then the token
    moves by `next_hop`. The first holder is `start`, or next_hop(None) (uniform). Returns the hops."""
    if hops < 0:
        raise ValueError(f"hops = {hops}: valid: an integer >= 0")
    node = next_hop(None, streams.route) if start is None else start
    done = []
    for t in range(1, hops + 1):
        token.begin_hop()
        hop = Hop(t, node, token.local_epochs(clients[node], batch_size, streams.batch, epochs))
        done.append(hop)
        if on_hop is not None:
            on_hop(hop, token)
        node = next_hop(node, streams.route)
    return done
