"""The pure parts of RR-DU's baselines (Lamri & Maniatakos 2025, Sec. 6.1, Alg. 3, Table 13; spec 2.6).

- DDP, network-private SGD (Alg. 3, after Cyffers & Bellet 2022): sigma_DDP^2 = 8 L^2 ln(1.25/delta) /
  epsilon^2 (verbatim; L = 1, (1, 1e-5) -> 9.6896). Its step (spec 2.4 item 4): an Adam step on the gradient
  clipped to L, then theta <- theta - eta sigma_DDP xi, then the projection onto the ball of radius R = 10
  around theta_0 (App. D's "radius"). The group-privacy noise of Table 2 (linear in m) is `ddp_sigma_group`,
  for the unit check only (16,282 at m = 1000: unusable). Like RR-DU's, DDP's epsilon assumes the plain
  SGD step, so under Adam it is nominal.
- DP-SGD (Abadi et al. 2016) as DP-Adam (spec 2.4 item 5): per-example gradients with torch.func (BatchNorm
  in eval mode, dropout active with different randomness per example), each clipped to C = 5, summed, plus
  N(0, z^2 C^2 I), divided by the batch size; the result is the gradient of an ordinary Adam step. z comes
  from the library's RDP accountant (privacy.rrdu_noise.dpsgd_noise_multiplier). The per-example gradients
  come one example at a time (`strategy` "loop", the CPU default: on FLNet 20x faster than vmap, which
  materialises [B, d]) or from torch.func's vmap ("vmap", in chunks); both give the same clipped sum.

The walks (Sec. 6.1, Table 13; spec 2.6): every baseline starts from the pre-unlearning token (theta_0 and its
Adam state) and runs `hops` updates on D minus D_f, one update per hop on s minibatches:
- `finetune_walk`: Alg. 2's walk (uniform over V minus the current node), one Adam step on the average
  gradient of s minibatches, no clipping, noise or projection;
- `ddp_walk`: Alg. 3, the node i.i.d. uniform over V (repeats allowed), `ddp_step` on the s-minibatch average;
- `dpsgd_walk`: Alg. 2's walk, s x batch examples of the holder per hop, the DP-SGD gradient into Adam.
Retraining from scratch is train/random_walk.walk on D minus D_f from a fresh initialisation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from ..privacy.search import finite, integer, probability
from ..train.autodiff import grad
from ..train.random_walk import ClientData, Hop, Streams, Token, sample_batch, uniform_any, uniform_neighbour
from .rrdu import clip, project

OnHop = Callable[[Hop, Token], None] | None
STRATEGIES = ("auto", "loop", "vmap")

DDP_RADIUS = 10.0   # Table 13 / App. D: projection radius R
DDP_L = 1.0         # Table 13: gradient bound L for the DDP noise
DPSGD_CLIP = 5.0    # Table 13: per-example clip C


def ddp_sigma(L: float = DDP_L, epsilon: float = 1.0, delta: float = 1e-5) -> float:
    """Alg. 3: sigma = sqrt(8 L^2 ln(1.25/delta)) / epsilon."""
    L, epsilon, delta = finite("L", L), finite("epsilon", epsilon), probability("delta", delta)
    return math.sqrt(8 * L * L * math.log(1.25 / delta)) / epsilon


def ddp_sigma_group(m: int, L: float = DDP_L, epsilon: float = 1.0, delta: float = 1e-5, T: int = 100,
                    N: int = 10) -> float:
    """Table 2 / App. C.1 step 3 (group privacy, constant 1): (m L / epsilon) sqrt(T ln N ln(1/delta) / N)."""
    m, T, N = integer("m (forget set)", m), integer("T", T), integer("N (clients)", N, 2)
    L, epsilon, delta = finite("L", L), finite("epsilon", epsilon), probability("delta", delta)
    return (m * L / epsilon) * math.sqrt(T * math.log(N) * math.log(1 / delta) / N)


def ddp_step(token: Token, g: torch.Tensor, sigma: float, ref: torch.Tensor, noise: torch.Generator,
             L: float = DDP_L, radius: float | None = DDP_RADIUS) -> tuple[float, bool]:
    """One DDP update: Adam step on clip_L(g), then theta - eta sigma xi, then Pi onto B(ref, radius).
    Returns the gradient norm before clipping and whether the projection moved theta."""
    g, norm = clip(g, L)
    token.step(g)
    xi = torch.randn(token.dim, generator=noise, dtype=g.dtype).to(g.device)  # the CPU stream, on any device
    theta, moved = project(token.theta() - token.lr * sigma * xi, ref, radius)
    token.set_theta(theta)
    return norm, moved


@contextmanager
def bn_eval(model: nn.Module):
    """Train mode (dropout active) with every BatchNorm in eval mode (running statistics, not updated)."""
    was = model.training
    model.train()
    for mod in model.modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            mod.eval()
    try:
        yield model
    finally:
        model.train(was)


def per_example_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example flat gradients [B, d] of the cross-entropy (trainable parameters in model order), BN in eval
    mode, dropout drawing independently per example (torch.func vmap of grad)."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    buffers = dict(model.named_buffers())

    def loss(p, xi, yi):
        out = functional_call(model, (p, buffers), (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    with bn_eval(model):
        grads = grad(loss).rows(in_dims=(None, 0, 0), randomness="different")(params, x, y)
    return torch.cat([grads[n].reshape(len(x), -1) for n in names], dim=1)


def clipped_sum(model: nn.Module, x: torch.Tensor, y: torch.Tensor, C: float, strategy: str = "auto",
                chunk: int = 32) -> torch.Tensor:
    """sum_i clip_C(g_i) over the per-example gradients (BN in eval mode, dropout per example): one example at a
    time ("loop"; "auto" on CPU) or torch.func's vmap in chunks ("vmap"; "auto" on CUDA)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy = {strategy!r}: valid: {', '.join(STRATEGIES)}")
    if strategy == "auto":
        strategy = "vmap" if x.is_cuda else "loop"
    if strategy == "vmap":
        total = None
        for i in range(0, len(x), chunk):
            g = per_example_grads(model, x[i:i + chunk], y[i:i + chunk])
            part = (g * (C / g.norm(dim=1).clamp_min(1e-12)).clamp(max=1.0).unsqueeze(1)).sum(0)
            total = part if total is None else total + part
        return total
    params = [p for p in model.parameters() if p.requires_grad]
    total = None
    with bn_eval(model):
        for i in range(len(x)):
            grads = torch.autograd.grad(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]), params)
            g = torch.cat([t.reshape(-1) for t in grads])
            g = g * min(1.0, C / max(float(torch.linalg.vector_norm(g)), 1e-12))
            total = g if total is None else total + g
    return total


