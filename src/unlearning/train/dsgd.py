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

The local steps are plain SGD by default; `Schedule.optimizer` may make them heavy-ball momentum or Adam,
and `Schedule.l2` adds (lambda/2)||x||^2 to the local loss (train/optim.py). Each client keeps its own
optimizer state across rounds; the state is never mixed (only the models are), so with model mixing a
round is x <- W x + Delta_local with Delta_local = -lr g, g = (theta - phi) / lr still the sum of the
round's update directions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call
from tqdm import tqdm

from ..seeding import generator
from ..topology import graph_for_round, metropolis_hastings, metropolis_hastings_without, repair_after_removal
from .autodiff import grad
from .flat import FlatSpec
from .optim import LocalOptimizer, OptState

STRATEGIES = ("auto", "vmap", "loop")
CONV_MODELS = ("cnn", "cnn_small", "resnet18")


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
    repaired_without: tuple[int, ...] = ()  # clients that have left: every round's graph is repaired without them
    experiment: str = ""       # named in errors (a diverged run)
    optimizer: str = "sgd"     # local optimizer: sgd | momentum | adam (train/optim.py), per-client state
    momentum: float = 0.9      # heavy-ball coefficient of optimizer "momentum"
    l2: float = 0.0            # lambda of the L2 term (lambda/2)||x||^2 in the local loss
    betas: tuple[float, float] = (0.9, 0.999)  # Adam's (torch defaults)
    eps: float = 1e-8                          # Adam's (torch default)

    def __post_init__(self) -> None:
        self.local_optimizer()  # one clear error for a bad optimizer key, before any training

    def local_optimizer(self) -> LocalOptimizer:
        return LocalOptimizer(self.optimizer, self.momentum, self.betas, self.eps, self.l2)

    @classmethod
    def from_config(cls, cfg: dict, seed: int, removable: tuple[int, ...] = ()) -> "Schedule":
        """Optional train keys: optimizer (default sgd), momentum (0.9), l2 (0.0)."""
        train = cfg["train"]
        return cls(train["mixing"], train["lr"], train["batch_size"], train["local_epochs"],
                   train["local_steps"], cfg["topology"]["kind"], cfg["topology"]["p_edge"], seed,
                   cfg["clients"], removable, optimizer=train.get("optimizer", "sgd"),
                   momentum=train.get("momentum", 0.9), l2=train.get("l2", 0.0))


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


def clients_at_once(grad_fn, strategy: str):
    """Every client's gradient in one call under `vmap` (`grad_fn.rows()`), None under `loop`. `grad_fn` is
    train/autodiff.py's `grad(loss)`: torch.func.grad's has no `rows`, and its first call imports torch._dynamo."""
    if strategy != "vmap":
        return None
    if not isinstance(grad_fn, grad):
        raise TypeError(f"grad_fn {grad_fn!r}: the engine takes unlearning.train.autodiff.grad(loss), which it "
                        "batches over the clients with .rows()")
    return grad_fn.rows()


def step_gradients(phi: torch.Tensor, data: ClientData, idx: torch.Tensor, weight: torch.Tensor, s: int, grad_fn,
                   batched) -> torch.Tensor:
    """Every client's minibatch gradient at local step `s` [m, d]: all at once with `batched` (`clients_at_once`),
    else client by client, zeros for a client without a minibatch."""
    rows = idx[:, s].to(phi.device)
    xb = data.x.index_select(0, rows.flatten()).view(*rows.shape, *data.x.shape[1:])
    yb, wb = data.y.index_select(0, rows.flatten()).view(rows.shape), weight[:, s].to(phi.device)
    if batched is not None:
        return batched(phi, xb, yb, wb)
    g = torch.zeros_like(phi)
    for i in range(phi.shape[0]):
        if bool(weight[i, s].any()):
            g[i] = grad_fn(phi[i], xb[i], yb[i], wb[i])
    return g


def local_pseudo_gradients(theta: torch.Tensor, data: ClientData, idx: torch.Tensor, weight: torch.Tensor,
                           lr: float, grad_fn, strategy: str) -> torch.Tensor:
    """Sum of the local SGD gradients of every client, i.e. (theta - phi) / lr after local SGD, summed
    directly (no cancellation); clients with no samples return zeros."""
    phi, pseudo = theta, torch.zeros_like(theta)
    steps = idx.shape[1]
    batched = clients_at_once(grad_fn, strategy)
    for s in range(steps):
        g = step_gradients(phi, data, idx, weight, s, grad_fn, batched)
        pseudo += g
        if s + 1 < steps:
            phi = phi - lr * g
    return pseudo


