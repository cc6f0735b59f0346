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
  from the library's RDP accountant (privacy.rrdu_noise.dpsgd_noise_multiplier).
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from ..privacy.search import finite, integer, probability
from ..train.random_walk import Token
from .rrdu import clip, project

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
    xi = torch.randn(token.dim, generator=noise, dtype=g.dtype)
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
        grads = vmap(grad(loss), in_dims=(None, 0, 0), randomness="different")(params, x, y)
    return torch.cat([grads[n].reshape(len(x), -1) for n in names], dim=1)


def dp_sgd_gradient(model: nn.Module, x: torch.Tensor, y: torch.Tensor, z: float, noise: torch.Generator,
                    C: float = DPSGD_CLIP) -> torch.Tensor:
    """Abadi et al. 2016, Alg. 1: (sum_i clip_C(g_i) + N(0, z^2 C^2 I)) / B."""
    C, z = finite("C (clip)", C), finite("z (noise multiplier)", z, strict=False)
    g = per_example_grads(model, x, y)
    scale = (C / g.norm(dim=1).clamp_min(1e-12)).clamp(max=1.0)
    total = (g * scale.unsqueeze(1)).sum(0)
    total = total + z * C * torch.randn(total.shape, generator=noise, dtype=total.dtype)
    return total / len(x)
