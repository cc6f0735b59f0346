"""Local optimizers of the decentralized engine (sgd / momentum / adam, L2 term), checked against torch.optim
stepping an ordinary nn.Module on the same minibatches; both local-step strategies agree; the default (plain
SGD, no L2) is bit-identical to the engine's original code, re-stated here."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.func
import torch.nn.functional as F

from unlearning.models import build_model
from unlearning.topology import graph_for_round, metropolis_hastings
from unlearning.train.autodiff import grad
from unlearning.train.dsgd import (
    ClientData,
    Diverged,
    Schedule,
    local_updates,
    make_loss,
    mix,
    round_batches,
    train,
)
from unlearning.train.flat import FlatSpec
from unlearning.train.optim import LocalOptimizer

SHAPE = (1, 6, 6)


def toy(sizes, seed=0, device="cpu", scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    x, y = scale * torch.randn(n, *SHAPE, generator=gen), torch.randint(0, 10, (n,), generator=gen)
    bounds = torch.tensor([0, *sizes]).cumsum(0)
    indices = [torch.arange(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    return ClientData(x.to(device), y.to(device), indices, [torch.ones(s, dtype=torch.bool) for s in sizes])


def setup(m, device="cpu", name="mlp"):
    torch.manual_seed(0)
    model = build_model(name, SHAPE, 10, mlp_hidden=16).to(device)
    spec = FlatSpec.of(model)
    gen = torch.Generator().manual_seed(1)
    theta = spec.flatten(model) + 0.01 * torch.randn(m, spec.dim, generator=gen).to(device)
    return model, spec, theta


def sched(m, lr=0.05, topology="complete", mixing="model", **opt):
    return Schedule(mixing, lr, 8, 1, None, topology, 0.5, 3, m, **opt)


def torch_optimizer(kind, params, lr, l2):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=l2)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=l2)
    return torch.optim.Adam(params, lr=lr, weight_decay=l2)


@pytest.mark.parametrize("kind,l2", [("momentum", 0.0), ("momentum", 0.05), ("adam", 0.0), ("adam", 0.05),
                                     ("sgd", 0.05)])
@pytest.mark.parametrize("strategy", ["vmap", "loop"])
def test_one_client_equals_torch_optim_across_rounds(kind, l2, strategy, device, no_tf32):
    """One client (W = [1]): three rounds of the engine, state carried across rounds, equal torch.optim with
    weight_decay = l2 (the gradient plus l2 x) stepping the same model on the same minibatches (the last
    minibatch of each round is partial: 30 samples, batch 8)."""
    model, spec, theta = setup(1, device)
    data = toy([30], device=device)
    s = sched(1, lr=0.01 if kind == "adam" else 0.05, optimizer=kind, l2=l2)
    out, log = train(model, spec, theta, data, [0], s, range(3), strategy)
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p, v in zip(ref.parameters(), spec.unflatten(theta[0]).values()):
            p.copy_(v)
    opt = torch_optimizer(kind, ref.parameters(), s.lr, l2)
    for t in range(3):
        idx, w = round_batches(data, [0], s, t)
        for step in range(idx.shape[1]):
            rows = idx[0, step][w[0, step].bool()].to(device)
            opt.zero_grad()
            F.cross_entropy(ref(data.x[rows]), data.y[rows]).backward()
            opt.step()
    torch.testing.assert_close(out[0], spec.flatten(ref), atol=1e-5, rtol=1e-4)
    assert int(log.opt_state.steps[0]) == 3 * 4


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_pseudo_gradient_is_theta_minus_phi_over_lr(kind, device, no_tf32):
    """(theta - phi)/lr of the local steps, for a non-SGD optimizer too: phi from torch.optim on each client."""
    model, spec, theta = setup(2, device)
    data = toy([20, 27], device=device)
    s = sched(2, lr=0.02, optimizer=kind, l2=0.01)
    idx, w = round_batches(data, [0, 1], s, 0)
    opt = s.local_optimizer()
    pseudo, _ = local_updates(theta, opt.init(theta), data, idx, w, s.lr, grad(make_loss(model, spec)), "vmap", opt)
    for c in range(2):
        ref = copy.deepcopy(model)
        with torch.no_grad():
            for p, v in zip(ref.parameters(), spec.unflatten(theta[c]).values()):
                p.copy_(v)
        topt = torch_optimizer(kind, ref.parameters(), s.lr, 0.01)
        for step in range(idx.shape[1]):
            if not bool(w[c, step].any()):
                continue
            rows = idx[c, step][w[c, step].bool()].to(device)
            topt.zero_grad()
            F.cross_entropy(ref(data.x[rows]), data.y[rows]).backward()
            topt.step()
        torch.testing.assert_close(pseudo[c], (theta[c] - spec.flatten(ref)) / s.lr, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
@pytest.mark.parametrize("mixing", ["model", "gradient"])
def test_vmap_and_loop_agree_with_unequal_and_empty_clients(kind, mixing, device, no_tf32):
    """Ring of 4, clients of 10 / 37 / 23 / 0 samples, L2 on: both strategies give the same models and state;
    the empty client never steps its optimizer (it only mixes)."""
    model, spec, theta = setup(4, device)
    data = toy([10, 37, 23, 0], device=device)
    s = sched(4, lr=0.02, topology="ring", mixing=mixing, optimizer=kind, l2=0.01)
    by_vmap, log_v = train(model, spec, theta, data, [0, 1, 2, 3], s, range(3), "vmap")
    by_loop, log_l = train(model, spec, theta, data, [0, 1, 2, 3], s, range(3), "loop")
    torch.testing.assert_close(by_vmap, by_loop, atol=1e-5, rtol=1e-4)
    assert log_v.opt_state.steps.tolist() == log_l.opt_state.steps.tolist() == [3 * 2, 3 * 5, 3 * 3, 0]
    for a, b in [(log_v.opt_state.buf, log_l.opt_state.buf), (log_v.opt_state.exp_avg, log_l.opt_state.exp_avg)]:
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
            assert torch.equal(a[3], torch.zeros_like(a[3]))


def test_state_carries_across_calls_and_is_per_client():
    """Two rounds in one call equal one round, then one more from the returned state; a fresh state differs."""
    model, spec, theta = setup(3)
    data = toy([20, 20, 20])
    s = sched(3, lr=0.01, topology="ring", optimizer="adam")
    both, _ = train(model, spec, theta, data, [0, 1, 2], s, range(2), "vmap")
    mid, log = train(model, spec, theta, data, [0, 1, 2], s, range(1), "vmap")
    resumed, _ = train(model, spec, mid, data, [0, 1, 2], s, range(1, 2), "vmap", opt_state=log.opt_state)
    fresh, _ = train(model, spec, mid, data, [0, 1, 2], s, range(1, 2), "vmap")
    assert torch.equal(both, resumed)
    assert not torch.allclose(both, fresh)
    kept = log.opt_state.select([0, 2])
    assert torch.equal(kept.exp_avg, log.opt_state.exp_avg[[0, 2]]) and kept.steps.tolist() == [3, 3]


def test_l2_adds_lambda_x_to_the_gradient(device, no_tf32):
    """sgd with l2 = lam equals plain local SGD on the loss CE + (lam/2)||x||^2, differentiated by autograd."""
    model, spec, theta = setup(3, device)
    data = toy([15, 30, 9], device=device)
    s = sched(3, lr=0.05, optimizer="sgd", l2=0.3)
    idx, w = round_batches(data, [0, 1, 2], s, 0)
    opt = s.local_optimizer()
    ce = make_loss(model, spec)

    def regularised(flat, xb, yb, wb):
        return ce(flat, xb, yb, wb) + 0.15 * (flat * flat).sum()

    pseudo, _ = local_updates(theta, opt.init(theta), data, idx, w, s.lr, grad(ce), "vmap", opt)
    reg_grad = torch.func.grad(regularised)  # torch.func beside the engine's autograd (train/autodiff.py)
    phi, expected = theta, torch.zeros_like(theta)
    for step in range(idx.shape[1]):
        rows = idx[:, step].to(device)
        xb = data.x[rows.flatten()].view(*rows.shape, *SHAPE)
        g = torch.func.vmap(reg_grad)(phi, xb, data.y[rows.flatten()].view(rows.shape), w[:, step].to(device))
        g = g * w[:, step].any(dim=1).to(device)[:, None]  # a client without a minibatch does not step
        expected, phi = expected + g, phi - s.lr * g
    torch.testing.assert_close(pseudo, expected, atol=1e-5, rtol=1e-4)


def original_train(model, spec, theta, data, clients, sched, rounds, strategy):
    """The engine's train() and local_pseudo_gradients() before optimizers were added (no history), verbatim."""
    grad_fn = grad(make_loss(model, spec))
    for t in rounds:
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        w = metropolis_hastings(graph, nodes=clients).to(theta)
        idx, weight = round_batches(data, clients, sched, t)
        phi, pseudo = theta, torch.zeros_like(theta)
        device, steps = theta.device, idx.shape[1]
        batched = grad_fn.rows() if strategy == "vmap" else None
        for s in range(steps):
            rows = idx[:, s].to(device)
            xb = data.x.index_select(0, rows.flatten()).view(*rows.shape, *data.x.shape[1:])
            yb, wb = data.y.index_select(0, rows.flatten()).view(rows.shape), weight[:, s].to(device)
            if batched is not None:
                g = batched(phi, xb, yb, wb)
            else:
                g = torch.zeros_like(phi)
                for i in range(phi.shape[0]):
                    if bool(weight[i, s].any()):
                        g[i] = grad_fn(phi[i], xb[i], yb[i], wb[i])
            pseudo += g
            if s + 1 < steps:
                phi = phi - sched.lr * g
        theta = mix(theta, pseudo, w, sched.lr, sched.mixing)
    return theta


