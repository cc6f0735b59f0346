"""DU's semantics: flooding (Algorithm 1, lines 7 and 12-17), the sample-, class- and client-wise updates on the
stacked client tensor, noise, degenerate clients and sequential requests; RT with nothing removed."""

from __future__ import annotations

import logging

import networkx as nx
import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from unlearning.methods import du
from unlearning.models import LogisticRegression
from unlearning.seeding import generator
from unlearning.topology import metropolis_hastings, sample_graph, spectral_rho
from unlearning.train.dsgd import ClientData, Schedule, train
from unlearning.train.flat import FlatSpec

N, PER, FEATURES, CLASSES = 4, 40, 6, 3


# ----------------------------------------------------------------------------------------------- flooding

GRAPHS = {
    "ring10": nx.cycle_graph(10),
    "complete6": nx.complete_graph(6),
    "path5": nx.path_graph(5),
    "star7": nx.star_graph(6),
    "er10": sample_graph("erdos_renyi", 10, 0.5, 3, "static"),
    "grid": nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_flooding_delivers_every_message_once_to_every_node(name):
    graph = GRAPHS[name]
    nodes = sorted(graph.nodes)
    sources = [nodes[0], nodes[-1], nodes[len(nodes) // 2], nodes[0]]  # a source may send twice
    ids = [(s, r) for r, s in enumerate(sources)]
    flog = du.flood(graph, nodes, sources, ids, dim=7)
    assert torch.equal(flog.delivered, torch.ones(len(nodes), len(sources), dtype=torch.long))
    n, e = graph.number_of_nodes(), graph.number_of_edges()
    # the source sends to all its neighbours, every other node forwards to all but its sender
    assert flog.messages_sent == len(sources) * (2 * e - (n - 1))
    assert flog.discarded == flog.messages_sent - len(sources) * (n - 1)
    assert flog.floats_sent == 7 * flog.messages_sent
    assert flog.hops == [nx.eccentricity(graph, s) for s in sources]
    assert flog.ids == ids


def test_flooding_on_a_ring_costs_eleven_messages():
    flog = du.flood(nx.cycle_graph(10), list(range(10)), [3], [(3, 0)], dim=1)
    assert flog.messages_sent == 11 and flog.discarded == 2 and flog.hops == [5]


def test_flooding_refuses_a_disconnected_graph():
    graph = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ValueError, match=r"never reaches clients \[2, 3\].*valid: a connected topology"):
        du.flood(graph, [0, 1, 2, 3], [0], [(0, 0)], dim=1)


# ----------------------------------------------------------------------------------------------- Lemma 1

@pytest.mark.parametrize("graph", [nx.cycle_graph(10), sample_graph("erdos_renyi", 10, 0.5, 0, "static")])
def test_lemma_1_consensus_rate_behind_the_uniform_weight(graph):
    """Assumption 1: Q symmetric, doubly stochastic, rho = max(|rho_2|, |rho_N|)^2 < 1; Lemma 1:
    ||Q^k - 11^T/N||^2 <= rho^k (spectral norm). On the 10-ring with weights 1/3, rho = 0.8727^2 = 0.7616."""
    q = metropolis_hastings(graph)
    assert torch.allclose(q, q.T) and torch.allclose(q.sum(0), torch.ones(10, dtype=q.dtype))
    rho = spectral_rho(q) ** 2
    assert rho < 1
    if graph.number_of_edges() == 10:  # the ring
        assert torch.allclose(q[0, [9, 0, 1]], torch.full((3,), 1 / 3, dtype=q.dtype))
        assert rho == pytest.approx(0.7616, abs=5e-5)
    avg = torch.full((10, 10), 0.1, dtype=q.dtype)
    power = torch.eye(10, dtype=q.dtype)
    for k in range(1, 30):
        power = power @ q
        assert float(torch.linalg.matrix_norm(power - avg, ord=2)) ** 2 <= rho**k * (1 + 1e-9)


# ----------------------------------------------------------------------------------------------- fixtures

def make(seed=0, per=PER):
    gen = generator(seed, "test-du")
    means = 2 * torch.randn(CLASSES, FEATURES, generator=gen, dtype=torch.float64)
    y = torch.randint(0, CLASSES, (N * per,), generator=gen)
    x = means[y] + torch.randn(N * per, FEATURES, generator=gen, dtype=torch.float64)
    data = ClientData(x, y, list(torch.arange(N * per).view(N, per)), [torch.ones(per, dtype=torch.bool)] * N)
    torch.manual_seed(seed)
    model = LogisticRegression(FEATURES, CLASSES).double()
    spec = FlatSpec.of(model)
    theta = spec.flatten(model) + 0.5 * torch.randn(N, spec.dim, generator=gen, dtype=torch.float64)
    return model, spec, theta, data


def fraction_masks(data, frac=0.1, seed=0, rows=range(N)):
    masks = []
    for r, idx in enumerate(data.indices):
        mask = torch.zeros(len(idx), dtype=torch.bool)
        if r in rows:
            mask[torch.randperm(len(idx), generator=generator(seed, "m", r))[: int(frac * len(idx))]] = True
        masks.append(mask)
    return masks


def loss_on(model, spec, flat, x, y):
    return float(F.cross_entropy(functional_call(model, spec.unflatten(flat), (x,)), y))


RING = nx.cycle_graph(N)
CLIENTS = list(range(N))


# ----------------------------------------------------------------------------------------------- sample-wise

def test_algorithm1_adds_one_over_n_of_every_message_to_every_client():
    model, spec, theta, data = make()
    forget = fraction_masks(data, rows=(0, 2))
    cfg = du.DUConfig(curvature="hessian_exact", damping=0.01, l2=0.01, noise="fixed", sigma=0.05, seed=7)
    res = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, cfg, classes=CLASSES)
    update = res.theta - theta
    assert torch.allclose(update, update[0].expand_as(update), atol=1e-14)  # the same vector on every client
    assert sorted(res.corrections) == [0, 2]
    # eq. 2-3 by hand for requester 0: (1/(n-m)) (H_R + damping I)^{-1} sum_U grad F~
    retained, deleted = du.local_split(data, forget, 0)
    h = du.logreg_hessian(theta[0], data.x[retained], CLASSES) + 0.01 * torch.eye(spec.dim, dtype=torch.float64)
    g = du.grad_sum(model, spec, theta[0], data.x[deleted], data.y[deleted], 0.01)
    assert torch.allclose(res.corrections[0], torch.linalg.solve(h, g) / len(retained), atol=1e-12)
    noise = N * update[0] - res.corrections[0] - res.corrections[2]
    assert 0.02 < float(noise.std()) / (2**0.5) < 0.1  # two N(0, 0.05^2) draws summed
    assert res.flood.messages_sent == 2 * (2 * 4 - 3)  # two messages, 2|E| - (N - 1) each on a ring of 4
    assert res.flood.floats_sent == res.flood.messages_sent * spec.dim


def test_noise_is_seeded_and_certified_noise_fix_scales_it():
    model, spec, theta, data = make()
    forget = fraction_masks(data, rows=(1,))
    base = dict(curvature="fisher_diag", damping=1e-3, l2=1e-3, noise="c_eff")
    a = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, du.DUConfig(**base, seed=1))
    b = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, du.DUConfig(**base, seed=1))
    c = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, du.DUConfig(**base, seed=2))
    assert torch.equal(a.theta, b.theta) and not torch.equal(a.theta, c.theta)
    m = len(du.local_split(data, forget, 1)[1])
    assert a.sigmas[1] == pytest.approx(0.02064 * (m / PER) ** 2 * 4.8448, rel=1e-4)
    assert a.noise_std[1] == a.sigmas[1]
    fixed = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS,
                           du.DUConfig(**base, seed=1, certified_noise_fix=True))
    assert fixed.noise_std[1] == pytest.approx(N * a.sigmas[1])  # one requester: N / sqrt(1)
    noiseless = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS,
                               du.DUConfig(**{**base, "noise": "none"}))
    drawn_a = N * (a.theta[0] - noiseless.theta[0])
    drawn_fixed = N * (fixed.theta[0] - noiseless.theta[0])
    assert torch.allclose(drawn_fixed, N * drawn_a, rtol=1e-9, atol=1e-15)  # same draw, scaled by N


