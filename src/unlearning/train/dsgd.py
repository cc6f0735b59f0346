"""Decentralized SGD over stacked client parameters (clients x d), vectorized or looped.

Each round every active client runs local minibatch SGD from its current model and reports the
pseudo-gradient g = (theta - phi) / lr, the sum of its local gradients (with one
local step it is the plain stochastic gradient), accumulated directly rather than by subtraction.
The network then mixes with one matrix product:

    model mixing     theta <- W theta - lr g        (D-PSGD style)
    gradient mixing  theta <- theta - lr W g        (Qiao et al. 2025, Eq. 2)

W is the Metropolis-Hastings matrix of the round's graph restricted to the active clients.
Minibatches come from a per-(client, round) generator over the client's full index list, and
forgotten samples are dropped from that order, so retraining sees the same order minus them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from tqdm import tqdm

from ..seeding import generator
from ..topology import graph_for_round, metropolis_hastings, metropolis_hastings_without
from .flat import FlatSpec

STRATEGIES = ("auto", "vmap", "loop")
CONV_MODELS = ("cnn", "resnet18")


def resolve_strategy(strategy: str, model_name: str, device: torch.device) -> str:
    """auto: vmap on CUDA; on CPU vmap for linear models and a loop for convolutional ones, whose
    grouped convolutions under vmap are slower than a loop (benchmarks/engine.py measures this)."""
    if strategy != "auto":
        return strategy
    if device.type == "cuda":
        return "vmap"
    return "loop" if model_name in CONV_MODELS else "vmap"


@dataclass
class ClientData:
    """Features on the compute device and each client's full index list with its keep mask."""

    x: torch.Tensor
    y: torch.Tensor
    indices: list[torch.Tensor]
    keep: list[torch.Tensor]

    def retained(self, forget: list[torch.Tensor]) -> "ClientData":
        return ClientData(self.x, self.y, self.indices, [k & ~f for k, f in zip(self.keep, forget)])


@dataclass
class Schedule:
    mixing: str
    lr: float
    batch_size: int
    local_epochs: int | None
    local_steps: int | None
    topology: str
    p_edge: float
    seed: int
    graph_nodes: int           # nodes of every round's graph (all clients, active or not)
    keep_connected_without: tuple[int, ...] = ()  # graphs stay connected without these clients
    experiment: str = ""       # named in errors (a diverged run)

    @classmethod
    def from_config(cls, cfg: dict, seed: int, removable: tuple[int, ...] = ()) -> "Schedule":
        train = cfg["train"]
        return cls(train["mixing"], train["lr"], train["batch_size"], train["local_epochs"],
                   train["local_steps"], cfg["topology"]["kind"], cfg["topology"]["p_edge"], seed,
                   cfg["clients"], removable)


def client_batches(indices: torch.Tensor, keep: torch.Tensor, gen: torch.Generator, batch_size: int,
                   local_epochs: int | None, local_steps: int | None) -> list[torch.Tensor]:
    """One round of minibatches: fresh permutations of the full list with unkept samples dropped."""
    if not bool(keep.any()):
        return []
    if local_epochs is not None:
        batches = []
        for _ in range(local_epochs):
            perm = torch.randperm(len(indices), generator=gen)
            order = indices[perm][keep[perm]]
            batches.extend(torch.split(order, batch_size))
        return batches
    stream, needed = [], local_steps * batch_size
    while sum(len(s) for s in stream) < needed:
        perm = torch.randperm(len(indices), generator=gen)
        stream.append(indices[perm][keep[perm]])
    return list(torch.split(torch.cat(stream)[:needed], batch_size))


def round_batches(data: ClientData, clients: list[int], sched: Schedule, round_: int):
    """Padded minibatch indices [m, S, B] and 0/1 sample weights [m, S, B] for one round."""
    per_client = [client_batches(data.indices[c], data.keep[c], generator(sched.seed, "batches", c, round_),
                                 sched.batch_size, sched.local_epochs, sched.local_steps) for c in clients]
    steps = max((len(b) for b in per_client), default=0)
    idx = torch.zeros(len(clients), steps, sched.batch_size, dtype=torch.long)
    weight = torch.zeros(len(clients), steps, sched.batch_size)
    for i, batches in enumerate(per_client):
        for s, b in enumerate(batches):
            idx[i, s, : len(b)] = b
            weight[i, s, : len(b)] = 1.0
    return idx, weight


