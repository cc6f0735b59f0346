"""R2D's experiment pieces: the baselines' noise and methods, the MIA, the Fashion-MNIST user stand-in, the real-data
loaders on tiny fake files, and the parameter checks (bad input stops with one line naming the key)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from conftest import ROOT
from unlearning.config import ParamsError, check_params
from unlearning.data import r2d_real
from unlearning.data.availability import user_data_missing_reason
from unlearning.data.user_images import user_image_dataset
from unlearning.evaluate.attacks.logit_loss import LogitLossAttack, features
from unlearning.experiments.r2d import steps
from unlearning.methods import r2d_baselines as rb
from unlearning.models import LogisticRegression, SmeluMLP
from unlearning.privacy import r2d_baselines as rbn
from unlearning.train.flat import FlatSpec

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def shipped() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


# ---------------------------------------------------------------------------------------------- baselines' noise

def test_cns_sensitivity_at_the_papers_eicu_constants():
    # the authors' compute_noise_cns at Table 4's eICU L, G, d with R = 10, lam = 2000, M = 1, rho = 0.1: ~191.5
    assert rbn.cns_sensitivity(10.0, 0.14394, 1.70994, 2_172_034) == pytest.approx(191.4745, abs=1e-3)


def test_hf_bound_is_finite_and_grows_with_m():
    b1 = rbn.hf_sensitivity(0.1, 5.0, 0.995, 0.02, n=94449, batch=512, epochs=15, m=100)
    b2 = rbn.hf_sensitivity(0.1, 5.0, 0.995, 0.02, n=94449, batch=512, epochs=15, m=900)
    assert 0 < b1 <= b2 < 1
    with pytest.raises(ValueError, match="rho"):
        rbn.hf_sensitivity(0.1, 5.0, 0.995, 1e6, n=94449, batch=512, epochs=15, m=100)


# ---------------------------------------------------------------------------------------------- baselines

def _toy(n=60, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    y = (X[:, 0] + 0.3 * torch.randn(n, generator=g) > 0).long()
    return X, y


def test_hf_sum_of_approximators_equals_the_per_sample_ones():
    """The recursion is linear in a_i, so keeping the sum is exact for the sum (the quick scale's shortcut)."""
    X, y = _toy()
    forget = torch.tensor([3, 17, 40])
    out = []
    for per_sample in (True, False):
        torch.manual_seed(0)
        model = SmeluMLP((5, 8, 2))
        out.append(rb.train_hf(model, X, y, forget, 0.1, 0.995, 5.0, 1e-6, 16, 3, seed=1, per_sample=per_sample))
    assert torch.equal(out[0].theta, out[1].theta)
    assert torch.allclose(out[0].approximator, out[1].approximator, atol=1e-6)
    assert out[0].approximator.norm() > 0 and out[0].steps == 3 * 4


def test_hf_timed_per_sample_steps_leave_the_sum_run_unchanged():
    """Timing the paper's per-sample recursion beside the sum (for the extrapolated learning time) changes no
    number of the run, and reports the time per step over the steps asked for."""
    X, y = _toy()
    forget = torch.tensor([3, 17, 40])
    out = []
    for timed in (0, 2):
        torch.manual_seed(0)
        model = SmeluMLP((5, 8, 2))
        out.append(rb.train_hf(model, X, y, forget, 0.1, 0.995, 5.0, 1e-6, 16, 3, seed=1, per_sample=False,
                               timed_per_sample_steps=timed))
    assert torch.equal(out[0].theta, out[1].theta) and torch.equal(out[0].approximator, out[1].approximator)
    assert out[0].extra == {} and out[1].extra["per_sample_timed_steps"] == 2
    assert out[1].extra["per_sample_step_s"] > 0


def test_hf_moves_towards_the_retrain_on_a_convex_model():
    """theta_T + sum a_i is closer than theta_T to the model trained on the same batches without Z."""
    X, y = _toy(n=64)
    forget = torch.tensor([1, 2, 5, 9])
    torch.manual_seed(0)
    model = LogisticRegression(5, 2)
    init = FlatSpec.of(model).flatten(model).clone()
    hf = rb.train_hf(model, X, y, forget, 0.5, 0.995, 100.0, 0.0, 16, 4, seed=2)
    # the retrain: the same permutations, the forgotten samples dropped from each batch, same 1/|B| weighting
    keep = torch.ones(len(y), dtype=torch.bool)
    keep[forget] = False
    spec = FlatSpec.of(model)
    theta, s = init.clone(), 0
    from unlearning.seeding import generator
    from unlearning.train.checkpointed_sgd import set_flat
    for epoch in range(4):
        order = torch.randperm(len(y), generator=generator(2, "hf", "epoch", epoch))
        for idx in torch.split(order, 16):
            set_flat(model, spec, theta)
            kept = idx[keep[idx]]
            loss = torch.nn.functional.cross_entropy(model(X[kept]), y[kept], reduction="sum") / len(idx)
            grad = torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, list(model.parameters()))])
            theta = theta - 0.5 * 0.995**s * grad
            s += 1
    before = float((hf.theta - theta).norm())
    after = float((hf.theta + hf.approximator - theta).norm())
    assert after < 0.5 * before


