"""RR-DU: randomized-restart decentralized unlearning (Lamri & Maniatakos 2025, Alg. 1 = Alg. 4, Sec. 4.2).

After training (a token random walk, train/random_walk.py), client u asks to delete D_f from D_u
(|D_f| = m, |D_u| = n_u). The walk continues for T_u hops with a new routing rule (Alg. 4 line 5): the token
goes to u with probability p, otherwise to a uniform client of V minus {u}, i.i.d. per hop.

- At u (Alg. 4 lines 8-14, Lightweight mode): g_u = (m/n_u) grad l(theta; B_f) on a minibatch B_f of D_f, and
  the noisy projected ascent step theta <- Pi_{B(theta_ref, rho)}(theta + eta (g_u + Z)), Z ~ N(0, sigma^2 I_d).
  The forget gradient is not clipped (spec A7 as its note of 2026-11-26 reads it: the paper does not clip its
  baseline; L sets sigma only, so the run's epsilon is nominal); `clip` clips the batch-mean gradient to norm L
  before the scaling, Table 15's "additional clipping". Exact mode descends on u's retained data instead:
  g_u = -grad l(theta; B_{u minus f}) (clipped likewise under `clip`).
- Elsewhere (lines 16-18): one noiseless descent step on the average gradient of s minibatches of D_v
  (Pi_Theta = identity, spec A6); `descent_steps` > 1 repeats it, "epoch" runs one local epoch of minibatch
  steps on D_v as a training hop does (spec A1's sensitivity reading); the u-step stays one step.

Optimizer semantics (spec 2.4; `semantics`):
- "adam" (default): the token-carried Adam takes the ascent step (grad := -g_u), then the parameter-space
  noise eta sigma xi is added, then the projection; the descent steps are ordinary Adam steps.
- "sgd_literal" (spec 2.4(a)): Alg. 4's u-step verbatim, theta <- Pi(theta + eta (g_u + sigma xi)), with
  Adam untouched; the only mode in which the nominal epsilon (privacy/rrdu_noise.py) is a certificate.
- "adam_fresh" (spec 2.4(c), the style of the authors' earlier FL code): as "adam", but every hop of the
  unlearning phase starts from a fresh Adam state (`token.fresh_per_hop`; the baselines' walks get it from the
  experiment; training keeps the carried state, so every semantics starts from the same original).

theta_ref = theta_0, the model when unlearning starts (frozen; spec A5). The projection acts on all trainable
parameters as one vector; BatchNorm buffers are carried, never noised or projected (spec 2.3). rho = None
means no projection (Table 3's "no projection"). xi is drawn as a standard normal from the noise stream on
every u-visit and scaled by sigma, so runs differing only in sigma share their xi (spec 4.2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..plugins import group, param
from ..privacy import rrdu_noise
from ..privacy.search import finite, integer
from ..seeding import derive_seed
from ..train.random_walk import ClientData, NextHop, Streams, Token, sample_batch
from . import Cost, TrainedState, Unlearned, register

MODES = ("lightweight", "exact")
SEMANTICS = ("adam", "sgd_literal", "adam_fresh")
EPOCH = "epoch"  # descent_steps: one local epoch per non-u hop


def restart_rule(n_clients: int, u: int, p: float) -> NextHop:
    """Alg. 4 line 5: w.p. p the next hop is u, else uniform over V minus {u}; independent of the current node."""
    n_clients = integer("N (clients)", n_clients, 2)
    if not (isinstance(u, int) and 0 <= u < n_clients):
        raise ValueError(f"u = {u!r}: valid: a client index in [0, {n_clients - 1}]")
    p = rrdu_noise.check_p(p)

    def rule(current: int | None, rng: np.random.Generator) -> int:
        if rng.random() < p:
            return u
        other = int(rng.integers(n_clients - 1))
        return other + (other >= u)

    return rule


def project(theta: torch.Tensor, ref: torch.Tensor, rho: float | None) -> tuple[torch.Tensor, bool]:
    """Pi onto B(ref, rho): ref + (theta - ref) min(1, rho / ||theta - ref||); rho None: identity. Returns the
    point and whether the projection moved it."""
    if rho is None:
        return theta, False
    dist = float(torch.linalg.vector_norm(theta - ref))
    if dist <= rho:
        return theta, False
    return ref + (theta - ref) * (rho / dist), True


def clip(g: torch.Tensor, L: float) -> tuple[torch.Tensor, float]:
    """g scaled to norm <= L, and its norm before clipping."""
    norm = float(torch.linalg.vector_norm(g))
    return (g * (L / norm) if norm > L else g), norm


@dataclass(frozen=True)
class RRDUConfig:
    """RR-DU's parameters (Table 11 and 12 defaults for MNIST/FLNet). sigma None: Cor. 5.2's closed form."""

    u: int = 0
    p: float = 0.1
    T_u: int = 100
    s: int = 4
    batch_size: int = 64
    L: float = 0.5
    rho: float | None = 10.82
    epsilon: float = 1.0
    delta: float = 1e-5
    sigma: float | None = None
    mode: str = "lightweight"
    semantics: str = "adam"
    descent_steps: int | str = 1  # spec A1's updates per non-u hop (1: one update per hop; "epoch": a local epoch)
    clip: bool = False            # clip the forget gradient to L (Table 15's "additional clipping"); L sets sigma

    def __post_init__(self) -> None:
        rrdu_noise.check_p(self.p)
        rrdu_noise.check_rho(self.rho)
        integer("T_u", self.T_u, 0)
        integer("s", self.s)
        integer("batch_size", self.batch_size)
        if self.descent_steps != EPOCH:
            try:
                integer("descent_steps", self.descent_steps)
            except ValueError as err:
                raise ValueError(f"{err} or \"{EPOCH}\"") from None
        finite("L", self.L, 0.0)
        if self.sigma is not None:
            finite("sigma", self.sigma, 0.0, strict=False)
        if self.mode not in MODES:
            raise ValueError(f"mode = {self.mode!r}: valid: {', '.join(MODES)}")
        if self.semantics not in SEMANTICS:
            raise ValueError(f"semantics = {self.semantics!r}: valid: {', '.join(SEMANTICS)}")

    def noise(self, n_clients: int) -> float:
        """sigma: the given one, else Cor. 5.2 with constant 1 (0 when p = 0: no u-visit, no noise needed)."""
        if self.sigma is not None:
            return self.sigma
        return rrdu_noise.sigma_closed_form(self.L, self.epsilon, self.delta, self.p, max(self.T_u, 1), n_clients)

    @property
    def certified(self) -> bool:
        """Whether the accountant's epsilon is a certificate for this run: Alg. 4's plain step (sgd_literal) on a
        forget gradient clipped to L (rrdu_noise.WHY); every other run's epsilon is nominal."""
        return self.clip and self.semantics == "sgd_literal" and self.mode == "lightweight"

    def certificate(self, n_clients: int) -> rrdu_noise.NominalEpsilon | None:
        """The epsilon of spec 2.5 (None when sigma = 0 or p = 0: nothing to account); labelled nominal unless
        `certified`."""
        sigma = self.noise(n_clients)
        if sigma <= 0 or self.p == 0 or self.T_u == 0:
            return None
        cert = rrdu_noise.nominal_epsilon(sigma, self.L, self.delta, self.p, self.T_u, n_clients)
        return replace(cert, label=rrdu_noise.CERTIFIED) if self.certified else cert