@pytest.mark.parametrize("strategy", ["vmap", "loop"])
@pytest.mark.parametrize("mixing", ["model", "gradient"])
def test_default_sgd_is_bit_identical_to_the_original_engine(strategy, mixing, device):
    model, spec, theta = setup(4, device)
    data = toy([10, 37, 23, 0], device=device)
    cfg = {"train": {"mixing": mixing, "lr": 0.05, "batch_size": 8, "local_epochs": 1, "local_steps": None},
           "topology": {"kind": "erdos_renyi", "p_edge": 0.5}, "clients": 4}
    s = Schedule.from_config(cfg, seed=3)  # a config without optimizer keys (spine, pdudt)
    assert (s.optimizer, s.l2) == ("sgd", 0.0) and s.local_optimizer().plain
    out, log = train(model, spec, theta, data, [0, 1, 2, 3], s, range(3), strategy)
    assert torch.equal(out, original_train(model, spec, theta, data, [0, 1, 2, 3], s, range(3), strategy))
    assert log.opt_state is None


def test_from_config_reads_the_optional_keys_and_refuses_bad_ones():
    cfg = {"train": {"mixing": "model", "lr": 0.001, "batch_size": 100, "local_epochs": 1, "local_steps": None,
                     "optimizer": "momentum", "momentum": 0.5, "l2": 1e-3},
           "topology": {"kind": "ring", "p_edge": 0.5}, "clients": 10}
    s = Schedule.from_config(cfg, seed=0)
    assert s.local_optimizer() == LocalOptimizer("momentum", 0.5, (0.9, 0.999), 1e-8, 1e-3)
    for key, bad, match in [("optimizer", "adamw", "train.optimizer = 'adamw': unknown; valid: sgd, momentum, adam"),
                            ("momentum", 1.0, r"train.momentum = 1.0: valid: a number in \[0, 1\)"),
                            ("l2", -1.0, "train.l2 = -1.0: valid: a number >= 0")]:
        with pytest.raises(ValueError, match=match):
            Schedule.from_config({**cfg, "train": {**cfg["train"], key: bad}}, seed=0)


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_divergence_is_caught_and_located_with_an_optimizer(kind):
    model, spec, theta = setup(2)
    data = toy([30, 30], scale=100.0)
    s = Schedule("model", 1e30, 10, 1, None, "complete", 1.0, 0, 2, experiment="cdfl", optimizer=kind)
    with pytest.raises(Diverged, match=rf"cdfl: diverged in round \d+ \(counting from 0\), local step \d+: .*"
                                       rf"optimizer {kind}; valid: a smaller train.lr"):
        train(model, spec, theta, data, [0, 1], s, range(5), "loop")
