"""Communication graphs (networkx), Metropolis-Hastings mixing matrices and the spectral gap.

A graph sequence gives the graph of every round: static kinds repeat one graph, `dynamic` draws a
fresh Erdos-Renyi(p) graph each round. Every graph is resampled until it is connected, and, when
clients are to be removed later, until it stays connected without them (so that the remaining
clients can still reach consensus).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch

from .seeding import derive_seed

TOPOLOGIES = ("ring", "erdos_renyi", "complete", "dynamic")
MAX_RESAMPLES = 10_000


def _connected(graph: nx.Graph, without: tuple[int, ...]) -> bool:
    if not nx.is_connected(graph):
        return False
    if without:
        rest = graph.subgraph([v for v in graph if v not in without])
        return rest.number_of_nodes() <= 1 or nx.is_connected(rest)
    return True


def sample_graph(kind: str, n: int, p_edge: float, seed: int, *keys, without: tuple[int, ...] = ()) -> nx.Graph:
    """One graph on nodes 0..n-1, connected with and without the nodes in `without`."""
    if kind == "ring":
        return nx.cycle_graph(n)
    if kind == "complete":
        return nx.complete_graph(n)
    if kind not in ("erdos_renyi", "dynamic"):
        raise ValueError(f"topology {kind!r}: unknown; valid: {', '.join(TOPOLOGIES)}")
    for attempt in range(MAX_RESAMPLES):
        graph = nx.erdos_renyi_graph(n, p_edge, seed=derive_seed(seed, "graph", *keys, attempt))
        if _connected(graph, without):
            return graph
    raise ValueError(f"topology.p_edge = {p_edge}: no connected Erdos-Renyi graph on {n} nodes in "
                     f"{MAX_RESAMPLES} draws; use a larger p_edge")


def graph_for_round(kind: str, n: int, p_edge: float, seed: int, round_: int,
                    without: tuple[int, ...] = ()) -> nx.Graph:
    """The graph of round `round_`: the same graph every round unless `kind` is dynamic."""
    keys = (round_,) if kind == "dynamic" else ("static",)
    return sample_graph(kind, n, p_edge, seed, *keys, without=without)


def metropolis_hastings(graph: nx.Graph, nodes: list[int] | None = None) -> torch.Tensor:
    """MH weights W_ij = 1/(1+max(deg_i, deg_j)) on edges, W_ii = 1 - sum_j W_ij (float64).

    With `nodes`, the graph is first restricted to those nodes (degrees recomputed), and the rows and
    columns follow the order of `nodes`.
    """
    nodes = sorted(graph.nodes) if nodes is None else list(nodes)
    sub = graph.subgraph(nodes)
    pos = {v: k for k, v in enumerate(nodes)}
    w = np.zeros((len(nodes), len(nodes)))
    for i, j in sub.edges:
        w[pos[i], pos[j]] = w[pos[j], pos[i]] = 1.0 / (1 + max(sub.degree[i], sub.degree[j]))
    w[np.diag_indices_from(w)] = 1.0 - w.sum(axis=1)
    return torch.from_numpy(w)


def metropolis_hastings_without(graph: nx.Graph, clients: list[int], removed: tuple[int, ...]) -> torch.Tensor:
    """MH weights of the graph without `removed`, embedded in the rows/columns of `clients` with zero rows
    and columns for the removed ones (the W-hat of Qiao et al. 2025, Sec. 3)."""
    keep = [k for k, c in enumerate(clients) if c not in removed]
    w = torch.zeros(len(clients), len(clients), dtype=torch.float64)
    w[torch.tensor(keep)[:, None], torch.tensor(keep)] = metropolis_hastings(graph, [clients[k] for k in keep])
    return w


JOINS = ("chain", "star")


def repair_after_removal(graph: nx.Graph, removed: int | tuple[int, ...], kind: str, join: str = "chain") -> nx.Graph:
    """The graph after client(s) `removed` leave, for client-wise unlearning and its retraining. Wu et al. 2026
    (client-wise unlearning, Sec. IV; experiments, Sec. VI-A) do not say how the graph changes; this rule is
    a decision, and `join` its cheap alternative:

    ring: delete the node and join its two neighbours, so a ring of N stays a ring of N - 1.
    erdos_renyi, complete, dynamic: delete the node; if the rest is disconnected, join the components by
    linking their lowest-index nodes: with components ordered by their lowest node, `join` "chain" links
    the k-th to the (k+1)-th, "star" links every one to the first (the same edge when there are two).
    Several removed nodes are removed one after another in the order given. Node labels are kept (client
    ids), so `metropolis_hastings(result)` has rows in the sorted order of the remaining clients; the
    input graph is not modified."""
    if kind not in TOPOLOGIES:
        raise ValueError(f"topology {kind!r}: unknown; valid: {', '.join(TOPOLOGIES)}")
    if join not in JOINS:
        raise ValueError(f"join {join!r}: unknown; valid: {', '.join(JOINS)}")
    out = graph.copy()
    for c in (int(removed),) if isinstance(removed, (int, np.integer)) else tuple(int(r) for r in removed):
        if c not in out:
            raise ValueError(f"removed client {c}: not a node of the graph; valid: one of {sorted(out.nodes)}")
        neighbours = sorted(out[c])
        if kind == "ring" and len(neighbours) > 2:
            raise ValueError(f"topology ring: node {c} has {len(neighbours)} neighbours, so the graph is not a ring")
        out.remove_node(c)
        if kind == "ring":
            if len(neighbours) == 2:
                out.add_edge(*neighbours)
            continue
        lowest = sorted(min(comp) for comp in nx.connected_components(out))
        for k in range(1, len(lowest)):
            out.add_edge(lowest[k - 1] if join == "chain" else lowest[0], lowest[k])
    return out


def spectral_rho(w: torch.Tensor) -> float:
    """rho = max(|lambda_2|, |lambda_n|) of a symmetric doubly-stochastic W (Qiao et al. 2025, Assumption 4.8)."""
    eig = torch.linalg.eigvalsh(w.double())
    if len(eig) == 1:
        return 0.0
    return float(max(abs(eig[-2]), abs(eig[0])))


def dsgd_floats(sched, clients: list[int], rounds: range, dim: int) -> int:
    """Floats D-SGD sends over `rounds` under the schedule `sched` (train/schedule.Schedule): every edge among
    `clients` of each round's graph carries a d-vector each way."""
    if sched.topology == "complete":
        return 2 * len(rounds) * len(clients) * (len(clients) - 1) // 2 * dim
    edges = 0
    for t in rounds:
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        edges += graph.subgraph(clients).number_of_edges()
    return 2 * edges * dim
