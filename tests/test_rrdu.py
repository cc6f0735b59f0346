"""RR-DU (Alg. 4, spec 2.2-2.4) on a tiny model: routing extremes, projection, seeded noise, sgd_literal."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from unlearning.methods import rrdu
from unlearning.train import random_walk as rw

N, U = 4, 0


def _setup(seed=0):
    g = torch.Generator().manual_seed(seed)
    clients = [rw.TensorClient(torch.randn(30, 5, generator=g), torch.randint(0, 3, (30,), generator=g))
               for _ in range(N)]
    forget = rw.TensorClient(torch.randn(10, 5, generator=g), torch.zeros(10, dtype=torch.long))
    torch.manual_seed(seed)
    token = rw.Token(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)), lr=0.05)
    return token, clients, forget


def _run(config, seed=0, stream=1):
    token, clients, forget = _setup(seed)
    hops = rrdu.unlearn(token, clients, forget, 40, config, rw.Streams.from_seed(stream))
    return token, hops


def test_p0_never_visits_u_and_p1_always_does():
    _, hops = _run(rrdu.RRDUConfig(u=U, p=0.0, T_u=30, s=2, batch_size=8, sigma=0.0))
    assert not any(h.at_u or h.node == U for h in hops)
    _, hops = _run(rrdu.RRDUConfig(u=U, p=1.0, T_u=12, s=2, batch_size=8, sigma=0.5, rho=1.0))
    assert all(h.at_u and h.node == U for h in hops)


def test_restart_rule_frequencies():
    rule, rng = rrdu.restart_rule(5, 2, 0.3), np.random.default_rng(0)
    visits = np.bincount([rule(None, rng) for _ in range(20000)], minlength=5) / 20000
    assert visits[2] == pytest.approx(0.3, abs=0.01)
    assert np.allclose(np.delete(visits, 2), 0.7 / 4, atol=0.01)


@pytest.mark.parametrize("semantics", ["adam", "sgd_literal"])
def test_projection_keeps_the_distance_within_rho(semantics):
    token, clients, forget = _setup()
    ref = token.theta()
    config = rrdu.RRDUConfig(u=U, p=1.0, T_u=8, batch_size=8, sigma=50.0, rho=0.3, semantics=semantics)
    hops = rrdu.unlearn(token, clients, forget, 40, config, rw.Streams.from_seed(2))
    assert any(h.projected for h in hops) and all(h.dist_after <= 0.3 + 1e-5 for h in hops)
    assert float(torch.linalg.vector_norm(token.theta() - ref)) <= 0.3 + 1e-5


def test_rho_none_does_not_project():
    _, hops = _run(rrdu.RRDUConfig(u=U, p=1.0, T_u=6, batch_size=8, sigma=50.0, rho=None))
    assert not any(h.projected for h in hops) and hops[-1].dist_after > 1.0


def test_noise_is_seeded_and_reproducible():
    config = rrdu.RRDUConfig(u=U, p=0.5, T_u=10, s=2, batch_size=8, sigma=1.0, rho=5.0)
    a, ha = _run(config, stream=3)
    b, hb = _run(config, stream=3)
    c, _ = _run(config, stream=4)
    assert torch.equal(a.theta(), b.theta()) and ha == hb
    assert not torch.equal(a.theta(), c.theta())


def test_sigma_changes_only_the_noise_not_the_routing():
    base = dict(u=U, p=0.5, T_u=10, s=2, batch_size=8, rho=None)
    _, ha = _run(rrdu.RRDUConfig(**base, sigma=0.1))
    _, hb = _run(rrdu.RRDUConfig(**base, sigma=2.0))
    assert [h.node for h in ha] == [h.node for h in hb]


@pytest.mark.parametrize("clip", [True, False])
def test_sgd_literal_step_equals_the_formula(clip):
    """theta <- Pi(theta + eta ((m/n_u) g + sigma xi)), Adam's state untouched; g = clip_L(grad) under `clip`
    (Table 15's additional clipping, the certified run), else the raw gradient (the baseline)."""
    token, clients, forget = _setup()
    m, n_u, L, sigma, eta = len(forget), 40, 0.05, 0.7, token.lr
    config = rrdu.RRDUConfig(u=U, p=1.0, T_u=1, batch_size=64, L=L, sigma=sigma, rho=None,
                             semantics="sgd_literal", clip=clip)
    theta0 = token.theta()
    # the expected step, from the same streams: the whole forget set is the batch (64 > m), the first normal draw
    streams = rw.Streams.from_seed(5)
    g, _ = token.grad(forget.x, forget.y)
    raw = float(g.norm())
    g = g * min(1.0, L / raw) if clip else g
    xi = torch.randn(token.dim, generator=rw.Streams.from_seed(5).noise)
    expected = theta0 + eta * ((m / n_u) * g + sigma * xi)
    token.set_theta(theta0)
    hops = rrdu.unlearn(token, clients, forget, n_u, config, streams)
    assert hops[0].at_u and hops[0].grad_norm == pytest.approx(raw) and raw > L  # the clip acts only under `clip`
    assert torch.allclose(token.theta(), expected, atol=1e-6)
    assert int(token.state.steps[0]) == 0
    step = hops[0].ustep  # the anatomy: eta g_u and eta sigma xi, their sum, no projection (rho None)
    assert step.ascent_norm == pytest.approx(eta * (m / n_u) * float(g.norm()), rel=1e-5)
    assert step.noise_norm == pytest.approx(eta * sigma * float(xi.norm()), rel=1e-5)
    assert step.step_norm == pytest.approx(float((expected - theta0).norm()), rel=1e-5) and not step.projected
    assert config.certified == clip and (config.certificate(N).label == rrdu.rrdu_noise.CERTIFIED) == clip


def _trained(seed: int = 0):
    """A tiny poisoned walk: client u holds its own data and the forget set (a shifted cluster relabelled 0); the
    token trained by Network-SGD with Adam, whose state the unlearning inherits (as the experiments do)."""
    g = torch.Generator().manual_seed(seed)
    clients = [rw.TensorClient(torch.randn(60, 5, generator=g), torch.randint(0, 3, (60,), generator=g))
               for _ in range(N)]
    forget = rw.TensorClient(torch.randn(10, 5, generator=g) + 2.0, torch.zeros(10, dtype=torch.long))
    clients[U] = rw.TensorClient(torch.cat([clients[U].x, forget.x]), torch.cat([clients[U].y, forget.y]))
    torch.manual_seed(seed)
    token = rw.Token(nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3)), lr=0.01)
    rw.walk(token, clients, 40, rw.uniform_neighbour(N), rw.Streams.from_seed(9), batch_size=8)
    return token, clients, forget