def test_cns_training_stays_in_the_ball_and_lissa_is_finite():
    X, y = _toy(n=80)
    torch.manual_seed(0)
    model = SmeluMLP((5, 16, 2))
    tr = rb.train_cns(model, X, y, X[:20], y[:20], lr=0.05, wd=5e-4, batch=16, epochs=3, R=1.0, seed=0)
    assert float(tr.theta.norm()) <= 1.0 + 1e-5 and 1 <= tr.selected <= 3
    step = rb.lissa_newton_step(model, X, y, lam=5e-4, gamma=200.0, s1=2, s2=5, bs=10, scale=50000.0, seed=0)
    assert step.shape == tr.theta.shape and bool(torch.isfinite(step).all())
    rho = rb.hf_rho(model, X[:16], y[:16], clip=5.0, l2=1e-6, iterations=50)
    assert np.isfinite(rho)


def test_regulariser_curvature_is_the_largest_eigenvalue_of_its_hessian():
    g = torch.Generator().manual_seed(0)
    tensors = [torch.randn(3, 2, generator=g), torch.randn(2, generator=g) * 0.05, torch.randn(1, generator=g)]
    sizes = [t.numel() for t in tensors]

    def reg(flat):
        return 7.0 * sum(torch.linalg.vector_norm(part) for part in torch.split(flat, sizes))

    hessian = torch.autograd.functional.hessian(reg, torch.cat([t.reshape(-1) for t in tensors]).double())
    largest = float(torch.linalg.eigvalsh(hessian).max())
    assert rb.regulariser_curvature(tensors, 7.0) == pytest.approx(largest, rel=1e-5)


def test_lissa_diverges_past_twice_the_regulariser_curvature_and_contracts_at_it():
    """CNS's recursion on a model with a small bias: the paper's fixed scale below half the regulariser's
    curvature diverges (the recorded fmnist_users failure); the stable scale (the curvature itself) is finite."""
    X, y = _toy(n=80)
    torch.manual_seed(0)
    model = SmeluMLP((5, 16, 2))
    with torch.no_grad():
        model.net[-1].bias.fill_(0.01)
    curvature = rb.regulariser_curvature(list(model.parameters()), 5e-4 + 200.0)
    with pytest.raises(rb.Diverged, match="CNS LiSSA estimate: not finite"):
        rb.lissa_newton_step(model, X, y, lam=5e-4, gamma=200.0, s1=1, s2=1000, bs=10, scale=curvature / 3, seed=0)
    step = rb.lissa_newton_step(model, X, y, lam=5e-4, gamma=200.0, s1=1, s2=1000, bs=10, scale=curvature, seed=0)
    assert bool(torch.isfinite(step).all())


# ---------------------------------------------------------------------------------------------- MIA

def test_mia_is_chance_on_one_distribution_and_high_when_separated():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 2, (400,), generator=g)
    same = torch.randn(400, 2, generator=g)
    attack = LogitLossAttack(seed=0, n_splits=5, n_repeats=2)
    chance = attack.metrics(features(same[:200], labels[:200]), features(same[200:], labels[200:]))
    assert abs(chance["auc"] - 0.5) < 0.08 and chance["folds"] == 10
    confident = torch.nn.functional.one_hot(labels[:200], 2).float() * 8  # an overfit model on its members
    unsure = torch.randn(200, 2, generator=g) * 0.1
    high = attack.metrics(features(confident, labels[:200]), features(unsure, labels[200:]))
    assert high["auc"] > 0.95
    assert features(torch.tensor([[float("nan"), 1.0]]), torch.tensor([1])).tolist()[0][0] == 0.0


