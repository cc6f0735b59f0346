"""Checkpointed shuffled SGD (Mu & Klabjan, Algorithm 1 and Section 4.2): schedule, checkpoints, resumption,
model selection, the G and L estimators."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from unlearning.history import CheckpointStore
from unlearning.train import checkpointed_sgd as cs
from unlearning.train.flat import FlatSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def data(n=120, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * torch.randn(n, generator=g) > 0).long()
    return X, y


def model(d=6, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 2))


def test_schedule_matches_table_4():
    s = cs.Schedule(lr0=0.1, gamma=0.9, batch_size=512)
    assert s.lr(51) == pytest.approx(4.638e-4, rel=1e-4) and s.lr(81) == pytest.approx(1.966e-5, rel=1e-3)
    assert s.steps_per_epoch(94449) == 185 and cs.Schedule(batch_size=256).steps_per_epoch(32000) == 125
    assert torch.equal(s.permutation(50, 3), s.permutation(50, 3)) and not torch.equal(s.permutation(50, 3),
                                                                                      s.permutation(50, 4))


def test_one_epoch_equals_torch_sgd():
    X, y = data()
    sched = cs.Schedule(lr0=0.05, gamma=0.9, batch_size=32, seed=3)
    a, b = model(), model()
    cs.run_epochs(a, X, y, sched, 2, 3)
    opt = torch.optim.SGD(b.parameters(), lr=sched.lr(2), momentum=0, weight_decay=0)
    for batch in torch.split(sched.permutation(len(X), 2), 32):
        opt.zero_grad()
        F.cross_entropy(b(X[batch]), y[batch]).backward()
        opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)


def test_a_dropped_sample_leaves_every_other_minibatch_as_it_was():
    X, y = data()
    sched = cs.Schedule(lr0=0.05, gamma=0.9, batch_size=32, seed=3)
    a, b = model(), model()
    cs.run_epochs(a, X, y, sched, 2, 3, drop=7)
    opt = torch.optim.SGD(b.parameters(), lr=sched.lr(2))
    for batch in torch.split(sched.permutation(len(X), 2), 32):  # the full data's batches, 7 left out of its own
        opt.zero_grad()
        F.cross_entropy(b(X[batch[batch != 7]]), y[batch[batch != 7]]).backward()
        opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)


def test_train_checkpoints_selects_and_resumes(tmp_path):
    X, y = data()
    Xv, yv = data(60, seed=1)
    sched = cs.Schedule(lr0=0.5, gamma=0.9, batch_size=32, seed=1)
    m = model()
    spec = FlatSpec.of(m)
    theta0 = spec.flatten(m).clone()
    res = cs.train(m, X, y, Xv, yv, sched, 6, tmp_path)
    store = CheckpointStore(tmp_path)
    assert store.rounds() == list(range(7))
    assert torch.equal(store.load(0)[0][0], theta0)
    assert res.selected == 1 + min(range(6), key=lambda i: (res.val_errors[i], i))
    assert torch.equal(spec.flatten(m), store.load(res.selected)[0][0])
    assert res.G == max(res.grad_norms) and len(res.epoch_seconds) == 6
    # resuming at epoch 2 replays epochs 2..5 bit for bit
    r = model(seed=9)
    cs.load_epoch(store, 2, r, spec)
    cs.run_epochs(r, X, y, sched, 2, 6)
    assert torch.equal(spec.flatten(r), store.load(6)[0][0])


def test_g_is_the_largest_minibatch_gradient_norm():
    X, y = data()
    m = model()
    sched = cs.Schedule(lr0=0.1, gamma=1.0, batch_size=1000)  # one full batch per epoch
    g = cs.full_gradient(m, X, y, 1000)
    norms = cs.run_epochs(m, X, y, sched, 0, 1)
    assert norms[0] == pytest.approx(float(g.norm()), rel=1e-5)


def test_smoothness_estimate_on_a_quadratic():
    """Least squares: the Hessian is 2 X^T X / n, so every ratio lies in [lambda_min, lambda_max]."""
    X, _ = data()
    t = X @ torch.arange(1.0, 7.0)
    m = nn.Linear(6, 1, bias=False).double()
    Xd = X.double()

    def mse(out, target):
        return ((out.squeeze(1) - target) ** 2).mean()

    L = cs.estimate_smoothness(m, Xd, t.double(), batch_size=50, samples=20, std=0.01, seed=0, loss_fn=mse)
    eig = torch.linalg.eigvalsh(2 * Xd.T @ Xd / len(X))
    assert float(eig[0]) - 1e-9 <= L <= float(eig[-1]) + 1e-9


@pytest.mark.parametrize("kwargs, name", [({"lr0": 0}, "lr0"), ({"gamma": 1.5}, "gamma"), ({"batch_size": 0},
                                                                                        "batch_size")])
def test_bad_schedule(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} = .*valid"):
        cs.Schedule(**kwargs)


def test_missing_checkpoint_names_epoch(tmp_path):
    m = model()
    with pytest.raises(ValueError, match="^epoch = 3: no checkpoint"):
        cs.load_epoch(CheckpointStore(tmp_path), 3, m, FlatSpec.of(m))
