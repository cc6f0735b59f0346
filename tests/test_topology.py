"""Communication graphs, Metropolis-Hastings mixing matrices and the spectral gap."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from unlearning import topology
from unlearning.topology import graph_for_round, metropolis_hastings, sample_graph, spectral_rho

N = 10
KINDS = ("ring", "erdos_renyi", "complete", "dynamic")


def _assert_doubly_stochastic(w: torch.Tensor) -> None:
    assert w.dtype == torch.float64
    assert torch.equal(w, w.T), "not symmetric"
    assert bool((w >= 0).all()), "negative weight"
    ones = torch.ones(len(w), dtype=torch.float64)
    assert torch.allclose(w.sum(dim=1), ones, atol=1e-12)
    assert torch.allclose(w.sum(dim=0), ones, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("round_", [0, 1, 5])
def test_mh_matrix_is_symmetric_doubly_stochastic_with_rho_below_one(kind, round_):
    """Every kind of graph gives a connected graph whose MH matrix mixes (rho < 1)."""
    graph = graph_for_round(kind, N, 0.3, seed=0, round_=round_)
    assert sorted(graph.nodes) == list(range(N)) and nx.is_connected(graph)
    w = metropolis_hastings(graph)
    assert w.shape == (N, N)
    _assert_doubly_stochastic(w)
    assert spectral_rho(w) < 1 - 1e-6


def test_mh_weights_follow_the_metropolis_hastings_rule():
    """W_ij = 1/(1+max(deg_i, deg_j)) on edges, 0 off edges, W_ii = 1 - sum of the row's others."""
    graph = sample_graph("erdos_renyi", N, 0.4, 1, "static")
    w = metropolis_hastings(graph).numpy()
    for i in range(N):
        for j in range(N):
            if i == j:
                continue
            expected = 1 / (1 + max(graph.degree[i], graph.degree[j])) if graph.has_edge(i, j) else 0.0
            assert w[i, j] == pytest.approx(expected, abs=1e-15)
        assert w[i, i] == pytest.approx(1 - (w[i].sum() - w[i, i]), abs=1e-15)


def test_ring_of_ten_has_the_closed_form_rho():
    """On a ring every degree is 2, so W = (I + shift + shift^-1)/3 with eigenvalues
    1/3 + (2/3)cos(2 pi k/n); rho is the k=1 value, 0.8726779962..."""
    expected = 1 / 3 + (2 / 3) * math.cos(2 * math.pi / N)
    assert expected == pytest.approx(0.872677996249965, abs=1e-14)
    w = metropolis_hastings(graph_for_round("ring", N, 0.3, seed=0, round_=0))
    assert abs(spectral_rho(w) - expected) < 1e-12
    # the matrix itself: 1/3 on the diagonal and to both ring neighbours
    eye = np.eye(N)
    assert np.allclose(w.numpy(), (eye + np.roll(eye, 1, axis=1) + np.roll(eye, -1, axis=1)) / 3, atol=1e-15)


@pytest.mark.parametrize("n", [2, 5, 10])
def test_complete_graph_averages_exactly(n):
    """On the complete graph W = 1 1^T / n, so rho = 0."""
    w = metropolis_hastings(graph_for_round("complete", n, 0.3, seed=0, round_=0))
    assert torch.allclose(w, torch.full((n, n), 1 / n, dtype=torch.float64), atol=1e-15)
    assert spectral_rho(w) < 1e-12


def test_spectral_rho_of_a_single_node_is_zero():
    assert spectral_rho(torch.ones(1, 1, dtype=torch.float64)) == 0.0