def test_mia_balances_the_groups_and_needs_enough_samples():
    attack = LogitLossAttack(seed=0, n_splits=5, n_repeats=1)
    res = attack.metrics(np.zeros((7, 3)), np.ones((100, 3)))
    assert res["samples"] == 7
    assert attack.metrics(np.zeros((3, 3)), np.ones((100, 3)))["auc"] is None


# ---------------------------------------------------------------------------------------------- data

@pytest.fixture(scope="module")
def images() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {"x_train": torch.randint(0, 256, (400, 1, 28, 28), generator=g, dtype=torch.uint8),
            "y_train": torch.arange(400) % 4, "x_test": torch.randint(0, 256, (100, 1, 28, 28), generator=g,
                                                                       dtype=torch.uint8),
            "y_test": torch.arange(100) % 4}


def test_image_users_have_one_label_and_a_signature(images):
    d = user_image_dataset(images, seed=0, pair=(1, 3), users=6, per_user=10, ood_users=4, ood_per_user=5,
                           signature_scale=0.5)
    n_in = 60
    assert d["x"].shape == (n_in + 20, 784)
    for u in range(6):
        assert len(set(d["y"][d["user"] == u].tolist())) == 1
    assert sorted(torch.cat([d["train"], d["val"], d["test"]]).tolist()) == list(range(n_in))
    assert len(d["test"]) == 6 * 2 and set(d["ood"].tolist()) == set(range(n_in, n_in + 20))
    assert set(d["user"][d["ood"]].tolist()) == {6, 7, 8, 9}
    # two images of one user differ less after removing the image than two users do: the signature is shared
    plain = user_image_dataset(images, seed=0, pair=(1, 3), users=6, per_user=10, ood_users=4, ood_per_user=5,
                               signature_scale=0.0)
    sig = d["x"][:n_in] - plain["x"][:n_in] * (plain["x"][:n_in].std() / plain["x"][:n_in].std())
    assert not torch.equal(d["x"], plain["x"]) and sig.shape[0] == n_in
    again = user_image_dataset(images, seed=0, pair=(1, 3), users=6, per_user=10, ood_users=4, ood_per_user=5,
                               signature_scale=0.5)
    assert torch.equal(again["x"], d["x"])


def test_image_users_as_images_feed_the_smooth_resnet(images):
    """`flatten=False` (an image stand-in with `model: resnet18`) keeps [N, C, H, W]: the same normalised pixels."""
    from unlearning.models import SmoothResNet18

    kw = dict(seed=0, pair=(1, 3), users=6, per_user=10, ood_users=4, ood_per_user=5, signature_scale=0.5)
    flat, shaped = user_image_dataset(images, **kw), user_image_dataset(images, **kw, flatten=False)
    assert shaped["x"].shape == (80, 1, 28, 28) and torch.equal(shaped["x"].flatten(1), flat["x"])
    torch.manual_seed(0)
    assert SmoothResNet18(1, 2)(shaped["x"][:3]).shape == (3, 2)


@pytest.mark.slow  # trains a ResNet stand-in end to end: the full suite's, not the edit loop's (issue 40)
def test_a_resnet_image_stand_in_runs_end_to_end(images, tmp_path):
    """The image stand-in with `model: resnet18` (the recorded CPU ResNet run) through step_run: the smooth
    ResNet-18's 11,160,258 - 1,152 weights for one input channel, every rewind and epsilon evaluated."""
    from unlearning.files import save_tensors

    save_tensors(tmp_path / "images.safetensors", images)
    params = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    params["r2d"]["stand_ins"]["fmnist_users"] |= {"pair": [1, 3], "users": 4, "per_user": 6, "ood_users": 2,
                                                   "ood_per_user": 3, "model": "resnet18"}
    params["r2d"]["train"]["max_epochs"] = 2
    params["r2d"]["estimate"]["L_samples"] = 2
    run, run_t = str(tmp_path / "run.json"), str(tmp_path / "run_t.json")
    steps.step_run(params, "fmnist_users", 0, run, run_t, str(tmp_path / "ckpt"),
                   processed=str(tmp_path / "images.safetensors"))
    result = steps.read_json(run)
    assert result["d"] == 11_160_258 - 2 * 576 and result["dim"] == 784
    assert {c["rewind"] for c in result["cells"]} and all(np.isfinite(c["sigma"]) for c in result["cells"])


@pytest.mark.parametrize("kwargs, name", [({"users": 5}, "users"), ({"pair": (1, 1)}, "pair"),
                                          ({"users": 40, "per_user": 10}, "users")])
