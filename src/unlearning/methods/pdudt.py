"""PDUDT and PDUDT(ES) (Qiao et al., ICML 2025; specs/pdudt.md 2.3-2.4), from the stored history.

Each remaining client i, with no communication, replays its own history: per round t its own and its
neighbours' gradients g^t_j and its rows of W^t and W-hat^t (W-hat = MH weights without the target,
zero row and column there), and computes

    delta^t_i = eta sum_j (W-hat^t_ij - W^t_ij) g^t_j            (Eq. 7, residual approximation)
    a^t_i     = || sum_j W^t_ij g^t_j ||^2,  p^t_i = a^t_i / sum_t a^t_i     (Eq. 8)
    theta-bar_i = theta^{t1}_i - sum_t p^t_i delta^t_i            (Eq. 9)
    theta^u_i   = theta-bar_i + z_i,  z_i ~ N(0, (n-1) sigma^2 I) (Algorithm 2, lines 14-15)

PDUDT(ES) sums over the first `es_rounds` rounds only, with p renormalised there (Appendix D).
`noise_only` is the ablation of spec 7-N: the noise without the correction. `weights="sum"` is the other ablation
(spec note of 2026-11-26, 4): the plain sum of the residuals, sum_t delta^t_i, in place of Eq. 9's normalised
weights; the paper prints the weights, so the sum is an ablation, never the method.

The history is what every client computed and stored during training (Algorithm 2, lines 4-5): its
pseudo-gradients and the round's W. Eq. 7 is derived for gradient mixing (Eq. 2), where it is the residual with
the stored gradients in place of the retrained ones. After model mixing (D-PSGD, x <- W x - eta g: Origin as the
paper's Appendix I.2 names it) the same formulas run on the same store as a heuristic replay, not the paper's
method: there the target's influence also travels through the averaged models, which Eq. 7 does not see. The
certificate says which.
"""

from __future__ import annotations

import math
import time

import torch

from ..experiment import ForgetRequest
from ..history import History
from ..plugins import param
from ..seeding import generator
from ..train.dsgd import check_finite
from . import Cost, TrainedState, Unlearned, register

WEIGHTS = ("eq8", "sum")  # Eq. 8-9's normalised weights p^t_i (the paper), or 1 for every round (the ablation)