def test_the_correction_raises_the_loss_on_the_deleted_samples():
    """Spec test 7: after DU (noiseless, exact Hessian) the loss on U rises at every requester."""
    model, spec, theta, data = make(per=80)
    forget = fraction_masks(data, frac=0.2)
    cfg = du.DUConfig(curvature="hessian_exact", damping=0.01, l2=0.01, noise="none")
    res = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, cfg, classes=CLASSES)
    for r in range(N):
        _, deleted = du.local_split(data, forget, r)
        before = loss_on(model, spec, theta[r], data.x[deleted], data.y[deleted])
        after = loss_on(model, spec, res.theta[r], data.x[deleted], data.y[deleted])
        assert after > before


def test_no_request_changes_nothing():
    model, spec, theta, data = make()
    nothing = [torch.zeros(PER, dtype=torch.bool)] * N
    res = du.sample_wise(model, spec, theta, data, nothing, RING, CLIENTS, du.DUConfig())
    assert torch.equal(res.theta, theta) and res.flood is None


def test_degenerate_client_uses_its_full_data_and_is_logged(caplog):
    model, spec, theta, data = make()
    forget = fraction_masks(data, rows=(0,))
    forget[3] = torch.ones(PER, dtype=torch.bool)  # client 3 deletes everything
    cfg = du.DUConfig(curvature="hessian_exact", damping=0.01, l2=0.01, noise="none")
    with caplog.at_level(logging.WARNING, logger="unlearning.methods.du"):
        res = du.sample_wise(model, spec, theta, data, forget, RING, CLIENTS, cfg, classes=CLASSES)
    assert res.degenerate == [3]
    assert "client 3 deletes all 40 of its samples" in caplog.text
    assert "keeps only 36 samples" in caplog.text  # client 0: 0 < n - m < 100
    full = data.indices[3]
    h = du.logreg_hessian(theta[3], data.x[full], CLASSES) + 0.01 * torch.eye(spec.dim, dtype=torch.float64)
    g = du.grad_sum(model, spec, theta[3], data.x[full], data.y[full], 0.01)
    assert torch.allclose(res.corrections[3], torch.linalg.solve(h, g) / PER, atol=1e-12)
    assert torch.isfinite(res.theta).all()


