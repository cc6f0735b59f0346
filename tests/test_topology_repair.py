"""The graph after a client leaves: a ring closes over the gap, an Erdos-Renyi graph is reconnected by linking
its components' lowest-index nodes, and the Metropolis-Hastings matrix of the result mixes."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from unlearning.topology import metropolis_hastings, repair_after_removal, sample_graph, spectral_rho


def assert_mixes(graph: nx.Graph) -> None:
    w = metropolis_hastings(graph)
    assert torch.equal(w, w.T) and bool((w >= 0).all())
    ones = torch.ones(len(w), dtype=torch.float64)
    assert torch.allclose(w.sum(0), ones, atol=1e-12) and torch.allclose(w.sum(1), ones, atol=1e-12)
    assert spectral_rho(w) < 1 - 1e-6


@pytest.mark.parametrize("c", [0, 4, 9])
def test_a_ring_of_ten_minus_one_is_a_ring_of_nine(c):
    ring = nx.cycle_graph(10)
    out = repair_after_removal(ring, c, "ring")
    assert sorted(out.nodes) == [v for v in range(10) if v != c]
    assert all(d == 2 for _, d in out.degree) and nx.is_connected(out) and out.number_of_edges() == 9
    assert out.has_edge((c - 1) % 10, (c + 1) % 10)
    assert ring.number_of_nodes() == 10 and ring.has_edge(c, (c + 1) % 10)  # the input is untouched
    assert_mixes(out)


def test_two_departures_from_a_ring_leave_a_ring_of_eight():
    out = repair_after_removal(nx.cycle_graph(10), (3, 4), "ring")
    assert nx.is_isomorphic(out, nx.cycle_graph(8)) and out.has_edge(2, 5)
    assert nx.utils.graphs_equal(repair_after_removal(nx.cycle_graph(10), np.int64(3), "ring"),
                                 repair_after_removal(nx.cycle_graph(10), 3, "ring"))  # a numpy id as well


def cut_vertex_graph() -> nx.Graph:
    """Node 7 is the only link between {0, 1, 2}, {3, 4, 5, 6}, {8} and {9}."""
    g = nx.Graph([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (5, 6), (7, 2), (7, 5), (7, 8), (7, 9)])
    assert nx.is_connected(g)
    return g


@pytest.mark.parametrize("join,added", [("chain", {(0, 3), (3, 8), (8, 9)}), ("star", {(0, 3), (0, 8), (0, 9)})])
def test_disconnecting_removal_links_the_components_lowest_nodes(join, added):
    g = cut_vertex_graph()
    out = repair_after_removal(g, 7, "erdos_renyi", join=join)
    kept = {tuple(sorted(e)) for e in g.edges if 7 not in e}
    assert {tuple(sorted(e)) for e in out.edges} == kept | added
    assert nx.is_connected(out)
    assert_mixes(out)


def test_a_sampled_erdos_renyi_graph_with_a_cut_vertex_is_reconnected():
    """The first seeded G(10, 0.25) with a cut vertex: removing it adds exactly the lowest-node links."""
    for seed in range(200):
        g = sample_graph("erdos_renyi", 10, 0.25, seed, "static")
        cuts = sorted(nx.articulation_points(g))
        if cuts:
            break
    else:
        pytest.fail("no sampled graph with a cut vertex in 200 seeds")
    c = cuts[0]
    rest = g.subgraph([v for v in g if v != c])
    lowest = sorted(min(comp) for comp in nx.connected_components(rest))
    assert len(lowest) >= 2
    out = repair_after_removal(g, c, "erdos_renyi")
    added = {tuple(sorted(e)) for e in out.edges} - {tuple(sorted(e)) for e in rest.edges}
    assert added == set(zip(lowest[:-1], lowest[1:]))
    assert nx.is_connected(out)
    assert_mixes(out)


def test_a_removal_that_keeps_the_graph_connected_only_deletes_the_node():
    g = nx.complete_graph(10)
    out = repair_after_removal(g, 3, "complete")
    assert nx.is_isomorphic(out, nx.complete_graph(9)) and 3 not in out
    g = cut_vertex_graph()
    out = repair_after_removal(g, 0, "erdos_renyi")
    assert {tuple(sorted(e)) for e in out.edges} == {tuple(sorted(e)) for e in g.edges if 0 not in e}


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="topology 'torus': unknown; valid: ring, erdos_renyi"):
        repair_after_removal(nx.cycle_graph(5), 1, "torus")
    with pytest.raises(ValueError, match="removed client 7: not a node of the graph"):
        repair_after_removal(nx.cycle_graph(5), 7, "ring")
    with pytest.raises(ValueError, match="node 7 has 4 neighbours, so the graph is not a ring"):
        repair_after_removal(cut_vertex_graph(), 7, "ring")
    with pytest.raises(ValueError, match="join 'tree': unknown; valid: chain, star"):
        repair_after_removal(cut_vertex_graph(), 7, "erdos_renyi", join="tree")