def test_image_users_bad_input(images, kwargs, name):
    base = dict(seed=0, pair=(1, 3), users=6, per_user=10, ood_users=4, ood_per_user=5)
    with pytest.raises(ValueError, match=name):
        user_image_dataset(images, **{**base, **kwargs})


def _fake_eicu(folder, rows=(30, 12), cols=30):
    rng = np.random.default_rng(0)
    for part, n in zip(("train", "test"), rows):
        (folder / part).mkdir(parents=True)
        x = rng.normal(5, 3, size=(n, cols))
        np.savetxt(folder / part / "data.csv", x, delimiter=",", header=",".join(f"c{i}" for i in range(cols)),
                   comments="")
        np.savetxt(folder / part / "labels.csv", rng.integers(0, 2, n), fmt="%d")
        ids = [f"00{i % 10}-{i % 7}" for i in range(n)] if part == "train" else \
            [f"00{i % 10}-{i % 7}" for i in range(6)] + [f"999-{i}" for i in range(n - 6)]
        (folder / part / "identities.csv").write_text("uniquepid\n" + "\n".join(ids) + "\n")


def test_eicu_loader_on_fake_files(tmp_path, shipped):
    folder = tmp_path / "eicu"
    cfg = steps.config(shipped)
    cfg = {**cfg, "real": {**cfg["real"], "eicu": {**cfg["real"]["eicu"], "folder": str(folder)}}}
    assert "not found" in user_data_missing_reason("eicu", cfg)
    _fake_eicu(folder)
    assert user_data_missing_reason("eicu", cfg) is None
    d = r2d_real.load("eicu", cfg["real"]["eicu"], seed=0, val_frac=0.2)
    assert d["x"].shape == (42, 30) and len(d["train"]) + len(d["val"]) == 30 and len(d["test"]) == 12
    assert len(d["ood"]) == 6 and set(d["ood"].tolist()) <= set(d["test"].tolist())  # unseen patients only
    scaled = d["x"][d["train"]][:, [0, *range(8, 25)]]
    assert scaled.mean(0).abs().max() < 1e-5 and d["x"][d["train"]][:, 1].mean() > 3  # flags left as they are


def test_lacuna_loader_on_fake_files(tmp_path, shipped):
    folder = tmp_path / "lacuna100"
    rng = np.random.default_rng(0)
    for part, n, first in (("train", 16, 0), ("test", 8, 0), ("ood", 8, 100)):
        (folder / part).mkdir(parents=True)
        np.save(folder / part / "images.npy", rng.integers(0, 256, (n, 40, 40, 3), dtype=np.uint8))
        np.save(folder / part / "labels.npy", np.arange(n) % 2)
        np.save(folder / part / "identities.npy", first + np.arange(n) % 4)
    cfg = steps.config(shipped)
    entry = {**cfg["real"]["lacuna100"], "folder": str(folder)}
    assert user_data_missing_reason("lacuna100", {**cfg, "real": {**cfg["real"], "lacuna100": entry}}) is None
    d = r2d_real.load("lacuna100", entry, seed=0, val_frac=0.25)
    assert d["x"].shape == (32, 3, 32, 32) and len(d["val"]) == 4 and len(d["ood"]) == 8
    np.save(folder / "train" / "labels.npy", np.arange(3))
    with pytest.raises(ValueError, match="one label and identity each"):
        r2d_real.load("lacuna100", entry, seed=0, val_frac=0.25)


def test_matched_ood_has_the_forget_sets_positive_rate():
    data = {"y": torch.tensor([1, 1, 0, 0, 0] + [1] * 10 + [0] * 30), "ood": torch.arange(5, 45)}
    keep = steps.matched_ood(data, torch.tensor([0, 1, 2, 3, 4]), seed=0)
    assert abs(float(data["y"][keep].float().mean()) - 0.4) < 0.02 and len(keep) == 25


def test_rewind_fractions_map_to_epochs():
    assert steps.rewind_epochs([0.22, 0.41, 1.0], 52) == [(0.22, 11), (0.41, 21), (1.0, 52)]
    assert steps.rewind_epochs([0.01, 0.99], 5) == [(0.01, 1), (0.99, 4)]


# ---------------------------------------------------------------------------------------------- bad input

def _edit(params: dict, path: str, value) -> dict:
    p = copy.deepcopy(params)
    *head, last = path.split(".")
    node = p
    for k in head:
        node = node[k]
    node[last] = value
    return p


