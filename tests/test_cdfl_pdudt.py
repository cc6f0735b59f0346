"""PDUDT as CDFL's client-wise baseline (experiments/cdfl/pdudt_baseline.py): the history it records during
model-mixing training and the correction it computes from it."""

from __future__ import annotations

import networkx as nx
import pytest
import torch

from unlearning.experiments.cdfl import pdudt_baseline
from unlearning.methods.pdudt import client_correction
from unlearning.topology import metropolis_hastings


def test_history_stores_w_hat_without_the_leaver_and_the_correction_follows_eq_7_to_9():
    clients, target, dim, lr = [0, 1, 2, 3, 4], 2, 3, 0.1
    ring = nx.cycle_graph(5)
    w = metropolis_hastings(ring)
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(5, dim, generator=gen) for _ in range(3)]
    with pdudt_baseline.recorded_history(3, clients, dim, target, ring, "float32") as (directory, writer):
        for t, g in enumerate(grads):
            writer.append(t, g, {"W": w})
        writer.close()
        theta = torch.randn(5, dim, generator=gen, dtype=torch.float64)
        out, cost = pdudt_baseline.correct(theta, directory, clients, target, lr, 0.0, 0, "test")
        from unlearning.history import History
        history = History(directory)
        w_hat = history.mixing["W_without"][0]
    # W-hat: the ring without 2 (the path 3-4-0-1; no new edge: a client holds only its neighbours' gradients),
    # zero row and column for the leaver
    assert torch.all(w_hat[target] == 0) and torch.all(w_hat[:, target] == 0)
    assert torch.allclose(w_hat[[0, 1, 3, 4]][:, [0, 1, 3, 4]], metropolis_hastings(ring, [0, 1, 3, 4]))
    assert torch.all((w_hat != 0) <= (w != 0))
    # by hand, client 1: delta^t = lr (W-hat - W)[1] g^t, weights a^t = ||W[1] g^t||^2 normalised (Eq. 7-9)
    deltas = [lr * (w_hat[1] - w[1]).float() @ g for g in grads]
    a = torch.tensor([float(((w[1].float() @ g) ** 2).sum()) for g in grads])
    expected = sum(p * d for p, d in zip(a / a.sum(), deltas))
    assert torch.allclose(theta[1] - out[1], expected.double(), atol=1e-6)  # sigma 0: no noise
    assert out.shape == (4, dim) and cost["history_floats"] == 3 * 5 * dim and cost["sigma"] == 0.0
    assert not torch.allclose(out[1], theta[1])


def test_correction_reuses_the_methods_module():
    """One PDUDT: the baseline calls methods.pdudt.client_correction, not a copy of it."""
    assert pdudt_baseline.client_correction is client_correction


@pytest.mark.parametrize("curve, expected", [([50.0, 70.0, 70.5, 71.0], 2), ([80.0, 60.0, 79.5], 1),
                                             ([10.0], 1)])
def test_stable_round_is_the_first_within_one_point_of_the_best(curve, expected):
    assert pdudt_baseline.stable_round([{"test_accuracy": a} for a in curve]) == expected