@dataclass(frozen=True)
class UStep:
    """The anatomy of one u-step (issue 34): the norms of its ascent part (the optimizer's step, or eta g_u under
    sgd_literal) and its noise part eta sigma xi, of their sum, the cosine of the step actually taken (after the
    projection) with the ascent direction g_u, and the distances to theta_ref before and after the projection."""

    ascent_norm: float
    noise_norm: float
    step_norm: float
    cosine: float
    dist_before: float
    dist_after: float
    projected: bool


@dataclass(frozen=True)
class UnlearnHop:
    """Spec 5's per-hop diagnostics; at u also the step's anatomy (`ustep`)."""

    t: int
    node: int
    at_u: bool
    loss: float
    grad_norm: float | None   # ||grad|| before any clipping at u; the averaged descent gradient's norm elsewhere
    dist_before: float        # ||theta - theta_ref|| before the projection
    dist_after: float
    projected: bool
    ustep: UStep | None = None


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    norms = float(torch.linalg.vector_norm(a) * torch.linalg.vector_norm(b))
    return float(a @ b) / norms if norms > 0 else 0.0


def u_step(token: Token, g_u: torch.Tensor, sigma: float, ref: torch.Tensor, rho: float | None,
           noise: torch.Generator, semantics: str = "adam") -> UStep:
    """The noisy projected step at u (Alg. 4 line 14) for the alignment g_u (ascent direction), and its anatomy."""
    xi = torch.randn(token.dim, generator=noise, dtype=g_u.dtype).to(g_u.device)  # the CPU stream, on any device
    start = token.theta()
    if semantics in ("adam", "adam_fresh"):
        token.step(-g_u)
        ascent = token.theta() - start
    else:
        ascent = token.lr * g_u
    kick = token.lr * sigma * xi
    theta = start + ascent + kick
    before = float(torch.linalg.vector_norm(theta - ref))
    theta, moved = project(theta, ref, rho)
    token.set_theta(theta)
    return UStep(float(torch.linalg.vector_norm(ascent)), float(torch.linalg.vector_norm(kick)),
                 float(torch.linalg.vector_norm(ascent + kick)), _cosine(theta - start, g_u), before,
                 float(torch.linalg.vector_norm(theta - ref)), moved)


