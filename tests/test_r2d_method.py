"""R2D unlearning (Mu & Klabjan, Algorithms 2 and 3, Theorem 3.1): retrain equivalence, rewind validation, the
sensitivity bound under the theorem's conditions, one noise vector per seed, the post-hoc checkpoint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from unlearning.history import CheckpointStore
from unlearning.methods import r2d
from unlearning.privacy import r2d_noise as rn
from unlearning.train import checkpointed_sgd as cs
from unlearning.train.flat import FlatSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))


def data(n=100, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 5, generator=g)
    return X, (X[:, 0] - X[:, 2] > 0).long()


def test_rewind_to_theta0_is_bit_identical_to_retraining(tmp_path):
    """Dated note 2: K_ep = E_sel reloads theta_0 and re-runs all E_sel epochs on D' with the same schedule."""
    X, y = data()
    keep = torch.arange(10, 100)
    sched = cs.Schedule(lr0=0.3, gamma=0.9, batch_size=16, seed=4)
    learned = mlp()
    store = CheckpointStore(tmp_path)
    cs.save_epoch(store, 0, learned, FlatSpec.of(learned))
    cs.run_epochs(learned, X, y, sched, 0, 5, store=store)
    unlearned = r2d.rewind(mlp(seed=7), store, X[keep], y[keep], sched, E_sel=5, K_ep=5)
    retrained = mlp()
    cs.run_epochs(retrained, X[keep], y[keep], sched, 0, 5)
    spec = FlatSpec.of(retrained)
    assert torch.equal(spec.flatten(unlearned), spec.flatten(retrained))
    # a partial rewind differs from the retrain, and K_ep = 0 is the learned model itself
    partial = r2d.rewind(mlp(), store, X[keep], y[keep], sched, E_sel=5, K_ep=2)
    assert not torch.equal(spec.flatten(partial), spec.flatten(retrained))
    none = r2d.rewind(mlp(), store, X[keep], y[keep], sched, E_sel=5, K_ep=0)
    assert torch.equal(spec.flatten(none), spec.flatten(learned))


@pytest.mark.parametrize("K_ep, E_sel, name", [(6, 5, "K_ep"), (-1, 5, "K_ep"), (2, 0, "E_sel"), (1.0, 5, "K_ep")])
def test_rewind_is_validated(tmp_path, K_ep, E_sel, name):
    X, y = data()
    with pytest.raises(ValueError, match=f"^{name} .*valid"):
        r2d.rewind(mlp(), CheckpointStore(tmp_path), X, y, cs.Schedule(), E_sel=E_sel, K_ep=K_ep)


def logistic(n=200, d=5, seed=0):
    """||x|| <= 1, labels in {0, 1}: per-sample G = max ||x||, L = max ||x||^2 / 4 (exact)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    X = X / X.norm(dim=1, keepdim=True) * torch.rand(n, 1, generator=g, dtype=torch.float64) ** 0.5
    w = torch.randn(d, generator=g, dtype=torch.float64)
    y = ((X @ w + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)) > 0).double()
    return X, y


def bce(out, target):
    return F.binary_cross_entropy_with_logits(out.squeeze(1), target)


@pytest.mark.parametrize("T, eta_fraction, worst", [(5, 1.0, 0.0776), (20, 0.1, 0.1381)])
def test_sensitivity_bound_holds_under_theorem_3_1(tmp_path, T, eta_fraction, worst):
    """Dated note 3: full-batch GD with a constant eta <= min{1/L, n/(2(n-m)L)} on logistic regression:
    ||theta'_T - theta''_K|| <= 2 m G h(K) / (L n) for every K (Lemmas B.2, B.3). Z is adversarial (unit-norm
    points on the first axis labelled 0, where the retained data say 1), so the bound is approached, not met
    trivially; `worst` is the measured worst ratio (a regression value, 4 digits)."""
    X, y = logistic()
    n, m = len(X), 20
    X[:m] = 0
    X[:m, 0] = 1.0
    y[:m] = 0.0
    y[m:] = (X[m:, 0] > -0.2).double()
    norms = X.norm(dim=1)
    G, L = float(norms.max()), float(norms.max() ** 2 / 4)
    eta = eta_fraction * min(1 / L, n / (2 * (n - m) * L))
    keep = torch.arange(m, n)  # Z = the first m points
    sched = cs.Schedule(lr0=eta, gamma=1.0, batch_size=n, seed=0)

    def linear():
        torch.manual_seed(0)
        return nn.Linear(5, 1, bias=False).double()

    learned = linear()
    spec = FlatSpec.of(learned)
    store = CheckpointStore(tmp_path)
    cs.save_epoch(store, 0, learned, spec)
    cs.run_epochs(learned, X, y, sched, 0, T, loss_fn=bce, store=store)
    retrained = linear()
    cs.run_epochs(retrained, X[keep], y[keep], sched, 0, T, loss_fn=bce)
    target = spec.flatten(retrained)
    ratios = []
    for K in sorted({0, 1, T // 4, T // 2, 3 * T // 4, T - 1}):
        out = r2d.rewind(linear(), store, X[keep], y[keep], sched, E_sel=T, K_ep=K, loss_fn=bce)
        gap = float((spec.flatten(out) - target).norm())
        ratios.append(gap / rn.sensitivity(K, T, eta, L, G, m, n))
    assert max(ratios) < 1, ratios
    assert max(ratios) == pytest.approx(worst, abs=1e-4)


def test_one_noise_vector_per_seed_rescaled():
    m = mlp()
    u = r2d.unit_noise(m, 1)
    assert torch.equal(u, r2d.unit_noise(m, 1)) and not torch.equal(u, r2d.unit_noise(m, 1001))
    assert u.shape == (FlatSpec.of(m).dim,) and abs(float(u.std()) - 1) < 0.2
    theta = FlatSpec.of(m).flatten(m)
    torch.testing.assert_close(r2d.noised(theta, u, 0.3) - theta, 3 * (r2d.noised(theta, u, 0.1) - theta))
    with pytest.raises(ValueError, match="^sigma"):
        r2d.noised(theta, u, -1.0)


def test_posthoc_checkpoint_recovers_theta_t_minus_k(tmp_path):
    """Algorithm 3: on full-batch GD with a constant eta < 1/L, K backward-Euler steps from theta_T recover
    the saved theta_{T-K} to 1e-6."""
    X, y = logistic(seed=1)
    n, T, K = len(X), 30, 10
    L = float(X.norm(dim=1).max() ** 2 / 4)
    eta = 0.5 / L
    sched = cs.Schedule(lr0=eta, gamma=1.0, batch_size=n)
    torch.manual_seed(0)
    model = nn.Linear(5, 1, bias=False).double()
    spec = FlatSpec.of(model)
    store = CheckpointStore(tmp_path)
    cs.run_epochs(model, X, y, sched, 0, T, loss_fn=bce, store=store)
    got = r2d.posthoc_checkpoint(model, X, y, eta, K, loss_fn=bce)
    want = store.load(T - K)[0][0]
    assert float((got - want).norm()) < 1e-6
    assert torch.equal(spec.flatten(model), store.load(T)[0][0])  # the model is left at theta_T