def local_updates(theta: torch.Tensor, state: OptState, data: ClientData, idx: torch.Tensor, weight: torch.Tensor,
                  lr: float, grad_fn, strategy: str, opt: LocalOptimizer) -> tuple[torch.Tensor, OptState]:
    """local_pseudo_gradients with a local optimizer (and L2 term): the sum of each client's update
    directions, i.e. (theta - phi) / lr after its local steps, and the optimizer state after them.
    Both strategies compute the same minibatch gradients; the optimizer step is one batched update."""
    phi, pseudo = theta, torch.zeros_like(theta)
    steps = idx.shape[1]
    batched = clients_at_once(grad_fn, strategy)
    active = weight.any(dim=2)  # [m, S] on the CPU: client has a minibatch at local step s
    full = active.all(dim=0).tolist()
    active = active.to(theta.device)
    for s in range(steps):
        g = step_gradients(phi, data, idx, weight, s, grad_fn, batched)
        u, state = opt.step(g, phi, state, None if full[s] else active[:, s])
        pseudo += u
        if s + 1 < steps:
            phi = phi - lr * u
    return pseudo, state


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
                         loss_fn, opt: LocalOptimizer | None = None, state: OptState | None = None) -> str:
    """Replays one round's local steps client by client (only after a failure) and says where the loss, the
    gradient or the weights first stopped being finite; with `opt`, from the round's starting `state`."""
    grad_fn = grad(loss_fn)
    phi = theta.clone()
    for s in range(idx.shape[1]):
        grads = torch.zeros_like(phi)
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
            if opt is None:
                phi[i] = phi[i] - lr * g
            else:
                grads[i] = g
        if opt is not None:
            active = weight[:, s].any(dim=1).to(theta.device)
            u, state = opt.step(grads, phi, state, active)
            bad = [i for i in range(len(u)) if not bool(torch.isfinite(u[i]).all())]
            if bad:
                return f"local step {s + 1}: client row {bad[0]}'s {opt.kind} update (l2 = {opt.l2:g}) is not finite"
            phi = phi - lr * u
    return "the mixing step: every local step stayed finite, the mixed weights did not"


def all_finite(t: torch.Tensor) -> bool:
    """Whether every entry of `t` is finite, from its minimum and maximum (one pass; aminmax propagates NaN), about 10
    times faster than isfinite's mask on a model stack (benchmarks/results/floatmath_cpu.json)."""
    return t.numel() == 0 or bool(torch.isfinite(torch.stack(torch.aminmax(t))).all())


def check_finite(theta: torch.Tensor, what: str) -> None:
    """One cheap check per round: raise Diverged naming `what` when any weight is NaN or infinite."""
    if not all_finite(theta):
        raise Diverged(f"{what}: weights are not finite (the run diverged); valid: a smaller learning rate")


@dataclass
class TrainLog:
    grad_evals: int = 0
    wall_time_s: float = 0.0
    opt_state: OptState | None = None  # the per-client optimizer state after the last round (None: plain SGD)