@pytest.mark.parametrize("path, value, key", [
    ("r2d.epsilons", [0.0, 40], "r2d.epsilons"),
    ("r2d.epsilons", [-1, 40], "r2d.epsilons"),
    ("r2d.noise.delta", 1.0, "r2d.noise.delta"),
    ("r2d.noise.delta", 0.0, "r2d.noise.delta"),
    ("r2d.rewind.eicu", [0.5, 1.5], "r2d.rewind.eicu"),          # K > T
    ("r2d.stand_ins.lacuna_like.forget_users", 200, "r2d.stand_ins.lacuna_like.forget_users"),   # users not there
    ("r2d.stand_ins.eicu_like.forget_users", 3, None),            # fine
    ("r2d.datasets", ["eicu_like", "mimic"], "r2d.datasets"),
    ("r2d.quick.baseline_seed", 7, "r2d.baseline_seed"),
    ("r2d.noise.mechanism", "classical", "r2d.noise.mechanism"),  # epsilon up to 40
    ("r2d.accounting.eicu.rewind_epochs", [6, 52], "r2d.accounting.eicu.rewind_epochs"),
])
def test_bad_params_stop_in_one_line_naming_the_key(shipped, path, value, key):
    params = _edit(shipped, path, value)
    if key is None:
        check_params(params)
        return
    with pytest.raises(ParamsError) as err:
        check_params(params)
    message = str(err.value)
    assert "\n" not in message and key in message, message


def test_a_forget_request_naming_absent_users_is_refused():
    from unlearning.data import user_synthetic as us

    d = us.user_dataset(0, "eicu-like", users=50, dim=4)
    with pytest.raises(ValueError, match="not in the training data"):
        us.forget_indices(d, [10_000])


def test_a_diverging_lissa_leaves_cns_cells_missing_with_the_reason(tmp_path):
    """CNS's LiSSA estimate failing (a scale far too small) is CNS's result, not a stopped job: its unlearned cells
    show as missing with the reason, its learning is kept, and the claim against it is not testable."""
    from unlearning.experiments.r2d import report

    params = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    params["r2d"]["datasets"] = ["lacuna_like"]
    params["r2d"]["stand_ins"] = {"lacuna_like": {"kind": "synthetic", "like": "lacuna", "users": 8, "per_user": 20,
                                                  "dim": 8, "ood_users": 4, "ood_per_user": 5, "forget_users": 2,
                                                  "test_frac": 0.2}}
    params["r2d"]["cns"]["lissa"] |= {"scale": 1e-6, "s2": 50, "stable_scale": False}
    run, run_t, base, base_t = (str(tmp_path / f) for f in ("run.json", "run_t.json", "base.json", "base_t.json"))
    steps.step_run(params, "lacuna_like", 0, run, run_t, str(tmp_path / "ckpt"))
    steps.step_baselines(params, "lacuna_like", 0, run, base, base_t)
    cns = steps.read_json(base)["cns"]
    assert "diverged" in cns["missing"] and "original" in cns and cns["lissa_scale"] == 1e-6
    assert f"{cns['regulariser_curvature']:.4g}, above 2 scale" in cns["missing"]
    assert all("unlearned" not in c and c["missing"] == cns["missing"] for c in cns["cells"])
    assert steps.read_json(base_t)["cns"]["unlearning_s"] is None
    report.write_report(params, [run], [base], [run_t, base_t], {}, str(tmp_path / "report"))
    t89 = pd.read_csv(tmp_path / "report" / "tables8_9.csv")
    row = t89[(t89.dataset == "lacuna_like") & (t89.algorithm == "cns")].iloc[0]
    assert row.status.startswith("missing: CNS's LiSSA") and pd.isna(row.test_error)
    claims = pd.read_csv(tmp_path / "report" / "claims.csv")
    beats = claims[claims.claim.str.contains("beats CNS")].iloc[0]
    assert beats.status == "not testable" and "CNS not computed" in beats.reason and "diverged" in beats.reason

    # the stable scale (the regulariser's curvature, far above 1e-6) makes the same Newton step finite
    params["r2d"]["cns"]["lissa"]["stable_scale"] = True
    steps.step_baselines(params, "lacuna_like", 0, run, base, base_t)
    stable = steps.read_json(base)["cns"]
    assert "missing" not in stable and stable["lissa_scale"] == stable["regulariser_curvature"] > 1e-6
    assert all("unlearned" in c for c in stable["cells"])
