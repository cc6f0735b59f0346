"""The certified baselines of Rewind-to-Delete's comparison (Mu & Klabjan 2025, Section 4 and Appendix D.2),
each with its own training run, as the authors ran them.

CNS (Constrained Newton Step, Zhang et al. 2024): black-box but constrained.
- Training: Adam (weight decay `wd`; torch's fused kernel, whose square root is IEEE on every CPU) on shuffled
  minibatches; after every step all parameters are projected onto the l2 ball of radius R (theta <- theta R /
  ||theta|| when ||theta|| > R); the epoch with the lowest validation loss is kept.
- Unlearning: one Newton step on the retained data with the inverse Hessian-vector product estimated by LiSSA
  (a truncated Taylor series): g = grad[mean CE over D' + lam sum_tensors ||p||_2]; s1 times: H = g, then s2
  times H <- H + g - (Hessian of [CE(batch of bs, drawn with replacement) + (lam + gamma) sum ||p||_2]) H / scale;
  the estimates H / scale are averaged; theta_U = theta - mean + sigma xi (privacy.r2d_baselines.cns_sensitivity).
  The recursion contracts only while the batch Hessian's eigenvalues lie in (0, 2 scale); the regulariser alone
  puts one at (lam + gamma) / min ||p|| (`regulariser_curvature`), which a small bias can push past 2 scale.

HF (Hessian-Free recollection, Qiao et al. 2024): white-box, it records the whole training run.
- Training: SGD with the step lr0 decay^s at global step s (decayed after every step), gradient-norm clipping at
  `clip`, the L2 term lam_reg ||theta||^2 / 2.
- Approximators, computed during training for the samples to forget (the paper's O(md) variant): at step s, for i
  in the batch B_s, a_i += lr_s clip(grad l_i(theta_s) + lam_reg theta_s) / |B_s|; then every a_i <- a_i - lr_s
  (grad g_s) a_i, a Hessian-vector product with the Jacobian of the clipped batch gradient g_s.
  `per_sample=True` keeps one a_i per sample (the paper's cost: m products per step); False keeps their sum,
  which the recursion being linear makes exact for the sum and costs one product per step. With the sum,
  `timed_per_sample_steps` > 0 also runs the per-sample recursion beside it for that many first steps and times
  it, so that the paper's learning time can be extrapolated where m products per step do not fit the budget.
- Unlearning: theta_U = theta_T + sum_i a_i + sigma xi (privacy.r2d_baselines.hf_sensitivity), a vector addition.

On the common ground's centralized canary task (`run_hf`, `run_cns`; the convex model and the MLP alike), both
certify deletion: removing the canary means deleting it. HF's retraining is its training run with the canary's loss
terms dropped from their batches (the run its approximator tracks); CNS's trains on D'. Both learners are
deterministic (their minibatch orders are seeded), so the randomness of every run is the output noise sigma xi,
drawn per run: the audit sees the noiseless models plus independent noise, as a deployment would. CNS's Delta takes
the bench's smoothness L and gradient bound G (the logistic loss on unit-norm features: 1/4 and 1; the MLP: R2D's
estimates). CNS keeps the epoch of lowest training loss (R2D keeps the lowest validation loss; the task has none).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .. import floatmath
from ..plugins import group, param
from ..privacy import r2d_baselines as rbn
from ..seeding import derive_seed, generator
from ..train.checkpointed_sgd import set_flat
from ..train.flat import FlatSpec
from . import register_central

POSITIVE = {"exclusiveMinimum": 0}
# R2D's certified baselines as its authors ran them (its Table 6's eICU column), on the common ground's canary task
HF_PARAMS = {"lr0": param("number", 0.1, **POSITIVE), "decay": param("number", 0.995, **POSITIVE, exclusiveMaximum=1),
             "clip": param("number", 5.0, **POSITIVE), "l2": param("number", 1.0e-6, minimum=0),
             "batch_size": param("integer", 512, minimum=1), "epochs": param("integer", 15, minimum=1),
             "rho_iterations": param("integer", 1000, minimum=1)}
CNS_PARAMS = {"lr": param("number", 0.001, **POSITIVE), "wd": param("number", 5.0e-4, minimum=0),
              "batch_size": param("integer", 128, minimum=1), "epochs": param("integer", 30, minimum=1),
              "R": param("number", 10.0, **POSITIVE),
              "lissa": group(s1=param("integer", 10, minimum=1), s2=param("integer", 1000, minimum=1),
                             bs=param("integer", 10, minimum=1), scale=param("number", 50000.0, **POSITIVE),
                             gamma=param("number", 200.0, minimum=0)),
              "noise": group(lam=param("number", 2000.0, **POSITIVE), M=param("number", 1.0, minimum=0),
                             rho=param("number", 0.1, **POSITIVE, maximum=1), lam_min=param("number", 0.0, minimum=0))}


class Diverged(RuntimeError):
    """A loss or parameter became NaN/inf; the message names the method, epoch and step."""


def _check_finite(value: torch.Tensor, what: str, epoch: int, step: int) -> None:
    if not bool(torch.isfinite(value).all()):
        raise Diverged(f"{what}: not finite at epoch {epoch}, step {step}; valid: a smaller learning rate")


def _flat_grad(grads) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in grads])


def _curvature_ce(logits: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy for a loss that is differentiated twice (Hessian-vector products), computed in float64: its
    second derivative calls exp, which on the CPU in float32 is MKL's vendor-dependent one (unlearning.floatmath)."""
    return F.cross_entropy(logits.double(), y, reduction=reduction)