def make_loss(model: nn.Module, spec: FlatSpec):
    """Weighted mean cross-entropy of one client's minibatch as a function of its flat parameters."""

    def loss(flat: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
        logits = functional_call(model, spec.unflatten(flat), (xb,))
        per_sample = F.cross_entropy(logits, yb, reduction="none")
        return (per_sample * wb).sum() / wb.sum().clamp_min(1.0)

    return loss


def local_pseudo_gradients(theta: torch.Tensor, data: ClientData, idx: torch.Tensor, weight: torch.Tensor,
                           lr: float, grad_fn, strategy: str) -> torch.Tensor:
    """Sum of the local SGD gradients of every client, i.e. (theta - phi) / lr after local SGD, summed
    directly (no cancellation); clients with no samples return zeros."""
    phi, pseudo = theta, torch.zeros_like(theta)
    device, steps = theta.device, idx.shape[1]
    batched = vmap(grad_fn) if strategy == "vmap" else None
    for s in range(steps):
        rows = idx[:, s].to(device)
        xb = data.x.index_select(0, rows.flatten()).view(*rows.shape, *data.x.shape[1:])
        yb, wb = data.y.index_select(0, rows.flatten()).view(rows.shape), weight[:, s].to(device)
        if batched is not None:
            g = batched(phi, xb, yb, wb)
        else:
            g = torch.zeros_like(phi)
            for i in range(phi.shape[0]):
                if bool(weight[i, s].any()):
                    g[i] = grad_fn(phi[i], xb[i], yb[i], wb[i])
        pseudo += g
        if s + 1 < steps:
            phi = phi - lr * g
    return pseudo


def mix(theta: torch.Tensor, pseudo: torch.Tensor, w: torch.Tensor, lr: float, mixing: str) -> torch.Tensor:
    """model: W theta - lr g;  gradient: theta - lr W g (one fused matrix product either way)."""
    if mixing == "model":
        return torch.addmm(pseudo, w, theta, beta=-lr)
    if mixing == "gradient":
        return torch.addmm(theta, w, pseudo, alpha=-lr)
    raise ValueError(f"mixing {mixing!r}: unknown; valid: model, gradient")


class Diverged(FloatingPointError):
    """Training produced a non-finite loss, gradient or weight; the message names the round and local step."""


def first_nonfinite_step(theta: torch.Tensor, data: ClientData, idx: torch.Tensor, weight: torch.Tensor, lr: float,
                         loss_fn) -> str:
    """Replays one round's local steps client by client (only after a failure) and says where the loss, the
    gradient or the weights first stopped being finite."""
    grad_fn = grad(loss_fn)
    phi = theta.clone()
    for s in range(idx.shape[1]):
        for i in range(phi.shape[0]):
            if not bool(weight[i, s].any()):
                continue
            rows = idx[i, s].to(theta.device)
            xb, yb, wb = data.x.index_select(0, rows), data.y.index_select(0, rows), weight[i, s].to(theta.device)
            if not bool(torch.isfinite(phi[i]).all()):
                return f"local step {s + 1}: the weights of client row {i} are not finite"
            loss = float(loss_fn(phi[i], xb, yb, wb))
            g = grad_fn(phi[i], xb, yb, wb)
            if not math.isfinite(loss) or not bool(torch.isfinite(g).all()):
                return f"local step {s + 1}: client row {i}'s loss is {loss:g}, its gradient finite: " \
                       f"{bool(torch.isfinite(g).all())}"
            phi[i] = phi[i] - lr * g
    return "the mixing step: every local step stayed finite, the mixed weights did not"


def check_finite(theta: torch.Tensor, what: str) -> None:
    """One cheap check per round: raise Diverged naming `what` when any weight is NaN or infinite."""
    if not bool(torch.isfinite(theta).all()):
        raise Diverged(f"{what}: weights are not finite (the run diverged); valid: a smaller learning rate")


@dataclass
class TrainLog:
    grad_evals: int = 0
    wall_time_s: float = 0.0


def train(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, clients: list[int],
          sched: Schedule, rounds: range, strategy: str, history=None, checkpoints=None,
          checkpoint_every: int = 0, progress: bool = False) -> tuple[torch.Tensor, TrainLog]:
    """Run `rounds` of decentralized SGD for the stacked models `theta` [len(clients), d].

    `history` (a HistoryWriter) receives every round's pseudo-gradients and mixing matrix W, plus
    W_without (the MH matrix without the removable clients, zero rows/columns there) when the schedule
    names removable clients;
    `checkpoints` (a CheckpointStore) receives the models every `checkpoint_every` rounds.
    """
    grad_fn = grad(make_loss(model, spec))
    log, start = TrainLog(), time.perf_counter()
    for t in tqdm(rounds, desc="rounds", disable=not progress, mininterval=5):
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        w = metropolis_hastings(graph, nodes=clients).to(theta)
        idx, weight = round_batches(data, clients, sched, t)
        pseudo = local_pseudo_gradients(theta, data, idx, weight, sched.lr, grad_fn, strategy)
        if history is not None:
            mixing = {"W": w}
            if sched.keep_connected_without:
                mixing["W_without"] = metropolis_hastings_without(graph, clients, sched.keep_connected_without)
            history.append(t, pseudo, mixing)
        before, theta = theta, mix(theta, pseudo, w, sched.lr, sched.mixing)
        if not bool(torch.isfinite(theta).all()):  # one check per round; the replay runs only on failure
            where = first_nonfinite_step(before, data, idx, weight, sched.lr, make_loss(model, spec))
            raise Diverged(f"{sched.experiment or 'training'}: diverged in round {t} (counting from 0), {where}; "
                           f"lr = {sched.lr:g}; valid: a smaller train.lr")
        log.grad_evals += int(weight.sum())
        if checkpoints is not None and checkpoint_every and (t + 1) % checkpoint_every == 0:
            checkpoints.save(t + 1, theta, clients)
    log.wall_time_s = time.perf_counter() - start
    return theta, log