@pytest.mark.parametrize("kind", ["erdos_renyi", "ring", "dynamic"])
def test_mh_on_a_node_subset_recomputes_degrees_without_the_removed_node(kind):
    """PDUDT spec test 1: after removing a node, degrees are recomputed on the rest, and each remaining
    node's neighbours are (a subset of) its neighbours in the full graph minus the removed node."""
    removed = 9
    graph = graph_for_round(kind, N, 0.3, seed=4, round_=2, without=(removed,))
    nodes = [v for v in range(N) if v != removed]
    w = metropolis_hastings(graph, nodes=nodes).numpy()
    assert w.shape == (N - 1, N - 1)
    _assert_doubly_stochastic(torch.from_numpy(w))
    rest = graph.subgraph(nodes)
    for a, i in enumerate(nodes):
        sub_neighbours = {nodes[b] for b in range(N - 1) if b != a and w[a, b] > 0}
        assert sub_neighbours <= set(graph.neighbors(i)) - {removed}
        assert sub_neighbours == set(rest.neighbors(i))
        for b, j in enumerate(nodes):
            if b != a and rest.has_edge(i, j):
                # degrees without the removed node, not the full graph's
                assert w[a, b] == pytest.approx(1 / (1 + max(rest.degree[i], rest.degree[j])), abs=1e-15)
    assert spectral_rho(torch.from_numpy(w)) < 1 - 1e-6


def test_mh_subset_rows_follow_the_given_node_order():
    """Rows and columns follow the order of `nodes`, not the sorted order."""
    graph = sample_graph("erdos_renyi", N, 0.4, 2, "static")
    order = [7, 2, 5, 0, 3]
    w = metropolis_hastings(graph, nodes=order)
    ref = metropolis_hastings(graph, nodes=sorted(order))
    perm = [sorted(order).index(v) for v in order]
    assert torch.equal(w, ref[perm][:, perm])


def test_dynamic_graphs_change_between_rounds_but_repeat_per_seed_and_round():
    """A dynamic graph is a fresh draw each round, the same draw for the same (seed, round)."""
    graphs = [graph_for_round("dynamic", N, 0.3, seed=1, round_=r) for r in range(5)]
    edge_sets = [frozenset(map(frozenset, g.edges)) for g in graphs]
    assert len(set(edge_sets)) > 1
    for r, edges in enumerate(edge_sets):
        again = graph_for_round("dynamic", N, 0.3, seed=1, round_=r)
        assert frozenset(map(frozenset, again.edges)) == edges
    other_seed = graph_for_round("dynamic", N, 0.3, seed=2, round_=0)
    assert frozenset(map(frozenset, other_seed.edges)) != edge_sets[0]


def test_static_erdos_renyi_is_the_same_graph_every_round():
    g0 = graph_for_round("erdos_renyi", N, 0.3, seed=1, round_=0)
    g7 = graph_for_round("erdos_renyi", N, 0.3, seed=1, round_=7)
    assert set(g0.edges) == set(g7.edges)


def test_dynamic_graphs_stay_connected_without_the_removed_client():
    """With without=(9,), every round's graph minus node 9 is connected (p_edge = 0.3)."""
    for r in range(60):
        graph = graph_for_round("dynamic", N, 0.3, seed=3, round_=r, without=(9,))
        assert nx.is_connected(graph)
        assert nx.is_connected(graph.subgraph(range(9)))


def test_impossible_p_edge_raises_value_error():
    """No connected graph can be drawn with p_edge = 1e-9: after MAX_RESAMPLES draws (~0.4 s for
    10,000 on 10 nodes) a ValueError names p_edge."""
    with pytest.raises(ValueError, match=rf"p_edge.*{topology.MAX_RESAMPLES} draws"):
        sample_graph("erdos_renyi", N, 1e-9, 0, "static")


def test_impossible_p_edge_raises_for_dynamic_rounds_too(monkeypatch):
    monkeypatch.setattr(topology, "MAX_RESAMPLES", 50)  # the full 10,000 draws are tested above
    with pytest.raises(ValueError, match="p_edge.*50 draws"):
        graph_for_round("dynamic", N, 1e-9, seed=0, round_=3)


def test_unknown_topology_raises():
    with pytest.raises(ValueError, match="valid: ring, erdos_renyi, complete, dynamic"):
        sample_graph("star", N, 0.3, 0)