# ----------------------------------------------------------------------------------------------- class-wise

def test_class_wise_removes_the_class_at_every_client():
    model, spec, theta, data = make()
    masks = du.class_masks(data, 1, CLASSES)
    for idx, mask in zip(data.indices, masks):
        assert torch.equal(mask, data.y[idx] == 1)
    cfg = du.DUConfig(curvature="fisher_diag", noise="none")
    res = du.class_wise(model, spec, theta, data, 1, RING, CLIENTS, cfg, CLASSES)
    same = du.sample_wise(model, spec, theta, data, masks, RING, CLIENTS, cfg, classes=CLASSES)
    assert torch.equal(res.theta, same.theta) and sorted(res.corrections) == CLIENTS
    for bad in (-1, CLASSES, 1.0, True):
        with pytest.raises(ValueError, match=rf"^class = .*valid: an integer in 0..{CLASSES - 1}"):
            du.class_masks(data, bad, CLASSES)


# ----------------------------------------------------------------------------------------------- client-wise

def test_client_wise_eq_5_6_and_both_weights():
    model, spec, theta, data = make()
    cfg = du.DUConfig(curvature="hessian_exact", damping=0.01, l2=0.01, noise="none", client_weight="newton")
    res = du.client_wise(model, spec, theta, data, 2, RING, CLIENTS, cfg, classes=CLASSES)
    assert res.clients == [0, 1, 3] and res.theta.shape == (3, spec.dim)
    eye = torch.eye(spec.dim, dtype=torch.float64)
    h = sum(du.logreg_hessian(theta[r], data.x[data.indices[r]], CLASSES) for r in (0, 1, 3)) / 3
    g = du.grad_sum(model, spec, theta[2], data.x[data.indices[2]], data.y[data.indices[2]], 0.01) / PER
    corr = torch.linalg.solve(h + 0.01 * eye, g) / (N - 1)
    assert torch.allclose(res.corrections[2], corr, atol=1e-12)
    assert torch.allclose(res.theta, theta[[0, 1, 3]] + corr, atol=1e-12)
    literal = du.client_wise(model, spec, theta, data, 2, RING, CLIENTS,
                             du.DUConfig(**{**cfg.__dict__, "client_weight": "literal"}), classes=CLASSES)
    assert torch.allclose(literal.theta, theta[[0, 1, 3]] + corr / N, atol=1e-12)
    noisy = du.client_wise(model, spec, theta, data, 2, RING, CLIENTS,
                           du.DUConfig(client_weight="literal", certified_noise_fix=True), classes=CLASSES)
    assert noisy.noise_std[2] == pytest.approx(N * noisy.sigmas[2])  # final std sigma under w = 1/N
    assert noisy.sigmas[2] == pytest.approx(0.02064 / N**2 * 4.8448, rel=1e-4)  # (1/N)^2 for (m/n)^2
    with pytest.raises(ValueError, match="client = 9: not in the network"):
        du.client_wise(model, spec, theta, data, 9, RING, CLIENTS, cfg)