@pytest.mark.parametrize("clip", [False, True])
def test_baseline_u_steps_raise_the_forget_loss_under_the_carried_adam_state(clip):
    """Issue 34: with the optimizer state carried from training, noise and projection off, five baseline u-steps
    raise the forget set's loss. Clipping the forget gradient to L first (spec A7 before its note of 2026-11-26; L
    far below the gradient's norm, as at paper scale: 0.5 against 8-18) leaves the ascent to Adam's carried
    momentum, which keeps descending: the loss falls, and the step's cosine with the ascent direction is negative."""
    token, clients, forget = _trained()

    def loss() -> float:
        with torch.no_grad():
            return float(nn.functional.cross_entropy(token.model(forget.x), forget.y))

    before = loss()
    config = rrdu.RRDUConfig(u=U, p=1.0, T_u=5, batch_size=64, L=0.05, sigma=0.0, rho=None, clip=clip)
    hops = rrdu.unlearn(token, clients, forget, len(clients[U]), config, rw.Streams.from_seed(1))
    assert all(h.grad_norm > 10 * config.L for h in hops)
    if clip:
        assert loss() < before and all(h.ustep.cosine < 0 for h in hops)
    else:
        assert loss() > before + 0.005 and hops[-1].ustep.cosine > 0


def test_descent_steps_per_hop():
    token, hops = _run(rrdu.RRDUConfig(u=U, p=0.0, T_u=3, s=2, batch_size=8, sigma=0.0, descent_steps=3))
    assert int(token.state.steps[0]) == 9 and len(hops) == 3
    # spec A1's sensitivity reading: a local epoch of minibatch steps per non-u hop (30 samples, batch 8: 4 steps)
    token, hops = _run(rrdu.RRDUConfig(u=U, p=0.0, T_u=3, s=2, batch_size=8, sigma=0.0, descent_steps="epoch"))
    assert int(token.state.steps[0]) == 12 and all(h.grad_norm is None for h in hops)


def test_adam_semantics_ascends_the_forget_loss():
    token, clients, forget = _setup()
    def loss():
        with torch.no_grad():
            return float(nn.functional.cross_entropy(token.model(forget.x), forget.y))

    loss0 = loss()
    rrdu.unlearn(token, clients, forget, 40,
                 rrdu.RRDUConfig(u=U, p=1.0, T_u=10, batch_size=64, sigma=0.0, rho=None), rw.Streams.from_seed(0))
    assert loss() > loss0 + 0.1


def test_closed_form_sigma_and_certificate():
    config = rrdu.RRDUConfig(L=0.5)
    assert config.noise(10) == pytest.approx(2.5744, abs=1e-4)
    cert = config.certificate(10)
    assert cert.a_classic == pytest.approx(1.00, abs=0.03)
    assert rrdu.RRDUConfig(p=0.0).certificate(10) is None


@pytest.mark.parametrize("kwargs, name", [({"p": 1.5}, "p"), ({"rho": 0.0}, "rho"), ({"L": 0.0}, "L"),
                                          ({"mode": "x"}, "mode"), ({"semantics": "x"}, "semantics"),
                                          ({"sigma": -1.0}, "sigma"), ({"s": 0}, "s"),
                                          ({"descent_steps": 0}, "descent_steps"),
                                          ({"descent_steps": "epochs"}, "descent_steps")])
def test_bad_config(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} = .*valid"):
        rrdu.RRDUConfig(**kwargs)


def test_adam_fresh_restarts_the_optimizer_at_every_hop():
    """Spec 2.4(c): under adam_fresh every unlearning hop starts from a zero Adam state, so after the walk the
    state holds exactly one hop's steps (s = 1 descent step elsewhere, one ascent step at u); under adam the
    state carries every step. The first step of a fresh Adam moves every coordinate by about lr (sign-like)."""
    for semantics, steps in (("adam", 12), ("adam_fresh", 1)):
        token, clients, forget = _setup()
        rrdu.unlearn(token, clients, forget, 40, rrdu.RRDUConfig(u=U, p=0.5, T_u=12, s=2, batch_size=8, sigma=0.0,
                                                                 rho=None, semantics=semantics),
                     rw.Streams.from_seed(3))
        assert token.fresh_per_hop == (semantics == "adam_fresh")
        assert int(token.state.steps[0]) == steps
    token, clients, _ = _setup()
    token.fresh_per_hop = True
    before = token.theta()
    token.begin_hop()
    token.step(token.grad(clients[1].x, clients[1].y)[0])
    moved = (token.theta() - before).abs()
    assert float(moved.max()) == pytest.approx(token.lr, rel=1e-3)
