"""PDUDT (Qiao et al., ICML 2025) as CDFL's client-wise baseline (Wu et al. 2026, Sec. VI: Figures 1d-f, 2c).

This project's PDUDT (methods/pdudt.py, Eq. 7-9 and Algorithm 2) replays a gradient history: per round, each
client's pseudo-gradient g^t_j and the round's mixing matrices W^t and W-hat^t. CDFL trains with model mixing
(x <- W x - lr g), so the history is obtained as follows:
- during the original K rounds the engine records every client's pseudo-gradient g^t_j (the sum of its local
  update directions in round t, what it would send in gradient mixing) and the round's Metropolis-Hastings W^t;
- W-hat^t is the MH matrix of the same graph without the leaver (zero row and column there), as in PDUDT: a client
  holds only its neighbours' gradients, so W-hat has no edge W lacks (the graph is fixed: one W-hat every round);
- PDUDT's Eq. 7-9 run on it unchanged: delta^t_i = lr sum_j (W-hat^t_ij - W^t_ij) g^t_j, weighted by
  p^t_i = ||sum_j W^t_ij g^t_j||^2 / sum_t (...), subtracted from each remaining client's round-K model, then the
  Gaussian noise of Algorithm 2 (z_i ~ N(0, (N-1) sigma^2 I)) with sigma = DU's client-wise sigma (one noise level
  for both); afterwards the network runs on the repaired graph (topology.repair_after_removal), as DU and RT do.
This is an approximation, labelled as such in the report: under model mixing a gradient is not mixed by W (the
models are), and the leaver's influence also travels through later rounds' model averaging, which Eq. 7's one-round
residual does not see; PDUDT then relies on its subsequent rounds (D-PSGD on the N-1 clients over the repaired
graph, the clients keeping their optimizer state) to recover.
"""

from __future__ import annotations

import math
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import networkx as nx
import torch

from ...history import History, HistoryWriter
from ...methods.pdudt import add_noise, client_correction
from ...topology import metropolis_hastings_without

LABEL = "PDUDT (re-implementation on the model-mixing run's gradient history, approximate)"


class ResidualWeights:
    """A history writer that also stores W-hat (fixed: the graph's MH weights without the leaver) beside every W."""

    def __init__(self, writer: HistoryWriter, w_without: torch.Tensor):
        self.writer, self.w_without = writer, w_without

    def append(self, round_: int, grads: torch.Tensor, mixing: dict[str, torch.Tensor]) -> None:
        self.writer.append(round_, grads, {**mixing, "W_without": self.w_without})

    def close(self) -> None:
        self.writer.close()


@contextmanager
def recorded_history(rounds: int, clients: list[int], dim: int, target: int, graph: nx.Graph, dtype: str):
    """A temporary history directory and its writer for the original's `rounds` on the fixed `graph` (removed on
    exit)."""
    with tempfile.TemporaryDirectory(prefix="cdfl-pdudt-history-") as directory:
        w_hat = metropolis_hastings_without(graph, clients, (target,))
        yield Path(directory), ResidualWeights(HistoryWriter(directory, rounds, clients, dim, dtype), w_hat)


def correct(theta: torch.Tensor, directory: Path, clients: list[int], target: int, lr: float, sigma: float,
            seed: int, name: str) -> tuple[torch.Tensor, dict]:
    """PDUDT's unlearned models of the remaining clients (rows in the order of `clients` without `target`): Eq. 9's
    corrected models plus Algorithm 2's noise. Returns them and the cost (seconds, bytes of history read, floats
    stored)."""
    start = time.perf_counter()
    history = History(directory)
    stored = history.meta["clients"]
    remaining = [c for c in clients if c != target]
    corrections = torch.stack([client_correction(history, stored.index(c), lr, len(history)) for c in remaining])
    base = torch.stack([theta[clients.index(c)] for c in remaining]).cpu()
    out = add_noise(base - corrections, remaining, len(clients), sigma, seed, name)
    cost = {"correction_s": time.perf_counter() - start, "bytes_read": history.bytes_read,
            "history_floats": len(history) * len(stored) * history.dim,
            "correction_norm": float(corrections.norm(dim=1).mean()),
            "sigma": sigma, "noise_std_per_client": math.sqrt(len(clients) - 1) * sigma}
    return out.to(theta), cost


def stable_round(curve: list[dict], tolerance: float = 1.0) -> int:
    """The first round (1-based index into `curve`) whose test accuracy is within `tolerance` points of the best
    in the window (the time-to-stabilise of Fig. 2, Sec. VI-B3)."""
    best = max(p["test_accuracy"] for p in curve)
    return next(k + 1 for k, p in enumerate(curve) if p["test_accuracy"] >= best - tolerance)
