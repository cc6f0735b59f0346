"""The token random walk (train/random_walk.py): determinism, routing frequencies, Adam = torch.optim.Adam."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from unlearning.train import random_walk as rw


def _clients(n=4, per=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [rw.TensorClient(torch.randn(per, 6, generator=g), torch.randint(0, 3, (per,), generator=g))
            for _ in range(n)]


def _model(seed=0, bn=True):
    torch.manual_seed(seed)
    norm = nn.BatchNorm1d(8) if bn else nn.Identity()
    return nn.Sequential(nn.Linear(6, 8), norm, nn.ReLU(), nn.Linear(8, 3))


def _run(seed):
    token = rw.Token(_model(), lr=0.01)
    hops = rw.walk(token, _clients(), 6, rw.uniform_neighbour(4), rw.Streams.from_seed(seed), batch_size=16)
    return token, hops


def test_walk_is_deterministic_and_seed_dependent():
    a, ha = _run(3)
    b, hb = _run(3)
    c, hc = _run(4)
    assert [h.node for h in ha] == [h.node for h in hb]
    assert torch.equal(a.theta(), b.theta())
    assert torch.equal(a.model[1].running_mean, b.model[1].running_mean)  # BN buffers travel with the token
    assert not torch.equal(a.theta(), c.theta())


def test_uniform_neighbour_has_no_self_loops_and_uniform_frequencies():
    rule, rng = rw.uniform_neighbour(5), np.random.default_rng(0)
    node, counts = rule(None, rng), np.zeros(5)
    for _ in range(20000):
        nxt = rule(node, rng)
        assert nxt != node
        counts[nxt] += 1
        node = nxt
    assert np.allclose(counts / counts.sum(), 0.2, atol=0.01)


def test_a_p_routing_rule_gives_its_visit_frequencies():
    """A rule 'to u=2 w.p. p, else uniform over the others' plugged into the walk: u's share ~ p."""
    p, u, n = 0.3, 2, 5

    def rule(current, rng):
        if rng.random() < p:
            return u
        other = int(rng.integers(n - 1))
        return other + (other >= u)

    token = rw.Token(nn.Linear(6, 3), lr=0.0)  # lr 0: only the routing matters
    clients = [rw.TensorClient(torch.zeros(1, 6), torch.zeros(1, dtype=torch.long))] * n
    hops = rw.walk(token, clients, 4000, rule, rw.Streams.from_seed(1), batch_size=1)
    visits = np.bincount([h.node for h in hops], minlength=n) / len(hops)
    assert visits[u] == pytest.approx(p, abs=0.025)
    assert np.allclose(np.delete(visits, u), (1 - p) / (n - 1), atol=0.025)


def test_adam_steps_equal_torch_adam_on_the_same_batches():
    """Without BN: a Linear bias in front of BN has a gradient that is zero up to float noise, which Adam's
    normalisation turns into +-lr steps in either implementation."""
    clients = _clients(1, per=50)
    token = rw.Token(_model(5, bn=False), lr=0.005)
    ref = _model(5, bn=False)
    opt = torch.optim.Adam(ref.parameters(), lr=0.005, betas=(0.9, 0.999), eps=1e-8)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    token.local_epochs(clients[0], 16, rng_a, epochs=2)
    ref.train()
    for _ in range(2):
        for idx in rw.minibatches(50, 16, rng_b):
            x, y = clients[0].batch(idx)
            opt.zero_grad()
            nn.functional.cross_entropy(ref(x), y).backward()
            opt.step()
    assert torch.allclose(token.theta(), nn.utils.parameters_to_vector(ref.parameters()), atol=1e-6)
    assert int(token.state.steps[0]) == 8  # 4 batches (the last partial kept) x 2 epochs


def test_minibatches_cover_each_index_once():
    batches = rw.minibatches(70, 64, np.random.default_rng(0))
    assert [len(b) for b in batches] == [64, 6]
    assert sorted(np.concatenate(batches).tolist()) == list(range(70))


def test_bad_input():
    with pytest.raises(ValueError, match="N \\(clients\\) = 1: valid"):
        rw.uniform_neighbour(1)
    with pytest.raises(ValueError, match="hops = -1: valid"):
        rw.walk(rw.Token(nn.Linear(2, 2), 0.1), [], -1, rw.uniform_neighbour(2), rw.Streams.from_seed(0))
