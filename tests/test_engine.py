"""Decentralized SGD engine: both strategies agree, and each update matches its formula computed
independently with an ordinary nn.Module, autograd and torch.optim.SGD. The computations run on the test
device (`--device`); minibatch orders come from CPU generators on every device, so they are the same."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from unlearning.experiment import load_setup
from unlearning.models import build_model
from unlearning.seeding import generator
from unlearning.topology import metropolis_hastings, sample_graph
from unlearning.train.autodiff import grad
from unlearning.train.dsgd import (
    ClientData,
    client_batches,
    local_pseudo_gradients,
    make_loss,
    mix,
    resolve_strategy,
    round_batches,
    train,
)
from unlearning.train.flat import FlatSpec


def toy_clients(sizes, shape=(1, 28, 28), seed=0, device="cpu"):
    """Features on `device`; index lists on the CPU, where the minibatch orders are drawn."""
    gen = torch.Generator().manual_seed(seed)
    n = sum(sizes)
    x, y = torch.randn(n, *shape, generator=gen), torch.randint(0, 10, (n,), generator=gen)
    bounds = torch.tensor([0, *sizes]).cumsum(0)
    indices = [torch.arange(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    return ClientData(x.to(device), y.to(device), indices, [torch.ones(s, dtype=torch.bool) for s in sizes])


def stacked(model, m):
    """Stacked parameters on the model's device, drawn on the CPU."""
    spec = FlatSpec.of(model)
    gen = torch.Generator().manual_seed(1)
    base = spec.flatten(model)
    return spec, base + 0.01 * torch.randn(m, spec.dim, generator=gen).to(base.device)


def padded(data, clients, batch, steps=None, epochs=1):
    from unlearning.train.dsgd import Schedule

    sched = Schedule("model", 0.1, batch, None if steps else epochs, steps, "complete", 1.0, 0, len(clients))
    return round_batches(data, clients, sched, 0)


@pytest.mark.parametrize("name", ["mlp", "cnn", "logreg"])
def test_vmap_and_loop_strategies_agree_with_unequal_clients(name, device, no_tf32):
    torch.manual_seed(0)
    model = build_model(name, (1, 28, 28), 10, mlp_hidden=32).to(device)
    data = toy_clients([10, 37, 64, 0], device=device)
    spec, theta = stacked(model, 4)
    idx, w = padded(data, [0, 1, 2, 3], batch=16)
    grad_fn = grad(make_loss(model, spec))
    by_vmap = local_pseudo_gradients(theta, data, idx, w, 0.05, grad_fn, "vmap")
    by_loop = local_pseudo_gradients(theta, data, idx, w, 0.05, grad_fn, "loop")
    torch.testing.assert_close(by_vmap, by_loop, atol=1e-5, rtol=1e-4)
    assert torch.equal(by_loop[3], torch.zeros(spec.dim, device=device))  # no data: no update


def test_padding_processes_exactly_each_clients_samples():
    data = toy_clients([10, 37, 64])
    idx, w = padded(data, [0, 1, 2], batch=16, epochs=2)
    assert w.sum(dim=(1, 2)).tolist() == [20, 74, 128]
    for c in range(3):
        seen = idx[c][w[c].bool()]
        assert torch.equal(seen.sort().values, data.indices[c].repeat(2).sort().values)


def test_pseudo_gradient_is_local_sgd_with_torch_optim(device, no_tf32):
    """(theta - phi)/lr after local steps equals plain SGD with nn.Module + torch.optim.SGD."""
    torch.manual_seed(0)
    model = build_model("mlp", (1, 28, 28), 10, mlp_hidden=32).to(device)
    data = toy_clients([50, 50], device=device)
    spec, theta = stacked(model, 2)
    idx, w = padded(data, [0, 1], batch=16, steps=3)
    pseudo = local_pseudo_gradients(theta, data, idx, w, 0.1, grad(make_loss(model, spec)), "vmap")
    for c in range(2):
        ref = copy.deepcopy(model)
        with torch.no_grad():
            for p, v in zip(ref.parameters(), spec.unflatten(theta[c]).values()):
                p.copy_(v)
        opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        for s in range(3):
            opt.zero_grad()
            rows = idx[c, s].to(device)
            F.cross_entropy(ref(data.x[rows]), data.y[rows]).backward()
            opt.step()
        phi = spec.flatten(ref)
        torch.testing.assert_close(pseudo[c], (theta[c] - phi) / 0.1, atol=1e-4, rtol=1e-4)