def train(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, clients: list[int],
          sched: Schedule, rounds: range, strategy: str, history=None, checkpoints=None,
          checkpoint_every: int = 0, progress: bool = False,
          opt_state: OptState | None = None,
          on_round: Callable[[int, torch.Tensor], None] | None = None) -> tuple[torch.Tensor, TrainLog]:
    """Run `rounds` of decentralized SGD for the stacked models `theta` [len(clients), d].

    The local steps use `sched.local_optimizer()`. Plain SGD without L2 (the default) runs the original
    code path; otherwise each client's optimizer state (momentum buffer, Adam moments) starts from
    `opt_state` (rows in the order of `clients`; None: zeros, a fresh optimizer) and persists across
    rounds without being mixed; the final state is returned in the log's `opt_state`. Checkpoints
    hold the models only.

    `history` (a HistoryWriter) receives every round's pseudo-gradients and mixing matrix W, plus
    W_without (the MH matrix without the removable clients, zero rows/columns there) when the schedule
    names removable clients;
    `checkpoints` (a CheckpointStore) receives the models every `checkpoint_every` rounds; `on_round(t, theta)` is
    called after every round t with the models after it (an evaluation; it must not change them, and its time is
    left out of the log's wall time).
    With `sched.repaired_without` (clients that have left), every round's graph first loses their nodes and is
    repaired (topology.repair_after_removal: a ring stays a ring, components are joined) before the MH weights.
    """
    grad_fn = grad(make_loss(model, spec))
    log, start, evaluating = TrainLog(), time.perf_counter(), 0.0
    opt = sched.local_optimizer()
    if opt.plain:
        if opt_state is not None:
            raise ValueError("train: opt_state given but train.optimizer is sgd with l2 = 0 (no state); valid: "
                             "no opt_state, or optimizer momentum / adam")
        opt = None
    elif opt_state is None:
        opt_state = opt.init(theta)
    elif opt_state.steps.shape[0] != theta.shape[0]:
        raise ValueError(f"train: opt_state has {opt_state.steps.shape[0]} client rows, theta {theta.shape[0]}; "
                         "valid: one row per client (OptState.select drops the departed)")
    for t in tqdm(rounds, desc="rounds", disable=not progress, mininterval=5):
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        if sched.repaired_without:  # the departed clients' node removed and the graph repaired (topology.py)
            graph = repair_after_removal(graph, sched.repaired_without, sched.topology)
        w = metropolis_hastings(graph, nodes=clients).to(theta)
        idx, weight = round_batches(data, clients, sched, t)
        state_before = opt_state
        if opt is None:
            pseudo = local_pseudo_gradients(theta, data, idx, weight, sched.lr, grad_fn, strategy)
        else:
            pseudo, opt_state = local_updates(theta, opt_state, data, idx, weight, sched.lr, grad_fn, strategy, opt)
        if history is not None:
            mixing = {"W": w}
            if sched.keep_connected_without:
                mixing["W_without"] = metropolis_hastings_without(graph, clients, sched.keep_connected_without)
            history.append(t, pseudo, mixing)
        before, theta = theta, mix(theta, pseudo, w, sched.lr, sched.mixing)
        if not all_finite(theta):  # one check per round; the replay runs only on failure
            where = first_nonfinite_step(before, data, idx, weight, sched.lr, make_loss(model, spec), opt, state_before)
            raise Diverged(f"{sched.experiment or 'training'}: diverged in round {t} (counting from 0), {where}; "
                           f"lr = {sched.lr:g}, optimizer {sched.optimizer}; valid: a smaller train.lr")
        log.grad_evals += int(weight.sum())
        if checkpoints is not None and checkpoint_every and (t + 1) % checkpoint_every == 0:
            checkpoints.save(t + 1, theta, clients)
        if on_round is not None:  # an evaluation: its time is not training's
            started = time.perf_counter()
            on_round(t, theta)
            evaluating += time.perf_counter() - started
    log.wall_time_s = time.perf_counter() - start - evaluating
    log.opt_state = opt_state
    return theta, log



def retain_forget_rounds(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, retain: ClientData, forget: ClientData,
                         clients: list[int], sched: Schedule, rounds: range, strategy: str, retain_weight: float,
                         forget_weight: float, what: str, hint: str,
                         mask: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    """D-SGD rounds whose local step is retain_weight x the gradient on a retained batch plus forget_weight x the
    gradient on a forget batch (the forget batches cycle), every client of `clients` stepping on its own data and
    the models mixed as in training; with `mask`, only the masked coordinates step and mix (the others keep their
    values). Returns the models and the per-sample gradient evaluations; a non-finite round raises Diverged naming
    `what`, the round and `hint`."""
    grad_fn = grad(make_loss(model, spec))
    batched = clients_at_once(grad_fn, strategy)
    grad_evals = 0
    for t in rounds:
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        w = metropolis_hastings(graph, nodes=clients).to(theta)
        idx_r, w_r = round_batches(retain, clients, sched, t)
        idx_f, w_f = round_batches(forget, clients, sched, t)
        steps = max(idx_r.shape[1], 1 if idx_f.shape[1] else 0)
        phi, pseudo = theta, torch.zeros_like(theta)
        for step in range(steps):
            g = torch.zeros_like(theta)
            if step < idx_r.shape[1]:
                g += retain_weight * step_gradients(phi, retain, idx_r, w_r, step, grad_fn, batched)
                grad_evals += int(w_r[:, step].sum())
            if idx_f.shape[1]:
                f = step % idx_f.shape[1]
                g += forget_weight * step_gradients(phi, forget, idx_f, w_f, f, grad_fn, batched)
                grad_evals += int(w_f[:, f].sum())
            if mask is not None:
                g *= mask
            pseudo += g
            if step + 1 < steps:
                phi = phi - sched.lr * g
        mixed = mix(theta, pseudo, w, sched.lr, sched.mixing)
        theta = mixed if mask is None else theta + mask * (mixed - theta)
        if not all_finite(theta):
            raise Diverged(f"{what} diverged in round {t} (counting from 0); {hint}")
    return theta, grad_evals