# ----------------------------------------------------------------------------------------------- sequential

def test_sequential_requests_recompute_at_the_current_model_and_data():
    model, spec, theta, data = make(per=60)
    requests = du.sequential_masks(data, 3, 0.2, seed=4)
    for row in range(N):
        chosen = torch.stack([r[row] for r in requests])
        assert int(chosen.sum()) == 3 * 4 and int(chosen.sum(0).max()) == 1  # 3 disjoint thirds of 20 % of 60
    cfg = du.DUConfig(curvature="fisher_diag", noise="c_eff", seed=5)
    out, rest, results = du.sequential(model, spec, theta, data, requests, RING, CLIENTS, cfg, classes=CLASSES)
    step, d = theta, data
    for r, forget in enumerate(requests):
        one = du.sample_wise(model, spec, step, d, forget, RING, CLIENTS, cfg, request_id=r, classes=CLASSES)
        step, d = one.theta, d.retained(forget)
    assert torch.equal(out, step)
    assert [int(k.sum()) for k in rest.keep] == [60 - 12] * N
    # the third request's sigma uses the current n_c = 52: (4/52)^2, not (4/60)^2
    assert results[2].sigmas[0] == pytest.approx(0.02064 * (4 / 52) ** 2 * 4.8448, rel=1e-4)


# ----------------------------------------------------------------------------------------------- RT

def test_retraining_with_nothing_removed_reproduces_training_bit_for_bit():
    """RT is the engine's D-PSGD (model mixing, x <- W x - lr g, one local epoch, ring) on the retained data:
    with an empty request it is training itself, bit for bit."""
    model, spec, _, data = make(per=30)
    data = ClientData(data.x.float(), data.y, data.indices, data.keep)
    model = model.float()
    theta0 = spec.flatten(model).expand(N, -1).clone()
    sched = Schedule("model", 0.1, 10, 1, None, "ring", 0.5, seed=11, graph_nodes=N)
    trained, _ = train(model, spec, theta0, data, CLIENTS, sched, range(3), "vmap")
    nothing = [torch.zeros(30, dtype=torch.bool)] * N
    retrained, _ = train(model, spec, theta0, data.retained(nothing), CLIENTS, sched, range(3), "vmap")
    assert torch.equal(trained, retrained) and not torch.equal(trained, theta0)
    something = fraction_masks(data)
    other, _ = train(model, spec, theta0, data.retained(something), CLIENTS, sched, range(3), "vmap")
    assert not torch.equal(trained, other)


# ----------------------------------------------------------------------------------------------- registry

@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory):
    from pathlib import Path

    from unlearning.experiment import load_setup
    from unlearning.experiments.spine import steps
    from unlearning.files import load_tensors
    from unlearning.methods import TrainedState

    params, features, split = tiny
    out = tmp_path_factory.mktemp("du-pretrain") / "pretrain"
    steps.step_pretrain(params, "spine", features, split, str(out), str(out.parent / "timing.json"))
    setup = load_setup(params, "spine", features, split)
    models = load_tensors(Path(out) / "models.safetensors")
    return TrainedState(setup, models["theta"].to(setup.device), models["clients"].tolist(),
                        params["spine"]["train"]["rounds"], Path(out)), setup


def test_du_through_the_method_registry(trained):
    import copy

    from unlearning.methods import METHODS

    state, setup = trained
    method = METHODS["du"]
    client = method(state, setup.request, {"client_weight": "literal"})  # the tiny setup removes client 3
    assert client.clients == [0, 1, 2] and client.theta.shape == (3, setup.spec.dim)
    assert client.cost.communication_floats == client.certificate["messages"] * setup.spec.dim > 0
    assert client.certificate["sigma"][3] == pytest.approx(0.02064 / 16 * 4.8448, rel=1e-4)  # (1/N)^2, N = 4
    fraction = copy.deepcopy(setup.request)
    fraction.kind, fraction.removed = "fraction", ()
    fraction.masks = [torch.arange(len(m)) % 10 == 0 for m in setup.request.masks]
    sample = method(state, fraction, {"noise": "none"})
    assert sample.clients == [0, 1, 2, 3] and sample.cost.grad_evals > 0
    update = sample.theta - state.theta
    assert torch.allclose(update, update[0].expand_as(update), atol=1e-6) and float(update.norm()) > 0
    with pytest.raises(ValueError, match="damping"):
        method(state, fraction, {"damping": 0})