def unlearn(token: Token, clients: Sequence[ClientData], forget: ClientData, n_u: int, config: RRDUConfig,
            streams: Streams, retained_u: ClientData | None = None,
            on_hop: Callable[[UnlearnHop, Token], None] | None = None) -> list[UnlearnHop]:
    """Alg. 4 for T_u hops from the token's current model (theta_0 = theta_ref) and optimizer state.

    `clients[v]` is D_v for v != u (clients[u] is not used: u's hops touch only D_f, or its retained data
    `retained_u` in Exact mode); `n_u` = |D_u| including D_f. Returns the per-hop diagnostics."""
    n = len(clients)
    rule = restart_rule(n, config.u, config.p)
    m = len(forget)
    integer("n_u", n_u, max(m, 1))
    if m == 0 and config.mode == "lightweight":
        raise ValueError("forget set: empty; valid: at least one sample of D_f")
    if config.mode == "exact" and retained_u is None:
        raise ValueError("retained_u: Exact mode needs u's retained data D_u minus D_f")
    sigma = config.noise(n)
    ref = token.theta()
    token.fresh_per_hop = config.semantics == "adam_fresh"
    hops = []
    for t in range(1, config.T_u + 1):
        v = rule(None, streams.route)
        token.begin_hop()
        if v == config.u:
            data = forget if config.mode == "lightweight" else retained_u
            g, loss = token.grad(*data.batch(sample_batch(len(data), config.batch_size, streams.batch)))
            g, norm = clip(g, config.L) if config.clip else (g, float(torch.linalg.vector_norm(g)))
            g_u = (m / n_u) * g if config.mode == "lightweight" else -g
            step = u_step(token, g_u, sigma, ref, config.rho, streams.noise, config.semantics)
            hop = UnlearnHop(t, v, True, loss, norm, step.dist_before, step.dist_after, step.projected, step)
        else:
            if config.descent_steps == EPOCH:
                loss = token.local_epochs(clients[v], config.batch_size, streams.batch)
                norm = None  # an epoch of steps: no single gradient
            else:
                for _ in range(config.descent_steps):
                    g, loss = token.averaged_grad(clients[v], config.s, config.batch_size, streams.batch)
                    token.step(g)
                norm = float(torch.linalg.vector_norm(g))
            dist = float(torch.linalg.vector_norm(token.theta() - ref))
            hop = UnlearnHop(t, v, False, loss, norm, dist, dist, False)
        hops.append(hop)
        if on_hop is not None:
            on_hop(hop, token)
    return hops