def client_correction(history: History, row: int, lr: float, horizon: int, weights: str = "eq8") -> torch.Tensor:
    """sum_t p^t_i delta^t_i for the client stored in row `row`, reading only its own history (weights "sum":
    sum_t delta^t_i)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights {weights!r}: unknown; valid: {', '.join(WEIGHTS)}")
    total, weight_sum = None, 0.0
    for t in range(horizon):
        w, w_hat = history.mixing["W"][t][row], history.mixing["W_without"][t][row]
        rows = torch.nonzero(w).flatten().tolist()  # itself and its neighbours in round t
        grads = history.grads(t, rows)
        delta = lr * ((w_hat[rows] - w[rows]).float() @ grads)
        a = float(((w[rows].float() @ grads) ** 2).sum()) if weights == "eq8" else 1.0
        total = a * delta if total is None else total + a * delta
        weight_sum += a
    if total is None or weight_sum == 0.0:
        return torch.zeros(history.dim)
    return total / weight_sum if weights == "eq8" else total


def client_noise(dim: int, n: int, sigma: float, seed: int, *keys) -> torch.Tensor:
    """z_i ~ N(0, (n-1) sigma^2 I_d): the average of n-1 of them is N(0, sigma^2 I_d) (Cor. 4.10)."""
    return math.sqrt(n - 1) * sigma * torch.randn(dim, generator=generator(seed, *keys))


def _target(state: TrainedState, request: ForgetRequest) -> int:
    if request.kind != "client" or len(request.removed) != 1:
        raise ValueError("PDUDT removes one whole client: set forget.kind: client")
    return request.removed[0]


REPLAY = {"gradient": "PDUDT as printed: Eq. 7 on the gradients exchanged under Eq. 2 (as derived)",
          "model": "heuristic replay under D-PSGD: Eq. 7 on the pseudo-gradients stored under model mixing, an "
                   "approximation (round t's gradient reaches the others through W^{t+1}..W^{t1-1}, and the "
                   "target's influence through the averaged models is unseen)"}


def add_noise(theta: torch.Tensor, clients: list[int], n: int, sigma: float, seed: int, name: str) -> torch.Tensor:
    """Per-client Gaussian noise, one generator per (experiment, sigma, client); shared by all methods so
    that PDUDT, its ablation and perturbed retraining draw the same z_i."""
    noise = torch.stack([client_noise(theta.shape[1], n, sigma, seed, name, "noise", sigma, c) for c in clients])
    return theta + noise.to(theta)


def unlearn(state: TrainedState, request: ForgetRequest, sigma: float, horizon: int | None,
            correct: bool = True, weights: str = "eq8") -> Unlearned:
    s = state.setup
    target = _target(state, request)
    start = time.perf_counter()
    history = state.history()
    horizon = len(history) if horizon is None else min(horizon, len(history))
    stored = history.meta["clients"]
    clients = [c for c in state.clients if c != target]
    theta = torch.stack([state.theta[state.clients.index(c)] for c in clients]).cpu()
    if correct:
        corrections = torch.stack([client_correction(history, stored.index(c), s.cfg["train"]["lr"], horizon,
                                                     weights) for c in clients])
        theta = theta - corrections
        check_finite(theta, f"{s.name}: PDUDT's corrected models ({horizon} rounds of stored gradients)")
    theta = add_noise(theta, clients, len(state.clients), sigma, s.seed, s.name)
    cert = {"sigma": sigma, "noise_std_per_client": math.sqrt(len(state.clients) - 1) * sigma,
            "beta": s.params["privacy"]["delta"], "rounds_used": horizon if correct else 0,
            "reference": "perturbed retraining (PDUDT Cor. 4.10)",
            "replay": REPLAY[s.cfg["train"]["mixing"]] if correct else None,
            "weights": weights if correct else None}
    cost = Cost(time.perf_counter() - start, grad_evals=0, bytes_read=history.bytes_read)
    return Unlearned(theta.to(s.device), clients, cost, cert)


def sigma_only(result: Unlearned, budget: dict) -> dict:
    return {"epsilon": None, "sigma": result.certificate["sigma"],
            "basis": "its paper's sigma; the epsilon of Theorem 4.9 needs smoothness and gradient-variance constants "
                     "the paper does not give for this model: not computed"}


PDUDT_PARAMS = {"sigma": param("number", 0.002, minimum=0),  # Tables 2-3's (spec 4.2)
                "es_rounds": param("integer", 80, minimum=1)}  # PDUDT(ES)'s early-stopped replay


def es_check(block: dict, task: dict) -> str | None:
    if block["es_rounds"] > task["train"]["rounds"]:
        return (f"common.decentralized.pdudt.es_rounds: {block['es_rounds']} exceeds the "
                f"{task['train']['rounds']} rounds trained; valid: at most common.decentralized.train.rounds")
    return None


@register("pdudt", label="PDUDT", original="eq2", claim=sigma_only, params=PDUDT_PARAMS,
          does_not_apply={"sample": "PDUDT removes one whole client (its Eq. 7 drops the target's rows of W)"})
def pdudt(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    return unlearn(state, request, params["sigma"], None)


@register("pdudt_es", label="PDUDT (ES)", original="eq2", params_key="pdudt", params=PDUDT_PARAMS,
          check=es_check,
          does_not_apply={"sample": "PDUDT(ES) removes one whole client (its Eq. 7 drops the target's rows of W)"},
          claim=sigma_only)
def pdudt_es(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    return unlearn(state, request, params["sigma"], params["es_rounds"])


@register("noise_only", label="PDUDT noise only (no correction)", original="eq2", params_key="pdudt",
          params=PDUDT_PARAMS, claim=sigma_only,
          does_not_apply={"sample": "PDUDT's noise-only control removes one whole client, as PDUDT does"})
def noise_only(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    return unlearn(state, request, params["sigma"], 0, correct=False)
