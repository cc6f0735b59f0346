"""FATS-Unl (Tao et al., VLDB 2024), a server-based exact unlearning baseline.

The server runs FedAvg. Each round r it draws K clients uniformly *with replacement* and keeps the distinct
ones, S_r; each trains one local epoch from the global model w_r, and the server averages their models
weighted by sample count. It stores w_r and S_r for every round r < t1. To forget client u at t1:

    r0 = min{r : u in S_r};  restore w_{r0};  redo rounds r0 .. t1-1 without u

where a round's draw is repeated (a fresh K-draw each attempt, as the FATS code does) until u is absent.
Attempt 0 is the training draw, so rounds whose draw never held u are replayed exactly. Nothing is
noised: the result equals FedAvg trained without u, and the certificate is "exact".
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from safetensors import safe_open

from ..experiment import ForgetRequest, Setup
from ..files import save_tensors
from ..plugins import param
from ..seeding import generator
from ..train.autodiff import grad
from ..train.dsgd import ClientData, check_finite, local_pseudo_gradients, make_loss, round_batches
from . import Cost, TrainedState, Unlearned, register

STORE = "rounds.safetensors"


def sample_clients(n: int, k: int, seed: int, round_: int, exclude: int | None = None) -> list[int]:
    """FATS's client draw: K uniform draws with replacement, deduplicated; redrawn until `exclude` is absent."""
    for attempt in range(10_000):
        draw = torch.randint(n, (k,), generator=generator(seed, "fats-sample", round_, attempt))
        chosen = sorted(set(draw.tolist()))
        if exclude not in chosen:
            return chosen
    raise RuntimeError(f"round {round_}: no draw of {k} from {n} clients without client {exclude}")


def fedavg_rounds(setup: Setup, w: torch.Tensor, data: ClientData, rounds: range, k: int,
                  exclude: int | None = None, store: dict | None = None) -> tuple[torch.Tensor, int]:
    """FedAvg from the global model `w` [d]; `store` (if given) receives w_r and S_r before each round."""
    sched = setup.schedule()
    n, grad_fn, grad_evals = setup.cfg["clients"], grad(make_loss(setup.model, setup.spec)), 0
    sizes = torch.tensor([int(keep.sum()) for keep in data.keep], dtype=w.dtype, device=w.device)
    for r in rounds:
        chosen = sample_clients(n, k, sched.seed, r, exclude)
        if store is not None:
            store["w"][r] = w.cpu()
            store["sampled"][r, chosen] = True
        idx, weight = round_batches(data, chosen, sched, r)
        pseudo = local_pseudo_gradients(w.expand(len(chosen), -1), data, idx, weight, sched.lr, grad_fn,
                                        setup.strategy)
        share = sizes[chosen] / sizes[chosen].sum()
        w = w - sched.lr * share @ pseudo   # sample-weighted average of the clients' models w - lr g_j
        check_finite(w, f"{setup.name}: FATS's FedAvg, round {r}")
        grad_evals += int(weight.sum())
    return w, grad_evals


def train_fats(setup: Setup, out_dir: Path, k: int) -> tuple[torch.Tensor, int]:
    """The FedAvg run for t1 rounds; its per-round global models and draws go to `out_dir`/rounds.safetensors."""
    rounds, d, n = setup.cfg["train"]["rounds"], setup.spec.dim, setup.cfg["clients"]
    store = {"w": torch.zeros(rounds, d), "sampled": torch.zeros(rounds, n, dtype=torch.bool)}
    w, grad_evals = fedavg_rounds(setup, setup.theta0.clone(), setup.data, range(rounds), k, store=store)
    save_tensors(out_dir / STORE, store, {"clients_per_round": k})
    return w, grad_evals


def exact_rollback(result: Unlearned, budget: dict) -> dict:
    return {"epsilon": 0.0, "basis": "exact in distribution: FedAvg re-run from the first round the target was "
                                     f"sampled (round {result.certificate.get('rollback_round')})"}


def fats_check(block: dict, task: dict) -> str | None:
    if block["clients_per_round"] > task["clients"]:
        return (f"common.decentralized.fats.clients_per_round: {block['clients_per_round']} of "
                f"{task['clients']} clients; valid: at most common.decentralized.clients")
    return None


@register("fats", label="FATS-Unl", original="fats", claim=exact_rollback, check=fats_check,
          params={"clients_per_round": param("integer", 5, minimum=1)},  # K (FATS's MNIST config; PDUDT spec 4.3-3)
          does_not_apply={"sample": "FATS-Unl is built here for client unlearning (its sample variant needs "
                                    "per-sample draws)"})
def fats(state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
    """`state` is the FedAvg run, its store in `history/` (train_fats); returns the retrained global model as
    one row, client -1."""
    s = state.setup
    if request.kind != "client" or len(request.removed) != 1:
        raise ValueError("FATS-Unl removes one whole client here: set forget.kind: client")
    target = request.removed[0]
    start = time.perf_counter()
    with safe_open(str(Path(state.directory) / "history" / STORE), framework="pt") as store:
        sampled = store.get_tensor("sampled")
        rounds = sampled.shape[0]
        first = sampled[:, target].nonzero()
        r0 = int(first[0]) if len(first) else rounds
        w0 = store.get_slice("w")[r0:r0 + 1] if r0 < rounds else None  # read only the rollback model
    if w0 is None:    # never sampled: nothing to undo
        w, grad_evals = state.theta[0], 0
    else:
        w, grad_evals = fedavg_rounds(s, w0[0].to(s.device), s.data.retained(request.masks), range(r0, rounds),
                                      params["clients_per_round"], exclude=target)
    bytes_read = sampled.numel() + (w0.numel() * w0.element_size() if w0 is not None else 0)
    floats = 2 * (rounds - r0) * params["clients_per_round"] * s.spec.dim  # each participant's model down and up
    cost = Cost(time.perf_counter() - start, grad_evals=grad_evals, bytes_read=bytes_read,
                communication_floats=floats)
    cert = {"exact": True, "rollback_round": r0, "reference": "FATS-Unl (Tao et al. 2024), client unlearning"}
    return Unlearned(w.unsqueeze(0).to(s.device), [-1], cost, cert)