def param_norm(params: list[torch.Tensor]) -> torch.Tensor:
    return floatmath.sqrt(sum((p.detach() ** 2).sum() for p in params))


@torch.no_grad()
def mean_loss(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch: int = 4096) -> float:
    model.eval()
    total = sum(float(F.cross_entropy(model(X[i:i + batch]), y[i:i + batch], reduction="sum"))
                for i in range(0, len(y), batch))
    model.train()
    return total / max(len(y), 1)


# ---------------------------------------------------------------------------------------------- CNS

@dataclass
class CNSTraining:
    selected: int                       # epochs of the kept model (lowest validation loss)
    val_losses: list[float]
    epoch_seconds: list[float]
    theta: torch.Tensor                 # the kept model, flat


def train_cns(model: nn.Module, X: torch.Tensor, y: torch.Tensor, X_val: torch.Tensor, y_val: torch.Tensor,
              lr: float, wd: float, batch: int, epochs: int, R: float, seed: int) -> CNSTraining:
    """Projected Adam (module docstring); the model is left at the kept epoch."""
    spec = FlatSpec.of(model)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr, weight_decay=wd, fused=True)  # its sqrt is IEEE on every CPU (floatmath)
    best, best_loss, losses, seconds = spec.flatten(model).clone(), math.inf, [], []
    selected = 0
    for epoch in range(epochs):
        start = time.perf_counter()
        order = torch.randperm(len(y), generator=generator(seed, "cns", "epoch", epoch)).to(X.device)
        for step, idx in enumerate(torch.split(order, batch)):
            opt.zero_grad()
            loss = F.cross_entropy(model(X[idx]), y[idx])
            _check_finite(loss.detach(), "CNS training loss", epoch, step)
            loss.backward()
            opt.step()
            with torch.no_grad():
                norm = param_norm(params)
                if norm > R:
                    for p in params:
                        p.mul_(R / norm)
        seconds.append(time.perf_counter() - start)
        losses.append(mean_loss(model, X_val, y_val))
        if losses[-1] < best_loss:
            best_loss, best, selected = losses[-1], spec.flatten(model).clone(), epoch + 1
    set_flat(model, spec, best)
    return CNSTraining(selected, losses, seconds, best)


def _tensor_norms(params: list[torch.Tensor]) -> torch.Tensor:
    """sum over parameter tensors of ||p||_2 (not squared), CNS's regulariser."""
    return sum(torch.linalg.vector_norm(p) for p in params)


def regulariser_curvature(params: list[torch.Tensor], weight: float) -> float:
    """The largest eigenvalue of the Hessian of weight * sum_tensors ||p||_2: weight / min ||p|| over the tensors
    of more than one entry (the Hessian of ||p|| is (I - p p^T / ||p||^2) / ||p||; it is 0 for a scalar)."""
    norms = [float(torch.linalg.vector_norm(p.detach())) for p in params if p.numel() > 1]
    return weight / min(norms)