def test_mixing_formulas(device, no_tf32):
    gen = torch.Generator().manual_seed(0)
    theta, g = torch.randn(5, 7, generator=gen).to(device), torch.randn(5, 7, generator=gen).to(device)
    w = metropolis_hastings(sample_graph("erdos_renyi", 5, 0.6, 0, "t")).float().to(device)
    torch.testing.assert_close(mix(theta, g, w, 0.1, "model"), w @ theta - 0.1 * g)
    torch.testing.assert_close(mix(theta, g, w, 0.1, "gradient"), theta - 0.1 * w @ g)
    # doubly stochastic W: the average model moves by the average gradient (PDUDT spec 2.1)
    torch.testing.assert_close(mix(theta, g, w, 0.1, "gradient").mean(0), theta.mean(0) - 0.1 * g.mean(0))
    with pytest.raises(ValueError, match="valid: model, gradient"):
        mix(theta, g, w, 0.1, "gossip")


def test_forgotten_samples_are_dropped_from_the_same_order():
    indices = torch.arange(100, 150)
    keep = torch.ones(50, dtype=torch.bool)
    keep[::3] = False
    full = torch.cat(client_batches(indices, torch.ones(50, dtype=torch.bool), generator(0, "b"), 8, 1, None))
    kept = torch.cat(client_batches(indices, keep, generator(0, "b"), 8, 1, None))
    assert torch.equal(kept, full[torch.isin(full, indices[keep])])
    assert client_batches(indices, torch.zeros(50, dtype=torch.bool), generator(0, "b"), 8, 1, None) == []


def test_fixed_local_steps_cycle_through_the_data():
    batches = client_batches(torch.arange(10), torch.ones(10, dtype=torch.bool), generator(0, "s"), 4, None, 6)
    assert [len(b) for b in batches] == [4] * 6
    assert set(torch.cat(batches).tolist()) == set(range(10))


def test_auto_strategy():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_strategy("auto", "cnn", cpu) == "loop"
    assert resolve_strategy("auto", "mlp", cpu) == "vmap"
    assert resolve_strategy("auto", "cnn", cuda) == "vmap"
    assert resolve_strategy("loop", "mlp", cuda) == "loop"


def test_training_is_deterministic_and_gradient_mixing_matches_manual_round(tiny, no_tf32):
    """Bit-identical re-runs on CPU and, under deterministic algorithms (load_setup), on CUDA."""
    params, features, split = tiny
    params = copy.deepcopy(params)
    params["spine"]["train"].update(mixing="gradient", local_epochs=None, local_steps=1)
    setup = load_setup(params, "spine", features, split)
    clients = [0, 1, 2, 3]
    theta0 = setup.theta0.expand(4, -1).clone()
    sched = setup.schedule()
    one, _ = train(setup.model, setup.spec, theta0, setup.data, clients, sched, range(1), "loop")
    again, _ = train(setup.model, setup.spec, theta0, setup.data, clients, sched, range(1), "loop")
    assert torch.equal(one, again)
    # manual: theta^1_i = theta^0 - lr sum_j W_ij grad F_j(theta^0; batch_j)   (PDUDT Eq. 2)
    from unlearning.topology import graph_for_round

    w = metropolis_hastings(graph_for_round(sched.topology, 4, sched.p_edge, sched.seed, 0,
                                            without=sched.keep_connected_without))
    idx, _ = round_batches(setup.data, clients, sched, 0)
    grads = []
    for c in clients:
        ref = copy.deepcopy(setup.model)
        ref.zero_grad()
        rows = idx[c, 0].to(setup.device)
        F.cross_entropy(ref(setup.data.x[rows]), setup.data.y[rows]).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in ref.parameters()]))
    assert one.device.type == setup.device.type == theta0.device.type
    expected = theta0 - sched.lr * w.float().to(setup.device) @ torch.stack(grads)
    torch.testing.assert_close(one, expected, atol=1e-6, rtol=1e-5)


def test_public_start_is_deterministic_and_moves_theta0(tiny):
    """init.kind public: theta^0 is the seeded initialisation trained on P, the same in every step that loads the
    experiment; a split without P is refused with the file named."""
    import copy

    from unlearning.experiments.spine import steps

    params, features, split = tiny
    params = copy.deepcopy(params)
    params["pdudt"]["init"] = {"kind": "public", "public_fraction": 0.25, "epochs": 3}
    public_split = split.replace("split.safetensors", "split_public.safetensors")
    steps.step_split(params, "pdudt_synthetic", features, public_split)
    first, second = (load_setup(params, "pdudt_synthetic", features, public_split) for _ in range(2))
    assert torch.equal(first.theta0, second.theta0)
    random = copy.deepcopy(params)
    random["pdudt"]["init"]["kind"] = "random"
    assert not torch.equal(first.theta0.cpu(), load_setup(random, "pdudt_synthetic", features,
                                                           public_split).theta0.cpu())
    with pytest.raises(ValueError, match="no public.indices"):
        load_setup(params, "pdudt_synthetic", features, split)
