"""HDUS-approx (Ye et al. 2024), a decentralized distillation unlearning baseline.

Qiao et al. 2025 only sketch HDUS, so this is a simplified version, labelled "HDUS-approx":
- each client's *main* model trains on its own data plus a shared public set P (labelled, without the
  target's class) and is never mixed with its neighbours;
- every round each client distills a *seed* model from its main model (one epoch of KL distillation at
  temperature 2 on P) and sends it to the round's neighbours; a client keeps the latest seed of every client
  it has ever been connected to;
- a client predicts with its ensemble: softmax(main) and the softmax of every seed it holds, uniformly
  weighted;
- unlearning client u: every client deletes u's seed and re-fits its ensemble weights (one scalar per
  member, softmax-normalised, one epoch of SGD on the ensemble's log-likelihood of its own data). The time
  is that of the client holding the most seeds.

P here is a seeded, stratified `public_fraction` of the remaining clients' samples of the other classes
(one partition serves every method; the spec draws P out of the client pools instead), recorded in the report.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import functional_call

from .. import floatmath
from ..experiment import Setup
from ..files import load_tensors, save_tensors
from ..plugins import param
from ..seeding import generator
from ..topology import graph_for_round
from ..train.autodiff import grad
from ..train.dsgd import ClientData, check_finite, local_pseudo_gradients, make_loss, round_batches
from . import Cost, TrainedState, Unlearned, register

STORE = "ensemble.safetensors"
TEMPERATURE = 2.0


def public_set(setup: Setup, fraction: float) -> torch.Tensor:
    """Training-set indices of P: `fraction` of each class of the remaining clients, the target's class absent."""
    removed, target_class = setup.request.removed, setup.cfg["forget"]["class"]
    pool = torch.cat([idx for c, idx in enumerate(setup.data.indices) if c not in removed])
    labels = setup.data.y[pool.to(setup.data.y.device)].cpu()
    gen, chosen = generator(setup.seed, setup.name, "hdus-public"), []
    for c in labels.unique().tolist():
        if c == target_class:
            continue
        members = pool[labels == c]
        chosen.append(members[torch.randperm(len(members), generator=gen)[: round(fraction * len(members))]])
    return torch.cat(chosen).sort().values


def _distill_loss(setup: Setup):
    """KL(teacher || student) at temperature T, times T^2 (Hinton et al. 2015), as a function of the student:
    sum_k p_k (log p_k - log q_k) averaged over the batch, p the teacher's softmax (ATen's own exp, where F.kl_div's
    exp of log-probabilities is MKL's vendor-dependent one; unlearning.floatmath)."""

    def loss(student: torch.Tensor, teacher_logits: torch.Tensor, xb: torch.Tensor) -> torch.Tensor:
        logits = functional_call(setup.model, setup.spec.unflatten(student), (xb,))
        teacher = teacher_logits / TEMPERATURE
        kl = F.softmax(teacher, -1) * (F.log_softmax(teacher, -1) - F.log_softmax(logits / TEMPERATURE, -1))
        return kl.sum(-1).mean() * TEMPERATURE ** 2

    return loss