def lissa_newton_step(model: nn.Module, X: torch.Tensor, y: torch.Tensor, lam: float, gamma: float, s1: int, s2: int,
                      bs: int, scale: float, seed: int) -> torch.Tensor:
    """CNS's Newton step on the retained data (X, y) at the model's parameters: the flat Delta theta (module
    docstring), to be subtracted."""
    params = list(model.parameters())
    model.eval()
    g = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
    for i in range(0, len(y), 4096):
        loss = F.cross_entropy(model(X[i:i + 4096]), y[i:i + 4096], reduction="sum") / len(y)
        g += _flat_grad(torch.autograd.grad(loss, params))
    g += lam * _flat_grad(torch.autograd.grad(_tensor_norms(params), params))
    gen = generator(seed, "cns", "lissa")
    total = torch.zeros_like(g)
    for rep in range(s1):
        H = g.clone()
        for step in range(s2):
            idx = torch.randint(len(y), (bs,), generator=gen).to(X.device)
            loss = _curvature_ce(model(X[idx]), y[idx]) + (lam + gamma) * _tensor_norms(params)
            grads = _flat_grad(torch.autograd.grad(loss, params, create_graph=True))
            hv = _flat_grad(torch.autograd.grad(grads @ H, params))
            H = H + g - hv / scale
            _check_finite(H, "CNS LiSSA estimate", rep, step)
        total += H / scale
    model.train()
    return total / s1


# ---------------------------------------------------------------------------------------------- HF

@dataclass
class HFTraining:
    theta: torch.Tensor                 # theta_T, flat
    approximator: torch.Tensor          # sum over the forgotten samples of a_i, flat
    train_seconds: float                # the SGD steps alone
    approximator_seconds: float         # the recollection (approximator) work during training
    steps: int
    first_batch: torch.Tensor           # indices of the first batch (HF's rho)
    extra: dict = field(default_factory=dict)


def _clip(vec: torch.Tensor, clip: float) -> torch.Tensor:
    norm = torch.linalg.vector_norm(vec)
    return vec * (clip / norm) if norm > clip else vec


def train_hf(model: nn.Module, X: torch.Tensor, y: torch.Tensor, forget: torch.Tensor, lr0: float, decay: float,
             clip: float, l2: float, batch: int, epochs: int, seed: int, per_sample: bool = True,
             timed_per_sample_steps: int = 0, skip: torch.Tensor | None = None) -> HFTraining:
    """HF's training run with the approximators of the samples `forget` (indices into X) computed along
    (module docstring). The model is left at theta_T. `extra["per_sample_step_s"]`: the per-sample recursion's
    mean time per step over the first `timed_per_sample_steps` steps (only with per_sample False). `skip`: samples
    whose loss terms are dropped from their batches, the batch order and divisor unchanged: the retraining that HF's
    approximators track (its w_U = w_T + sum a_i approximates this run without them)."""
    spec = FlatSpec.of(model)
    params = list(model.parameters())
    d = spec.dim
    position = {int(i): k for k, i in enumerate(forget.tolist())}
    a = torch.zeros(len(position) if per_sample else 1, d, dtype=params[0].dtype, device=params[0].device)
    is_forget = torch.zeros(len(y), dtype=torch.bool)
    is_forget[forget.cpu()] = True
    kept = torch.ones(len(y), dtype=X.dtype, device=X.device)
    if skip is not None:
        kept[skip.to(X.device)] = 0.0
    train_s = approx_s = shadow_s = 0.0
    shadow = None
    if not per_sample and timed_per_sample_steps > 0:
        shadow = torch.zeros(len(position), d, dtype=params[0].dtype, device=params[0].device)
    s = 0
    first = None
    for epoch in range(epochs):
        order = torch.randperm(len(y), generator=generator(seed, "hf", "epoch", epoch))
        for idx in torch.split(order, batch):
            if first is None:
                first = idx.clone()
            lr = lr0 * decay**s
            start = time.perf_counter()
            dev_idx = idx.to(X.device)
            theta = spec.flatten(model)
            terms = _curvature_ce(model(X[dev_idx]), y[dev_idx], reduction="none")
            data_loss = terms.mean() if skip is None else (terms * kept[dev_idx]).sum() / len(idx)
            loss = data_loss + 0.5 * l2 * sum((p * p).sum() for p in params)
            _check_finite(loss.detach(), "HF training loss", epoch, s)
            grads = torch.autograd.grad(loss, params, create_graph=True)
            flat = _flat_grad(grads)
            norm = torch.linalg.vector_norm(flat)
            g_clipped = flat * (clip / norm) if norm > clip else flat
            step_vec = g_clipped.detach()
            train_s += time.perf_counter() - start
            start = time.perf_counter()
            mine = idx[is_forget[idx]].tolist()
            _add_sample_terms(a, [position[i] if per_sample else 0 for i in mine], mine, model, X, y, theta,
                              lr, len(idx), clip, l2)
            if per_sample:
                hv = _batched_hvp(g_clipped, params, a)
            else:
                timed = shadow is not None and s < timed_per_sample_steps  # the graph serves the timed recursion too
                hv = _flat_grad(torch.autograd.grad(g_clipped @ a[0], params, retain_graph=timed))[None]
            a -= lr * hv
            approx_s += time.perf_counter() - start
            if shadow is not None and s < timed_per_sample_steps:
                start = time.perf_counter()
                _add_sample_terms(shadow, [position[i] for i in mine], mine, model, X, y, theta, lr,
                                  len(idx), clip, l2)
                shadow -= lr * _batched_hvp(g_clipped, params, shadow)
                shadow_s += time.perf_counter() - start
            start = time.perf_counter()
            with torch.no_grad():
                theta_new = theta.detach() - lr * step_vec
                _check_finite(theta_new, "HF parameters", epoch, s)
            set_flat(model, spec, theta_new)
            train_s += time.perf_counter() - start
            s += 1
    extra = {}
    if shadow is not None:
        extra = {"per_sample_timed_steps": min(s, timed_per_sample_steps),
                 "per_sample_step_s": shadow_s / max(1, min(s, timed_per_sample_steps))}
    return HFTraining(spec.flatten(model).clone(), a.sum(0), train_s, approx_s, s, first, extra)


