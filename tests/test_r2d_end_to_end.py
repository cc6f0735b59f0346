"""R2D end to end at toy scale: train the SmeLU MLP on the eICU-like stand-in with a checkpoint per epoch, select by
validation error, estimate G and L, forget users, rewind, calibrate sigma (Theorem 3.1, analytic Gaussian) and
publish theta''_K + sigma xi."""

from __future__ import annotations

import pytest
import torch

from unlearning.data import user_synthetic as us
from unlearning.history import CheckpointStore
from unlearning.methods import r2d
from unlearning.models import SmeluMLP
from unlearning.privacy import r2d_noise as rn
from unlearning.train import checkpointed_sgd as cs
from unlearning.train.flat import FlatSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_pipeline_at_toy_scale(tmp_path):
    d = us.user_dataset(0, "eicu-like", users=400, dim=8, ood_users=20, ood_per_user=3)
    X, y = d["x"], d["y"]
    tr, va, te = d["train"], d["val"], d["test"]
    torch.manual_seed(0)
    model = SmeluMLP((8, 32, 16, 2))
    spec = FlatSpec.of(model)
    sched = cs.Schedule(lr0=0.5, gamma=0.9, batch_size=64, seed=0)
    res = cs.train(model, X[tr], y[tr], X[va], y[va], sched, max_epochs=6, directory=tmp_path)
    E = res.selected
    L = cs.estimate_smoothness(model, X[tr], y[tr], batch_size=256, samples=5, seed=0)
    assert res.G > 0 and L > 0
    majority = min(float(y[te].float().mean()), 1 - float(y[te].float().mean()))
    assert cs.error(model, X[te], y[te]) < majority

    users = us.forget_users(d, 8, seed=1)
    Z = us.forget_indices(d, users)
    keep = tr[~torch.isin(tr, Z)]
    m, n, S = len(Z), len(tr), sched.steps_per_epoch(len(tr))
    assert m > 0
    store = CheckpointStore(tmp_path)
    unit = r2d.unit_noise(model, seed=0)
    sigmas = []
    assert E >= 3, res.val_errors  # the selection leaves something to rewind
    for K_ep in range(0, E):
        K, T = rn.epoch_steps(K_ep, E, S)
        sigmas.append(rn.sigma(40, 0.1, K, T, sched.lr(E - 1), L, res.G, m, n))
    assert all(a > b for a, b in zip(sigmas, sigmas[1:]))
    unlearned = r2d.rewind(SmeluMLP((8, 32, 16, 2)), store, X[keep], y[keep], sched, E_sel=E, K_ep=E)
    retrained = SmeluMLP((8, 32, 16, 2))
    cs.load_epoch(store, 0, retrained, spec)
    cs.run_epochs(retrained, X[keep], y[keep], sched, 0, E)
    assert torch.equal(spec.flatten(unlearned), spec.flatten(retrained))
    published = r2d.noised(spec.flatten(unlearned), unit, sigmas[0])
    cs.set_flat(unlearned, spec, published)
    assert 0 <= cs.error(unlearned, X[te], y[te]) <= 1
