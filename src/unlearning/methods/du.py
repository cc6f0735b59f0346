"""DU: certified decentralized unlearning with Newton/Fisher corrections (Wu et al. 2026, Sec. IV).

Clients are the rows of one stacked parameter tensor theta [N, d]; row k is the graph node `clients[k]`.

Sample-wise (Algorithm 1), for every requesting client c (m_c > 0), at c's own model x_c:

    H_c      = 1/(n_c - m_c) sum_{xi in S_c \\ U_c} grad^2 F~(x_c, xi)                      (eq. 2)
    x^Delta_c = 1/(n_c - m_c) H_c^{-1} sum_{xi in U_c} grad F~(x_c, xi)                     (eq. 3)
    x~^Delta_c = x^Delta_c + nu_c,  nu_c ~ N(0, sigma_c^2 I)                     (Algorithm 1, lines 5-6)

flooded over the graph with message ids; every client, the requester included, adds (1/N) x~^Delta_c once
per message (lines 10-17). F~ = F + (lambda/2)||x||^2 is the regularised loss (eq. 4): its gradient is
grad F + lambda x (`l2`), its curvature the CE curvature plus `damping` I (with damping = l2 the exact
Hessian is exactly grad^2 F~). Curvature is the exact Hessian (multinomial logistic regression, the
fidelity check) or the diagonal of the empirical Fisher (eq. 7) from per-sample gradients (torch.func),
the paper's O(d) variant.

Class-wise: every client deletes its samples of one class; Algorithm 1 with those masks.

Client-wise (Sec. IV-C): client c leaves; with the remaining clients' curvature at their own models over
their full data,

    H^_c = 1/(N-1) sum_{i != c} grad^2 f_i(x_i)                                             (eq. 5)
    x^Delta_c = 1/(N-1) H^_c^{-1} grad f_c(x_c)                                             (eq. 6)

and every remaining client adds w x~^Delta_c, w = 1/N (`client_weight: literal`, Algorithm 1's weight) or
w = 1 (`newton`: the Newton step on the remaining clients' objective, which eq. 6 already normalises).

Noise: sigma_c from privacy.du_noise (C_eff calibration by default, or the paper's constants, a fixed
sigma for sweeps, or none); `certified_noise_fix` scales nu_c so that every final model's noise std is
sigma. Degenerate requesters (n_c = m_c: all local data deleted) use their full data and denominator n_c,
and are logged; fewer than 100 retained samples is logged as a warning.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import networkx as nx
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from ..experiment import ForgetRequest
from ..plugins import param
from ..privacy import du_noise
from ..seeding import derive_seed, generator
from ..topology import graph_for_round
from ..train.autodiff import grad
from ..train.dsgd import ClientData
from ..train.exact import logreg_hessian
from ..train.flat import FlatSpec
from . import Cost, TrainedState, Unlearned, register

log = logging.getLogger(__name__)

CURVATURES = ("fisher_diag", "hessian_exact")
NOISE_MODES = ("c_eff", "theory", "fixed", "none")
CLIENT_WEIGHTS = ("literal", "newton")
FEW_RETAINED = 100


# ----------------------------------------------------------------------------------------------- settings

@dataclass
class DUConfig:
    """DU's parameters. `l2` must be the L2 strength of the training loss (eq. 4; 0 when training had none);
    `damping` (> 0) is added to the curvature (= l2: the exact Hessian of eq. 4); `lam` (strong convexity of
    Lemma 3, noise: theory) defaults to `l2`. noise: c_eff (default, C_eff (m/n)^2), theory (M, L, lam),
    fixed (`sigma`, for sweeps) or none."""

    curvature: str = "fisher_diag"
    damping: float = 1e-3
    l2: float = 1e-3
    noise: str = "c_eff"
    epsilon: float = 1.0
    delta: float = 1e-5
    c_eff: float = du_noise.C_EFF
    M: float | None = None
    L: float | None = None
    lam: float | None = None
    sigma: float | None = None
    certified_noise_fix: bool = False
    client_weight: str = "newton"
    chunk: int = 256
    seed: int = 0

    def __post_init__(self):
        for key, valid in (("curvature", CURVATURES), ("noise", NOISE_MODES), ("client_weight", CLIENT_WEIGHTS)):
            if getattr(self, key) not in valid:
                raise ValueError(f"{key} = {getattr(self, key)!r}: unknown; valid: {', '.join(valid)}")
        for key, low in (("damping", None), ("l2", 0.0)):
            value = getattr(self, key)
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not number or (value <= 0 if low is None else value < low):
                raise ValueError(f"{key} = {value!r}: valid: a finite number {'> 0' if low is None else '>= 0'}")
        if self.noise != "none":
            du_noise.sigma(0.0, self.epsilon, self.delta)  # epsilon in (0, 1], delta in (0, 1)
        if self.noise == "theory":
            if self.M is None or self.L is None:
                raise ValueError("noise: theory needs M and L (and lam, default l2); valid: give them or noise: c_eff")
            du_noise.sensitivity(self.M, self.L, self.l2 if self.lam is None else self.lam, 1, 1)
        if self.noise == "fixed" and (self.sigma is None or self.sigma < 0):
            raise ValueError(f"sigma = {self.sigma!r}: noise: fixed needs a sigma >= 0")
        if not isinstance(self.certified_noise_fix, bool):
            raise ValueError(f"certified_noise_fix = {self.certified_noise_fix!r}: valid: true or false")

    def sigma_for(self, m: int, n: int, clients: int, client_wise: bool = False) -> float:
        """sigma_c for m of n deleted (sample/class-wise) or for one of N clients leaving (client-wise)."""
        if self.noise == "none" or m == 0:
            return 0.0
        if self.noise == "fixed":
            return float(self.sigma)
        if self.noise == "c_eff":
            ratio = 1 / clients if client_wise else m / n
            return du_noise.sigma_c_eff(ratio, self.epsilon, self.delta, self.c_eff)
        lam = self.l2 if self.lam is None else self.lam
        sens = (du_noise.sensitivity_client(self.M, self.L, lam, clients) if client_wise
                else du_noise.sensitivity(self.M, self.L, lam, m, n))
        return du_noise.sigma(sens, self.epsilon, self.delta)


# ----------------------------------------------------------------------------------------------- curvature

def sample_loss(model: nn.Module, spec: FlatSpec):
    """F(x, xi): the cross-entropy of one sample as a function of the flat parameters."""

    def loss(flat: torch.Tensor, x1: torch.Tensor, y1: torch.Tensor) -> torch.Tensor:
        logits = functional_call(model, spec.unflatten(flat), (x1.unsqueeze(0),))
        return F.cross_entropy(logits, y1.unsqueeze(0))

    return loss


def per_sample_grads(model: nn.Module, spec: FlatSpec, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                     chunk: int = 256) -> torch.Tensor:
    """[n, d] gradients of F at `flat`, one row per sample, by vmap(grad) in chunks."""
    fn = grad(sample_loss(model, spec)).rows(in_dims=(None, 0, 0))
    if len(x) == 0:
        return flat.new_zeros(0, flat.numel())
    return torch.cat([fn(flat, xs, ys) for xs, ys in zip(torch.split(x, chunk), torch.split(y, chunk))])


def fisher_diag(model: nn.Module, spec: FlatSpec, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                chunk: int = 256) -> torch.Tensor:
    """The diagonal of the empirical Fisher (eq. 7), (1/n) sum_xi grad F(x, xi) (.) grad F(x, xi): [d]."""
    total = torch.zeros_like(flat)
    for xs, ys in zip(torch.split(x, chunk), torch.split(y, chunk)):
        total += (per_sample_grads(model, spec, flat, xs, ys, chunk) ** 2).sum(0)
    return total / max(len(x), 1)


def curvature(kind: str, model: nn.Module, spec: FlatSpec, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
              classes: int, chunk: int = 256) -> torch.Tensor:
    """The mean CE curvature over (x, y): the diagonal Fisher [d] or the exact Hessian [d, d]."""
    if kind == "fisher_diag":
        return fisher_diag(model, spec, flat, x, y, chunk)
    if kind == "hessian_exact":
        return logreg_hessian(flat, x, classes)
    raise ValueError(f"curvature = {kind!r}: unknown; valid: {', '.join(CURVATURES)}")


def solve(curv: torch.Tensor, damping: float, g: torch.Tensor) -> torch.Tensor:
    """(curv + damping I)^{-1} g: element-wise for a diagonal, a linear solve for a matrix."""
    if curv.dim() == 1:
        return g / (curv + damping)
    eye = torch.eye(curv.shape[0], dtype=curv.dtype, device=curv.device)
    return torch.linalg.solve(curv + damping * eye, g)


def grad_sum(model: nn.Module, spec: FlatSpec, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, l2: float,
             chunk: int = 1024) -> torch.Tensor:
    """sum_xi grad F~(x, xi) = sum_xi grad F(x, xi) + m l2 x over the samples (x, y) (eq. 3's sum, eq. 4)."""
    total = torch.zeros_like(flat)

    def summed(w, xs, ys):
        logits = functional_call(model, spec.unflatten(w), (xs,))
        return F.cross_entropy(logits, ys, reduction="sum")

    g = grad(summed)
    for xs, ys in zip(torch.split(x, chunk), torch.split(y, chunk)):
        total += g(flat, xs, ys)
    return total + len(x) * l2 * flat


# ----------------------------------------------------------------------------------------------- flooding

@dataclass
class FloodLog:
    """Who applied which message, and what the flooding cost."""

    delivered: torch.Tensor            # [nodes, messages] first receipts (applications) per node
    discarded: int                     # duplicate receipts, dropped (Algorithm 1, lines 16-17)
    messages_sent: int                 # transmissions over edges, all messages
    floats_sent: int                   # messages_sent x d
    hops: list[int]                    # per message: rounds until the last node had it (eccentricity)
    ids: list[tuple] = field(default_factory=list)


def flood(graph: nx.Graph, nodes: list[int], sources: list[int], ids: list[tuple], dim: int) -> FloodLog:
    """Synchronous flooding (Algorithm 1, lines 7 and 12-17): each message starts at its source, which
    applies it; a node that receives a message for the first time applies it and forwards it to every
    neighbour but the sender; later copies are discarded. Raises when a message misses a node."""
    pos = {v: k for k, v in enumerate(nodes)}
    sub = graph.subgraph(nodes)
    delivered = torch.zeros(len(nodes), len(sources), dtype=torch.long)
    sent = discarded = 0
    hops = []
    for k, source in enumerate(sources):
        have = {source}
        delivered[pos[source], k] += 1
        frontier, rounds = [(source, None)], 0
        while frontier:
            nxt: dict[int, int] = {}
            for node, came_from in frontier:
                for nb in sorted(sub.neighbors(node)):
                    if nb == came_from:
                        continue
                    sent += 1
                    if nb in have or nb in nxt:
                        discarded += 1
                    else:
                        nxt[nb] = node
            for nb in nxt:
                delivered[pos[nb], k] += 1
            have.update(nxt)
            frontier = list(nxt.items())
            rounds += bool(nxt)
        hops.append(rounds)
        if len(have) != len(nodes):
            missed = sorted(set(nodes) - have)
            raise ValueError(f"message {ids[k]} from client {source} never reaches clients {missed}: the graph is "
                             "not connected; valid: a connected topology")
    return FloodLog(delivered, discarded, sent, sent * dim, hops, list(ids))


# ----------------------------------------------------------------------------------------------- DU

@dataclass
class DUResult:
    theta: torch.Tensor                # [remaining clients, d]
    clients: list[int]
    corrections: dict[int, torch.Tensor]   # x^Delta_c (noiseless) per requester
    sigmas: dict[int, float]
    noise_std: dict[int, float]        # the std of nu_c actually drawn (sigma x certified_noise_fix's scale)
    flood: FloodLog | None
    grad_evals: int = 0
    degenerate: list[int] = field(default_factory=list)
    wall_time_s: float = 0.0


def elapsed(start: float, like: torch.Tensor) -> float:
    """Seconds since `start` (time.perf_counter) once the device holding `like` has finished its queued work: CUDA
    runs asynchronously, and without the wait a GPU's time would be the kernels' launch time."""
    if like.is_cuda:
        torch.cuda.synchronize(like.device)
    return time.perf_counter() - start


def local_split(data: ClientData, forget: list[torch.Tensor], row: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(retained R_c, deleted U_c) sample indices of client row `row` among its current data."""
    idx, keep, f = data.indices[row], data.keep[row], forget[row].to(data.keep[row].device)
    return idx[keep & ~f], idx[keep & f]


@dataclass
class RequestTerms:
    """One requester's pieces of eq. 2-3, computed once and reusable for any damping or noise (the sweeps):
    the mean curvature over R_c (S_c if degenerate), sum_{U_c} grad F~, and the denominator n_c - m_c."""

    curv: torch.Tensor
    grad: torch.Tensor
    denom: int
    deleted: int
    retained: int
    degenerate: bool

    def correction(self, damping: float) -> torch.Tensor:
        """x^Delta_c = 1/(n_c - m_c) (H_c + damping I)^{-1} sum_{U_c} grad F~   (eq. 3)."""
        return solve(self.curv, damping, self.grad) / self.denom


def request_terms(model: nn.Module, spec: FlatSpec, flat: torch.Tensor, data: ClientData, retained: torch.Tensor,
                  deleted: torch.Tensor, cfg: DUConfig, classes: int, who: str = "") -> RequestTerms:
    """H_c of eq. 2 (or the Fisher of eq. 7) and eq. 3's gradient sum for one requester at its model `flat`."""
    n_r, m = len(retained), len(deleted)
    degenerate = n_r == 0
    if degenerate:  # every local sample deleted: curvature over S_c, denominator n_c
        log.warning("DU: %s deletes all %d of its samples; curvature over its full data, denominator n_c", who, m)
        basis, denom = deleted, m
    else:
        if n_r < FEW_RETAINED:
            log.warning("DU: %s keeps only %d samples (< %d); its curvature is noisy", who, n_r, FEW_RETAINED)
        basis, denom = retained, n_r
    dev = flat.device
    basis, deleted = basis.to(dev), deleted.to(dev)
    curv = curvature(cfg.curvature, model, spec, flat, data.x[basis], data.y[basis], classes, cfg.chunk)
    g = grad_sum(model, spec, flat, data.x[deleted], data.y[deleted], cfg.l2)
    return RequestTerms(curv, g, denom, m, n_r, degenerate)


def _noise(dim: int, std: float, seed: int, *keys) -> torch.Tensor:
    if std == 0:
        return torch.zeros(dim)
    return std * torch.randn(dim, generator=generator(seed, "du", *keys))


def _classes(data: ClientData) -> int:
    return int(data.y.max()) + 1 if len(data.y) else 0


def all_request_terms(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData,
                      forget: list[torch.Tensor], clients: list[int], cfg: DUConfig,
                      classes: int | None = None) -> dict[int, RequestTerms]:
    """Phase A's expensive part for every client with m_c > 0: {row: RequestTerms} at each requester's model."""
    classes = classes or _classes(data)
    out = {}
    for row, c in enumerate(clients):
        retained, deleted = local_split(data, forget, row)
        if len(deleted):
            out[row] = request_terms(model, spec, theta[row], data, retained, deleted, cfg, classes, f"client {c}")
    return out


def apply_terms(theta: torch.Tensor, terms: dict[int, RequestTerms], graph: nx.Graph, clients: list[int],
                cfg: DUConfig, request_id: int = 0) -> DUResult:
    """Algorithm 1 from precomputed terms: each requester's x^Delta_c at `cfg.damping` plus its noise nu_c
    (lines 5-6), flooded (lines 7, 12-17), every client adding (1/N) x~^Delta_c once per message."""
    n_clients, dim = theta.shape
    if not terms:
        return DUResult(theta.clone(), list(clients), {}, {}, {}, None, 0, [])
    scale = du_noise.noise_scale(n_clients, len(terms), cfg.certified_noise_fix)
    corrections, sigmas, stds, messages, degenerate, grad_evals = {}, {}, {}, [], [], 0
    for row, t in terms.items():
        c = clients[row]
        corrections[c] = t.correction(cfg.damping)
        sigmas[c] = cfg.sigma_for(t.deleted, t.deleted + t.retained, n_clients)
        stds[c] = sigmas[c] * scale
        messages.append(corrections[c] + _noise(dim, stds[c], cfg.seed, request_id, c).to(theta))
        degenerate += [c] if t.degenerate else []
        grad_evals += t.deleted + (t.retained if cfg.curvature == "fisher_diag" else 0)
    ids = [(clients[row], request_id) for row in terms]
    flog = flood(graph, list(clients), [clients[row] for row in terms], ids, dim)
    update = flog.delivered.to(theta) @ torch.stack(messages)
    return DUResult(theta + update / n_clients, list(clients), corrections, sigmas, stds, flog, grad_evals,
                    degenerate)


def sample_wise(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, forget: list[torch.Tensor],
                graph: nx.Graph, clients: list[int], cfg: DUConfig, request_id: int = 0,
                classes: int | None = None) -> DUResult:
    """Algorithm 1 for every client with m_c > 0 at once (simultaneous requests, Remark 2)."""
    start = time.perf_counter()
    terms = all_request_terms(model, spec, theta, data, forget, clients, cfg, classes)
    res = apply_terms(theta, terms, graph, clients, cfg, request_id)
    res.wall_time_s = elapsed(start, res.theta)
    return res


def class_masks(data: ClientData, cls: int, classes: int) -> list[torch.Tensor]:
    """Class-wise request: every client forgets its samples of class `cls`."""
    if isinstance(cls, bool) or not isinstance(cls, int) or not 0 <= cls < classes:
        raise ValueError(f"class = {cls!r}: valid: an integer in 0..{classes - 1}")
    return [data.y[idx.to(data.y.device)].cpu() == cls for idx in data.indices]


def class_wise(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, cls: int, graph: nx.Graph,
               clients: list[int], cfg: DUConfig, classes: int, request_id: int = 0) -> DUResult:
    """Every client removes class `cls` (Sec. VI): Algorithm 1 with U_c = {xi in S_c: y = cls}."""
    return sample_wise(model, spec, theta, data, class_masks(data, cls, classes), graph, clients, cfg, request_id,
                       classes)


@dataclass
class ClientTerms:
    """Client-wise removal's expensive part, computed once for any weight: the remaining clients' mean curvature
    H^_c (eq. 5), grad f~_c at the leaver's model (the mean over its data), their grad evaluations and time."""

    curv: torch.Tensor
    grad: torch.Tensor
    samples: int
    grad_evals: int
    wall_time_s: float


def client_terms(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, target: int,
                 clients: list[int], cfg: DUConfig, classes: int | None = None) -> ClientTerms:
    """Eq. 5's H^_c over the remaining clients (each at its own model, over its full data) and grad f~_c(x_c)."""
    start = time.perf_counter()
    classes = classes or _classes(data)
    if target not in clients:
        raise ValueError(f"client = {target!r}: not in the network; valid: one of {clients}")
    if len(clients) < 2:
        raise ValueError("client-wise removal needs at least 2 clients")
    trow = clients.index(target)
    curv, grad_evals = None, 0
    for r in (r for r in range(len(clients)) if r != trow):
        own = data.indices[r][data.keep[r]].to(theta.device)
        h = curvature(cfg.curvature, model, spec, theta[r], data.x[own], data.y[own], classes, cfg.chunk)
        curv = h if curv is None else curv + h
        grad_evals += len(own) if cfg.curvature == "fisher_diag" else 0
    own = data.indices[trow][data.keep[trow]].to(theta.device)
    if len(own) == 0:
        raise ValueError(f"client {target} holds no data to remove")
    g = grad_sum(model, spec, theta[trow], data.x[own], data.y[own], cfg.l2) / len(own)   # grad f~_c(x_c)
    curv = curv / (len(clients) - 1)                                                     # eq. 5's mean
    return ClientTerms(curv, g, len(own), grad_evals + len(own), elapsed(start, curv))


def client_wise(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData, target: int,
                graph: nx.Graph, clients: list[int], cfg: DUConfig, request_id: int = 0,
                classes: int | None = None, terms: ClientTerms | None = None) -> DUResult:
    """Client `target` leaves (Sec. IV-C, eq. 5-6); returns the remaining clients' corrected models. `terms`
    (client_terms at the same models) lets several weights share one curvature; its time counts in each."""
    start = time.perf_counter()
    shared = terms is not None  # computed by the caller: its time is added below
    terms = terms or client_terms(model, spec, theta, data, target, clients, cfg, classes)
    n_clients, dim = theta.shape
    trow = clients.index(target)
    rest = [r for r in range(n_clients) if r != trow]
    corr = solve(terms.curv, cfg.damping, terms.grad) / (n_clients - 1)                 # eq. 6
    weight = 1.0 / n_clients if cfg.client_weight == "literal" else 1.0
    sig = cfg.sigma_for(terms.samples, terms.samples, n_clients, client_wise=True)
    std = sig / weight if cfg.certified_noise_fix else sig                               # final std sigma with the fix
    message = corr + _noise(dim, std, cfg.seed, request_id, target).to(theta)
    flog = flood(graph, list(clients), [target], [(target, request_id)], dim)
    applied = flog.delivered[:, 0].to(theta)[rest]
    out = theta[rest] + weight * applied[:, None] * message
    wall = elapsed(start, out) + (terms.wall_time_s if shared else 0.0)
    return DUResult(out, [clients[r] for r in rest], {target: corr}, {target: sig}, {target: std}, flog,
                    terms.grad_evals, [], wall)


def sequential(model: nn.Module, spec: FlatSpec, theta: torch.Tensor, data: ClientData,
               requests: list[list[torch.Tensor]], graph: nx.Graph, clients: list[int], cfg: DUConfig,
               classes: int | None = None, between=None) -> tuple[torch.Tensor, ClientData, list[DUResult]]:
    """Requests one after another (Fig. 1): each at the current models and the current retained data (n_c is
    the current size); `between(theta, data, r)` (e.g. fine-tuning rounds) runs after request r."""
    results = []
    for r, forget in enumerate(requests):
        res = sample_wise(model, spec, theta, data, forget, graph, clients, cfg, request_id=r, classes=classes)
        results.append(res)
        theta, data = res.theta, data.retained([f.to(k.device) for f, k in zip(forget, data.keep)])
        if between is not None:
            theta = between(theta, data, r)
    return theta, data, results


def sequential_masks(data: ClientData, n_requests: int, total_fraction: float, seed: int) -> list[list[torch.Tensor]]:
    """n_requests disjoint requests per client that together remove `total_fraction` of its original data:
    round(total_fraction n_c / n_requests) each, drawn without replacement from what is still retained."""
    if not 0 < total_fraction < 1:
        raise ValueError(f"total_fraction = {total_fraction!r}: valid: a number in (0, 1)")
    out = [[] for _ in range(n_requests)]
    for row, (idx, keep) in enumerate(zip(data.indices, data.keep)):
        each = round(total_fraction * int(keep.sum()) / n_requests)
        order = torch.randperm(len(idx), generator=generator(seed, "du-sequential", row))
        order = order[keep[order].cpu()]
        for r in range(n_requests):
            mask = torch.zeros(len(idx), dtype=torch.bool)
            mask[order[r * each:(r + 1) * each]] = True
            out[r].append(mask)
    return out


def global_newton(model: nn.Module, spec: FlatSpec, x: torch.Tensor, data: ClientData, forget: list[torch.Tensor],
                  cfg: DUConfig, classes: int | None = None) -> torch.Tensor:
    """The centralised Newton step that Lemma 3 analyses, at one (consensus) model x: the retained objective
    f' = (1/N) sum_i f~_{R_i} (eq. 1 without U) has gradient -(1/N) sum_i (1/(n_i - m_i)) sum_{U_i} grad F~ at
    a minimiser of eq. 1, so x + H'^{-1} (1/N) sum_i x-sum_i with H' = (1/N) sum_i (H_{R_i} + damping I).
    The reference that Algorithm 1 approximates with local curvature (uniform influence, Sec. IV-B)."""
    classes = classes or _classes(data)
    n = len(data.indices)
    curv, g = None, torch.zeros_like(x)
    for row in range(n):
        retained, deleted = local_split(data, forget, row)
        h = curvature(cfg.curvature, model, spec, x, data.x[retained.to(x.device)], data.y[retained.to(x.device)],
                      classes, cfg.chunk)
        curv = h if curv is None else curv + h
        if len(deleted):
            g += grad_sum(model, spec, x, data.x[deleted.to(x.device)], data.y[deleted.to(x.device)],
                          cfg.l2) / len(retained)
    return x + solve(curv / n, cfg.damping, g / n)


# ----------------------------------------------------------------------------------------------- registry

def row_noise_std(res: DUResult, clients: list[int], kind: str, cfg: DUConfig) -> list[float]:
    """The std of the Gaussian noise each returned model carries (rows of `res.theta`), per coordinate: a client
    adds each delivered message once, scaled by 1/N (Algorithm 1) or, client-wise, by eq. 6's weight, so its noise
    is N(0, s^2 I) with s^2 = scale^2 sum over its delivered messages of their std^2."""
    if res.flood is None:
        return [0.0] * len(res.clients)
    scale = (1.0 / len(clients) if cfg.client_weight == "literal" else 1.0) if kind == "client" else 1.0 / len(clients)
    stds = torch.tensor([res.noise_std[c] for c, _ in res.flood.ids], dtype=torch.float64)
    delivered = res.flood.delivered.to(torch.float64)
    per_row = scale * (delivered.square() @ stds.square()).sqrt()
    return [float(per_row[clients.index(c)]) for c in res.clients]


def du_audit_pair(state: TrainedState, request: ForgetRequest, params: dict,
                  result: Unlearned) -> tuple[torch.Tensor, list[float]]:
    """The Gaussian mechanism DU's certificate is about: the noiseless corrected models (the same corrections,
    no noise drawn) and each one's noise std, rows as in `result`."""
    noiseless = du_method(state, request, {**params, "noise": "none"})
    assert noiseless.clients == result.clients
    return noiseless.theta, result.certificate["row_noise_std"]


def du_claim(result: Unlearned, budget: dict) -> dict:
    cert = result.certificate
    return {"epsilon": cert["epsilon"], "delta": cert["delta"], "sigma": cert["sigma"],
            "basis": f"DU Theorem 1 (C_eff noise at epsilon {budget['epsilon']:g}); assumes {cert['assumes']}, "
                     "which this model is not"}


def du_check(block: dict, task: dict) -> str | None:
    """DU's certificate (the classical Gaussian mechanism, its Theorem 1) holds for epsilon <= 1 only."""
    if block["epsilon"] > 1:
        return (f"common.budget.epsilon: {block['epsilon']:g}: DU's certificate (the classical Gaussian mechanism, its "
                "Theorem 1) holds for epsilon <= 1 only; valid: a number in (0, 1], or du out of the setting's methods")
    return None


DU_PARAMS = {"curvature": param(["fisher_diag", "hessian_exact"], "fisher_diag"),
             "damping": param("number", 10.0, exclusiveMinimum=0), "l2": param("number", 0.0, minimum=0),
             "noise": param(["c_eff", "theory", "fixed", "none"], "c_eff"),
             "c_eff": param("number", 0.02064, exclusiveMinimum=0)}  # cdfl.unlearn's recommended configuration


@register("du", label="DU", takes_budget=True, claim=du_claim, audit_pair=du_audit_pair, params=DU_PARAMS,
          check=du_check)
def du_method(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    """The method interface: the trained state's stacked models, its last round's graph and the request
    (fraction or class: Algorithm 1 over every client with m_c > 0; client: eq. 5-6). `params` holds
    DUConfig's keys; the noise seed defaults to the experiment's."""
    s = state.setup
    cfg = DUConfig(**{"seed": derive_seed(s.seed, s.name, "du"), **params})
    sched = s.schedule()
    graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, state.rounds - 1,
                            without=sched.keep_connected_without)
    data = ClientData(s.data.x, s.data.y, [s.data.indices[c] for c in state.clients],
                      [s.data.keep[c] for c in state.clients])
    if request.kind == "client":
        if len(request.removed) != 1:
            raise ValueError(f"DU client-wise removes one client per request; got {list(request.removed)}")
        res = client_wise(s.model, s.spec, state.theta, data, request.removed[0], graph, list(state.clients), cfg,
                          classes=s.classes)
    else:
        forget = [request.masks[c] for c in state.clients]
        res = sample_wise(s.model, s.spec, state.theta, data, forget, graph, list(state.clients), cfg,
                          classes=s.classes)
    certificate = {"epsilon": cfg.epsilon if cfg.noise != "none" else None, "delta": cfg.delta,
                   "sigma": res.sigmas, "noise_std": res.noise_std, "noise": cfg.noise,
                   "row_noise_std": row_noise_std(res, list(state.clients), request.kind, cfg),
                   "certified_noise_fix": cfg.certified_noise_fix,
                   "assumes": "strongly convex, smooth, Lipschitz loss at a minimiser (Theorem 1)",
                   "degenerate_clients": res.degenerate,
                   "messages": res.flood.messages_sent if res.flood else 0}
    floats = res.flood.floats_sent if res.flood else 0
    return Unlearned(res.theta, res.clients, Cost(res.wall_time_s, res.grad_evals, 0, floats), certificate)