def dp_sgd_gradient(model: nn.Module, x: torch.Tensor, y: torch.Tensor, z: float, noise: torch.Generator,
                    C: float = DPSGD_CLIP, strategy: str = "auto") -> torch.Tensor:
    """Abadi et al. 2016, Alg. 1: (sum_i clip_C(g_i) + N(0, z^2 C^2 I)) / B."""
    C, z = finite("C (clip)", C), finite("z (noise multiplier)", z, strict=False)
    total = clipped_sum(model, x, y, C, strategy)
    total = total + z * C * torch.randn(total.shape, generator=noise, dtype=total.dtype).to(total.device)
    return total / len(x)


def _walk(token: Token, clients: Sequence[ClientData], hops: int, rule, streams: Streams, update,
          on_hop: OnHop) -> list[Hop]:
    """`hops` updates; before each the token moves by `rule` (the first holder: rule(None))."""
    integer("hops", hops, 0)
    node, done = None, []
    for t in range(1, hops + 1):
        node = rule(node, streams.route)
        token.begin_hop()
        hop = Hop(t, node, update(clients[node]))
        done.append(hop)
        if on_hop is not None:
            on_hop(hop, token)
    return done


def finetune_walk(token: Token, clients: Sequence[ClientData], hops: int, streams: Streams, s: int = 4,
                  batch_size: int = 64, on_hop: OnHop = None) -> list[Hop]:
    """Fine-tuning (Table 13: "re-optimizes on D minus D_f from the pre-unlearning model", no noise): Alg. 2's
    walk, one Adam step per hop on the average gradient of s minibatches of the holder's retained data."""
    def update(client: ClientData) -> float:
        g, loss = token.averaged_grad(client, s, batch_size, streams.batch)
        token.step(g)
        return loss

    return _walk(token, clients, hops, uniform_neighbour(len(clients)), streams, update, on_hop)


def ddp_walk(token: Token, clients: Sequence[ClientData], hops: int, streams: Streams, sigma: float,
             ref: torch.Tensor, s: int = 4, batch_size: int = 64, L: float = DDP_L,
             radius: float | None = DDP_RADIUS, on_hop: OnHop = None) -> tuple[list[Hop], int]:
    """Network-private SGD (Alg. 3) as the DDP certifier: an i.i.d. uniform node per hop, `ddp_step` on the
    average of s minibatches. Returns the hops and how many times the projection moved theta."""
    moved = 0

    def update(client: ClientData) -> float:
        nonlocal moved
        g, loss = token.averaged_grad(client, s, batch_size, streams.batch)
        moved += ddp_step(token, g, sigma, ref, streams.noise, L, radius)[1]
        return loss

    return _walk(token, clients, hops, uniform_any(len(clients)), streams, update, on_hop), moved


def dpsgd_walk(token: Token, clients: Sequence[ClientData], hops: int, streams: Streams, z: float, s: int = 4,
               batch_size: int = 64, C: float = DPSGD_CLIP, strategy: str = "auto",
               on_hop: OnHop = None) -> list[Hop]:
    """DP-SGD (Abadi et al. 2016) on Alg. 2's walk: s x batch_size examples of the holder (without
    replacement), their DP-SGD gradient (`dp_sgd_gradient`, noise from the noise stream) into the token's Adam."""
    def update(client: ClientData) -> float:
        x, y = (t.to(token.device) for t in client.batch(sample_batch(len(client), s * batch_size, streams.batch)))
        token.examples += len(y)
        g = dp_sgd_gradient(token.model, x, y, z, streams.noise, C, strategy)
        token.step(g)
        return float("nan")

    return _walk(token, clients, hops, uniform_neighbour(len(clients)), streams, update, on_hop)