# ----------------------------------------------------------------------------------------------- the protocol

def rrdu_claim(result: Unlearned, budget: dict) -> dict:
    cert = result.certificate
    return {"epsilon": cert["epsilon"], "delta": cert["delta"], "sigma": cert["sigma"],
            "basis": "RR-DU Cor. 5.2 at the common budget" + ("" if cert["certified"] else
                                                             f" (nominal: {rrdu_noise.WHY})")}


POSITIVE = {"exclusiveMinimum": 0}
# the walk (Algorithm 2, the `walk` family) and Algorithm 4 (lightweight); L and rho: Table 12's MNIST/FLNet
RRDU_PARAMS = {
    "train": group(hops=param("integer", 200, minimum=1), epochs=param("integer", 5, minimum=1),
                   lr=param("number", 0.001, **POSITIVE)),
    "unlearn": group(hops=param("integer", 100, minimum=1), lr=param("number", 0.001, **POSITIVE),
                     p=param("number", 0.1, minimum=0, maximum=1), s=param("integer", 4, minimum=1),
                     L=param("number", 0.5, **POSITIVE), rho=param("number", 10.82, nullable=True, **POSITIVE),
                     semantics=param(["adam", "sgd_literal", "adam_fresh"], "adam"))}


@register("rrdu", label="RR-DU", original="walk", takes_budget=True, claim=rrdu_claim, params=RRDU_PARAMS,
          does_not_apply={"sample": "RR-DU's Algorithm 4 unlearns a forget set held by one client u (the walk's "
                                    "restart node); this setting's lies at every client"})
def rrdu_method(state: TrainedState, request, params: dict) -> Unlearned:
    """Algorithm 4 (lightweight) for `params.unlearn.hops` from the walk's token (`state.extra`: token, clients,
    batch_size), D_f = the leaving client's data, at `params.epsilon`, `params.delta`."""
    s, token, clients = state.setup, state.extra["token"], state.extra["clients"]
    u, un = request.removed[0], params["unlearn"]
    cfg = RRDUConfig(u=u, p=un["p"], T_u=un["hops"], s=un["s"], batch_size=state.extra["batch_size"], L=un["L"],
                     rho=un["rho"], epsilon=params["epsilon"], delta=params["delta"], mode="lightweight",
                     semantics=un["semantics"])
    token.lr, token.examples = float(un["lr"]), 0
    start = time.perf_counter()
    hops = unlearn(token, clients, clients[u], len(clients[u]), cfg,
                   Streams.from_seed(derive_seed(s.seed, s.name, "rrdu-unlearn")))
    cert = cfg.certificate(len(clients))
    certificate = {"epsilon": params["epsilon"], "delta": params["delta"], "sigma": cfg.noise(len(clients)),
                   "semantics": un["semantics"], "u_visits": sum(h.at_u for h in hops), "clipped": cfg.clip,
                   "certified": cfg.certified, "forget_grad_norm_max": max((h.grad_norm for h in hops if h.at_u),
                                                                           default=None),
                   "nominal_epsilon": None if cert is None else cert.as_dict()}
    cost = Cost(time.perf_counter() - start, token.examples, 0, un["hops"] * token.dim)
    return Unlearned(token.theta()[None].to(s.device), [-1], cost, certificate)