def _add_sample_terms(a: torch.Tensor, rows: list[int], samples: list[int], model: nn.Module, X: torch.Tensor,
                      y: torch.Tensor, theta: torch.Tensor, lr: float, batch: int, clip: float, l2: float) -> None:
    """a[row] += lr clip(grad l_i(theta) + l2 theta) / batch for each forgotten sample i of the batch (HF's new
    terms)."""
    params = list(model.parameters())
    for row, i in zip(rows, samples):
        gi = _flat_grad(torch.autograd.grad(F.cross_entropy(model(X[i:i + 1]), y[i:i + 1]), params))
        a[row] += lr * _clip(gi + l2 * theta.detach(), clip) / batch


def _batched_hvp(g: torch.Tensor, params: list[torch.Tensor], vectors: torch.Tensor) -> torch.Tensor:
    """[k, d]: the transposed Jacobian of the flat vector g (a function of params) times each row of `vectors`, one
    product at a time (on 2 CPU cores 3.7x faster than autograd's vmapped `is_grads_batched`)."""
    out = torch.empty_like(vectors)
    for k, v in enumerate(vectors):
        out[k] = _flat_grad(torch.autograd.grad(g, params, grad_outputs=v, retain_graph=k < len(vectors) - 1))
    return out


def hf_rho(model: nn.Module, X: torch.Tensor, y: torch.Tensor, clip: float, l2: float, iterations: int = 1000,
           tol: float = 1e-7, seed: int = 0) -> float:
    """The top eigenvalue, by power iteration, of the Hessian of the clipped loss of one batch (X, y) divided by its
    size (HF's rho), at the model's parameters."""
    params = list(model.parameters())
    loss = _curvature_ce(model(X), y) + 0.5 * l2 * sum((p * p).sum() for p in params)
    flat = _flat_grad(torch.autograd.grad(loss, params, create_graph=True))
    norm = torch.linalg.vector_norm(flat)
    g = flat * (clip / norm) if norm > clip else flat
    v = torch.randn(g.shape, generator=generator(seed, "hf", "rho"), dtype=g.dtype).to(g.device)
    v /= torch.linalg.vector_norm(v)
    value = 0.0
    for _ in range(iterations):
        hv = _flat_grad(torch.autograd.grad(g @ v, params, retain_graph=True))
        new = float(v @ hv)
        v = hv / torch.linalg.vector_norm(hv).clamp_min(1e-30)
        if abs(new - value) <= tol * max(1.0, abs(new)):
            value = new
            break
        value = new
    return value / len(y)


# The common ground's centralized canary task (experiments/common_ground/centralized.py and mlp.py; methods/__init__.py)