def _logits(setup: Setup, thetas: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Logits [models, len(x), classes] of stacked flat models on one batch."""
    return torch.stack([functional_call(setup.model, setup.spec.unflatten(t), (x,)) for t in thetas])


def distill(setup: Setup, seeds: torch.Tensor, mains: torch.Tensor, public: torch.Tensor, round_: int) -> torch.Tensor:
    """One epoch of distillation of every client's seed from its main model on P (shared batch order)."""
    lr, batch = setup.cfg["train"]["lr"], setup.cfg["train"]["batch_size"]
    grad_fn = grad(_distill_loss(setup))
    batched = grad_fn.rows(in_dims=(0, 0, None)) if setup.strategy == "vmap" else None
    order = public[torch.randperm(len(public), generator=generator(setup.seed, setup.name, "hdus-distill", round_))]
    for rows in torch.split(order, batch):
        xb = setup.data.x[rows.to(setup.data.x.device)]
        with torch.no_grad():
            teacher = _logits(setup, mains, xb)
        if batched is not None:
            g = batched(seeds, teacher, xb)
        else:
            g = torch.stack([grad_fn(seeds[i], teacher[i], xb) for i in range(len(seeds))])
        seeds = seeds - lr * g
    return seeds


def train_hdus(setup: Setup, out_dir: Path, public_fraction: float) -> tuple[torch.Tensor, int]:
    """t1 rounds of HDUS among all n clients on the experiment's graph sequence; the mains, the seeds every
    client holds and who holds whose go to `out_dir`/ensemble.safetensors. Returns the mains."""
    cfg, sched = setup.cfg, setup.schedule()
    n, rounds = cfg["clients"], cfg["train"]["rounds"]
    public = public_set(setup, public_fraction)
    own = ClientData(setup.data.x, setup.data.y, [torch.cat([idx, public]) for idx in setup.data.indices],
                     [torch.ones(len(idx) + len(public), dtype=torch.bool) for idx in setup.data.indices])
    grad_fn = grad(make_loss(setup.model, setup.spec))
    mains = setup.theta0.expand(n, -1).clone()
    seeds = mains.clone()
    held = torch.zeros(n, n, setup.spec.dim)
    holds = torch.zeros(n, n, dtype=torch.bool)  # holds[i, j]: client i keeps client j's latest seed
    clients, grad_evals = list(range(n)), 0
    for t in range(rounds):
        idx, weight = round_batches(own, clients, sched, t)
        mains = mains - sched.lr * local_pseudo_gradients(mains, own, idx, weight, sched.lr, grad_fn, setup.strategy)
        check_finite(mains, f"{setup.name}: HDUS main models, round {t}")
        seeds = distill(setup, seeds, mains, public, t)
        grad_evals += int(weight.sum()) + n * len(public)
        graph = graph_for_round(sched.topology, n, sched.p_edge, sched.seed, t, without=sched.keep_connected_without)
        sent = seeds.cpu()  # one copy a round: the held seeds (n x n x d) are stored on the CPU
        for i, j in graph.edges():
            held[i, j], held[j, i] = sent[j], sent[i]
            holds[i, j] = holds[j, i] = True
    save_tensors(out_dir / STORE, {"mains": mains, "held": held, "holds": holds, "public": public},
                 {"rounds": rounds, "temperature": TEMPERATURE})
    return mains, grad_evals


def members(store: dict, client: int, removed: tuple[int, ...]) -> torch.Tensor:
    """The ensemble of `client` [m, d]: its main model, then the seeds it holds from clients not removed."""
    others = [j for j in store["holds"][client].nonzero().flatten().tolist() if j not in removed]
    return torch.cat([store["mains"][client:client + 1], store["held"][client, others]])


@torch.no_grad()
def member_probabilities(setup: Setup, thetas: torch.Tensor, x: torch.Tensor, batch: int = 2048) -> torch.Tensor:
    """softmax outputs [m, len(x), classes] of every member."""
    thetas = thetas.to(setup.device)
    return torch.cat([_logits(setup, thetas, x[s:s + batch]).softmax(-1) for s in range(0, len(x), batch)], 1)


def refit_weights(probs: torch.Tensor, labels: torch.Tensor, lr: float, batch: int,
                  gen: torch.Generator) -> torch.Tensor:
    """One epoch of SGD on -log sum_m softmax(a)_m p_m(y | x) over the client's data; returns softmax(a)."""
    logits = torch.zeros(probs.shape[0], device=probs.device, requires_grad=True)
    picked = probs.gather(2, labels.view(1, -1, 1).expand(probs.shape[0], -1, 1)).squeeze(2)  # [m, N]
    for rows in torch.split(torch.randperm(len(labels), generator=gen).to(probs.device), batch):
        mix = (logits.softmax(0)[:, None] * picked[:, rows]).sum(0)
        loss = -floatmath.log(mix.clamp_min(1e-12)).mean()
        (g,) = torch.autograd.grad(loss, logits)
        with torch.no_grad():
            logits -= lr * g
    return logits.detach().softmax(0)


def unlearn(setup: Setup, directory: Path, lr: float,
            removed: tuple[int, ...] | None = None) -> tuple[dict, int, float]:
    """Every remaining client drops the removed clients' seeds and re-fits its ensemble weights. Returns the
    ensembles {client: (members, weights)}, the client holding the most seeds and its time in seconds.
    `removed`: the request's clients by default; () gives the ensembles before unlearning (every seed kept)."""
    store = load_tensors(directory / STORE)
    removed = setup.request.removed if removed is None else removed
    remaining = [c for c in range(setup.cfg["clients"]) if c not in removed]
    busiest = max(remaining, key=lambda c: (int(store["holds"][c].sum()), -c))
    ensembles, busiest_seconds = {}, 0.0
    for c in remaining:
        start = time.perf_counter()
        thetas = members(store, c, removed)
        rows = setup.data.indices[c].to(setup.data.x.device)
        probs = member_probabilities(setup, thetas, setup.data.x[rows])
        weights = refit_weights(probs, setup.data.y[rows], lr, setup.cfg["train"]["batch_size"],
                                generator(setup.seed, setup.name, "hdus-refit", c))
        if setup.device.type == "cuda":
            torch.cuda.synchronize()
        if c == busiest:
            busiest_seconds = time.perf_counter() - start
        ensembles[c] = (thetas, weights.cpu())
    return ensembles, busiest, busiest_seconds


def save_ensembles(path: Path, ensembles: dict, meta: dict) -> None:
    tensors = {}
    for c, (thetas, weights) in ensembles.items():
        tensors[f"members.{c}"], tensors[f"weights.{c}"] = thetas.contiguous(), weights
    tensors["clients"] = torch.tensor(sorted(ensembles))
    save_tensors(path, tensors, meta)


def load_ensembles(path: Path) -> dict:
    tensors = load_tensors(path)
    return {c: (tensors[f"members.{c}"], tensors[f"weights.{c}"]) for c in tensors["clients"].tolist()}


def ensemble_probabilities(setup: Setup, ensemble: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    thetas, weights = ensemble
    probs = member_probabilities(setup, thetas, x)
    return (weights.to(probs)[:, None, None] * probs).sum(0).cpu()


@torch.no_grad()
def ensemble_log_probabilities(setup: Setup, ensemble: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor,
                               batch: int = 2048) -> torch.Tensor:
    """log sum_m w_m softmax(z_m) in float64 from the members' logits (logsumexp of log w_m + log_softmax(z_m)), on
    the CPU: nothing rounds to probability 1 or 0, as a float32 softmax does from a margin of about 17 on."""
    thetas, weights = ensemble
    thetas = thetas.to(setup.device)
    log_w = weights.double().to(setup.device).log()[:, None, None]
    parts = [(log_w + _logits(setup, thetas, x[s:s + batch]).double().log_softmax(-1)).logsumexp(0)
             for s in range(0, len(x), batch)]
    return torch.cat(parts).cpu()


def predictors(setup: Setup, ensembles: dict) -> list:
    """One x -> log-probabilities function per client's ensemble (what the judge reads as logits)."""
    return [lambda x, e=e: ensemble_log_probabilities(setup, e, x) for e in ensembles.values()]


@register("hdus", label="HDUS-approx", original="hdus",  # P and the ensemble-weight re-fit (PDUDT spec 4.3-5)
          params={"public_fraction": param("number", 0.1, exclusiveMinimum=0, exclusiveMaximum=1),
                  "refit_lr": param("number", 0.1, exclusiveMinimum=0)},
          does_not_apply={"sample": "HDUS drops a removed client's seed models; samples have none"})
def hdus_method(state: TrainedState, request, params: dict) -> Unlearned:
    """Every remaining client drops the removed clients' seeds from its ensemble and re-fits its weights at
    `params.refit_lr` (`unlearn`); the cost is the busiest client's time."""
    ensembles, _, busiest_s = unlearn(state.setup, state.directory / "history", params["refit_lr"], request.removed)
    return Unlearned(torch.zeros(0), list(ensembles), Cost(busiest_s, 0), predict=predictors(state.setup, ensembles))