def hf_pair(model_fn, x: torch.Tensor, labels: torch.Tensor, canary: int, cfg: dict, eps: float, delta: float,
            seed: int) -> dict:
    """HF: the unlearned and retrained noiseless models (flat, [1, P]), sigma at (eps, delta), and its constants.
    `labels` are class indices; `model_fn` makes the same initial model every call."""
    hc, n = cfg, len(labels)
    model = model_fn()
    trained = train_hf(model, x, labels, torch.tensor([canary]), hc["lr0"], hc["decay"], hc["clip"], hc["l2"],
                       hc["batch_size"], hc["epochs"], derive_seed(seed, "common", "hf"), per_sample=False)
    first = trained.first_batch.to(x.device)
    rho = hf_rho(model, x[first], labels[first], hc["clip"], hc["l2"], hc["rho_iterations"],
                 seed=derive_seed(seed, "common", "hf-rho"))
    b = rbn.hf_sensitivity(hc["lr0"], hc["clip"], hc["decay"], rho, n, hc["batch_size"], hc["epochs"], 1)
    again = train_hf(model_fn(), x, labels, torch.zeros(0, dtype=torch.long), hc["lr0"], hc["decay"], hc["clip"],
                     hc["l2"], hc["batch_size"], hc["epochs"], derive_seed(seed, "common", "hf"), per_sample=False,
                     skip=torch.tensor([canary]))
    return {"unlearned": (trained.theta + trained.approximator)[None], "retrained": again.theta[None],
            "sigma": rbn.sigma_for(eps, delta, b) if b > 0 else 0.0, "sensitivity": b, "rho": rho,
            "steps": trained.steps, "grads": {"learning": hc["epochs"] * n, "unlearning": 0,
                                              "retraining": hc["epochs"] * (n - 1)}}


def cns_pair(model_fn, x: torch.Tensor, labels: torch.Tensor, canary: int, cfg: dict, eps: float, delta: float,
             seed: int, L: float, G: float) -> dict:
    """CNS: the unlearned (Newton step on D') and retrained noiseless models, sigma at (eps, delta); a LiSSA
    divergence raises Diverged."""
    cc, li, nz = cfg, cfg["lissa"], cfg["noise"]
    n = len(labels)
    keep = torch.arange(n, device=x.device) != canary

    def train(rows: torch.Tensor) -> tuple[nn.Module, CNSTraining]:
        model = model_fn()
        return model, train_cns(model, x[rows], labels[rows], x[rows], labels[rows], cc["lr"], cc["wd"],
                                cc["batch_size"], cc["epochs"], cc["R"], derive_seed(seed, "common", "cns"))

    model, trained = train(torch.arange(n, device=x.device))
    step = lissa_newton_step(model, x[keep], labels[keep], cc["wd"], li["gamma"], li["s1"], li["s2"], li["bs"],
                             li["scale"], derive_seed(seed, "common", "lissa"))
    _, again = train(keep)
    dim = sum(p.numel() for p in model.parameters())
    Delta = rbn.cns_sensitivity(cc["R"], L, G, dim, nz["lam"], nz["M"], nz["rho"], nz["lam_min"])
    return {"unlearned": (trained.theta - step)[None], "retrained": again.theta[None],
            "sigma": rbn.sigma_for(eps, delta, Delta), "sensitivity": Delta, "kept_epoch": trained.selected,
            "newton_step_norm": float(step.norm()),
            "grads": {"learning": cc["epochs"] * n, "unlearning": (n - 1) + 2 * li["s1"] * li["s2"] * li["bs"],
                      "retraining": cc["epochs"] * (n - 1)}}


def _publish_pair(b, method: str, make) -> None:
    """A deletion baseline's row on the bench `b`: its noiseless pair plus per-run output noise; a diverged
    estimator is the method's result, a missing row with the reason."""
    start = time.perf_counter()
    try:
        r = make()
    except Diverged as err:
        b.missing(method, f"{method.upper()} diverged: {err}")
        return
    b.seconds[f"{method} learn, unlearn, retrain"] = time.perf_counter() - start
    extra = {k: v for k, v in r.items() if k not in ("unlearned", "retrained", "sigma", "grads")}
    b.publish(method, method, r["sigma"], r["unlearned"], r["retrained"], r["grads"], adjacency="deletion", **extra)


@register_central("hf", model="convex", label="HF", params_key="hf", params=HF_PARAMS)
@register_central("hf", model="mlp", label="HF", params_key="hf", params=HF_PARAMS)
def run_hf(b) -> None:
    _publish_pair(b, "hf", lambda: hf_pair(b.model_fn, b.x, b.labels, b.canary, b.central["hf"], b.eps, b.delta,
                                           b.seed))


@register_central("cns", model="convex", label="CNS", params_key="cns", params=CNS_PARAMS)
@register_central("cns", model="mlp", label="CNS", params_key="cns", params=CNS_PARAMS)
def run_cns(b) -> None:
    L, G = b.smoothness()
    _publish_pair(b, "cns", lambda: cns_pair(b.model_fn, b.x, b.labels, b.canary, b.central["cns"], b.eps, b.delta,
                                             b.seed, L, G))
