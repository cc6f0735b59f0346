"""PDUDT's semantics (specs/pdudt.md 2.8) and its noise calibration (2.5)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch

from unlearning.experiment import load_setup
from unlearning.experiments.spine import steps
from unlearning.files import load_tensors
from unlearning.history import History
from unlearning.methods import METHODS, TrainedState
from unlearning.methods.pdudt import client_correction, client_noise
from unlearning.methods.pdudt import unlearn as pdudt_unlearn
from unlearning.privacy.gaussian import epsilon, sigma_for
from unlearning.privacy.pdudt_bound import BoundInputs, d1_bound, step_size_limit
from unlearning.topology import metropolis_hastings, metropolis_hastings_without, sample_graph

N, TARGET = 4, 3


def gradient_mixing(params: dict, rounds: int, local_steps: int | None = None) -> dict:
    params = copy.deepcopy(params)
    params["engine"]["history_dtype"] = "float32"
    params["spine"]["train"].update(mixing="gradient", rounds=rounds, checkpoint_every=rounds)
    if local_steps:
        params["spine"]["train"].update(local_epochs=None, local_steps=local_steps)
    return params


def trained_state(params, features, split, out: Path) -> TrainedState:
    steps.step_pretrain(params, "spine", features, split, str(out), str(out / "timing.json"))
    setup = load_setup(params, "spine", features, split)
    models = load_tensors(out / "models.safetensors")
    return TrainedState(setup, models["theta"].to(setup.device), models["clients"].tolist(),
                        params["spine"]["train"]["rounds"], out)


def test_identity_15_mean_residual():
    """(1/(n-1)) sum_{i<n} delta^t_i = (eta/(n-1)) (sum_j W^t_nj g^t_j - g^t_n)   (Appendix C, Eq. 15)."""
    gen = torch.Generator().manual_seed(0)
    n, eta = 10, 0.01
    graph = sample_graph("dynamic", n, 0.5, 0, 7, without=(n - 1,))
    w = metropolis_hastings(graph)
    w_hat = metropolis_hastings_without(graph, list(range(n)), (n - 1,))
    g = torch.randn(n, 50, generator=gen, dtype=torch.float64)
    delta = eta * (w_hat - w) @ g
    lhs = delta[: n - 1].mean(0)
    rhs = eta / (n - 1) * (w[n - 1] @ g - g[n - 1])
    torch.testing.assert_close(lhs, rhs)
    assert torch.all(w_hat[n - 1] == 0) and torch.all(w_hat[:, n - 1] == 0)


def test_exact_at_t1_equal_1(tiny, tmp_path, no_tf32):
    """One round from a shared theta^0: stored gradients are the retrain gradients, so theta-bar = theta-tilde."""
    params, features, split = tiny
    for local_steps in (1, None):  # one minibatch (Eq. 2 exactly) and one local epoch (pseudo-gradient)
        p = gradient_mixing(params, rounds=1, local_steps=local_steps)
        state = trained_state(p, features, split, tmp_path / f"s{local_steps}")
        history = History(tmp_path / f"s{local_steps}" / "history")
        retrained = METHODS["retrain"](state, state.setup.request, {})
        for k, c in enumerate(retrained.clients):
            # the correction replays the history on the CPU; the models live on the test device
            corrected = state.theta[c] - client_correction(history, c, p["spine"]["train"]["lr"], 1).to(state.theta)
            torch.testing.assert_close(corrected, retrained.theta[k], atol=1e-6, rtol=1e-5)
        moved = [not torch.allclose(state.theta[c], retrained.theta[k], atol=1e-6)
                 for k, c in enumerate(retrained.clients)]
        assert any(moved)  # the target's gradient mattered to some client, and the correction removed it


@pytest.fixture(scope="module")
def five_rounds(tiny, tmp_path_factory):
    params, features, split = tiny
    p = gradient_mixing(params, rounds=5)
    out = tmp_path_factory.mktemp("pdudt")
    return p, trained_state(p, features, split, out)


def test_pretrain_records_every_models_accuracy_on_the_forget_class_each_round(five_rounds):
    import json

    from unlearning.evaluate.metrics import accuracy, per_sample_loss_and_pred

    params, state = five_rounds
    curve = json.loads((state.directory / "class_curve.json").read_text())
    cls = params["spine"]["forget"]["class"]
    assert curve["class"] == cls and curve["clients"] == state.clients and len(curve["accuracy"]) == 5
    keep = state.setup.y_test == cls
    final = [accuracy(per_sample_loss_and_pred(state.setup, row, state.setup.x_test[keep], state.setup.y_test[keep])[1],
                      state.setup.y_test[keep]) for row in state.theta]
    assert curve["accuracy"][-1] == final  # the last round's entry is the trained models'


def online_accumulator(history: History, lr: float, horizon: int) -> torch.Tensor:
    """All clients at once, as an online accumulator during training would: S_i / A_i (spec 2.3)."""
    total, weights = 0, 0
    for t in range(horizon):
        g, w, w_hat = history.grads(t), history.mixing["W"][t].float(), history.mixing["W_without"][t].float()
        a = ((w @ g) ** 2).sum(1, keepdim=True)
        total = total + a * (lr * (w_hat - w) @ g)
        weights = weights + a
    return total / weights


def test_accumulator_equals_stored_history_replay(five_rounds):
    params, state = five_rounds
    history = state.history()
    lr = params["spine"]["train"]["lr"]
    for horizon in (5, 3):  # full PDUDT and ES
        online = online_accumulator(history, lr, horizon)
        for c in range(N - 1):
            torch.testing.assert_close(client_correction(history, c, lr, horizon), online[c], atol=1e-7, rtol=1e-5)


def test_the_sum_ablation_drops_eq9s_weights(five_rounds):
    """weights="sum" (issue 37's ablation): sum_t delta^t_i, every round's residual at weight 1, where Eq. 9 takes
    the p^t-weighted average; an unknown weighting is refused by name."""
    params, state = five_rounds
    history, lr = state.history(), params["spine"]["train"]["lr"]
    for c in range(N - 1):
        by_round = [client_correction(history, c, lr, t + 1, "sum") - client_correction(history, c, lr, t, "sum")
                    for t in range(5)]
        w, w_hat = history.mixing["W"][2][c].float(), history.mixing["W_without"][2][c].float()
        torch.testing.assert_close(by_round[2], lr * (w_hat - w) @ history.grads(2), atol=1e-7, rtol=1e-5)
        assert not torch.allclose(client_correction(history, c, lr, 5, "sum"), client_correction(history, c, lr, 5))
    ablation = pdudt_unlearn(state, state.setup.request, 0.0, None, weights="sum")
    assert ablation.certificate["weights"] == "sum"
    with pytest.raises(ValueError, match="weights 'plain': unknown; valid: eq8, sum"):
        client_correction(history, 0, lr, 5, "plain")


def test_es_over_the_full_horizon_is_pdudt(five_rounds):
    params, state = five_rounds
    full = METHODS["pdudt"](state, state.setup.request, {"sigma": 0.01})
    es = METHODS["pdudt_es"](state, state.setup.request, {"sigma": 0.01, "es_rounds": 5})
    shorter = METHODS["pdudt_es"](state, state.setup.request, {"sigma": 0.01, "es_rounds": 2})
    assert torch.equal(full.theta, es.theta)
    assert not torch.equal(full.theta, shorter.theta)
    assert full.clients == [0, 1, 2] and full.cost.grad_evals == 0 and full.cost.bytes_read > 0


def test_correction_moves_toward_retraining_and_noise_is_shared(five_rounds):
    """Same z_i for PDUDT and its noise-only ablation, so their difference is exactly the correction."""
    params, state = five_rounds
    pdudt = METHODS["pdudt"](state, state.setup.request, {"sigma": 0.05})
    ablation = METHODS["noise_only"](state, state.setup.request, {"sigma": 0.05})
    history = state.history()
    correction = torch.stack([client_correction(history, c, params["spine"]["train"]["lr"], 5) for c in range(3)])
    correction = correction.to(pdudt.theta.device)
    torch.testing.assert_close(ablation.theta - pdudt.theta, correction, atol=1e-6, rtol=1e-5)


def test_pdudt_replays_a_model_mixing_history_and_says_which(tiny, five_rounds, tmp_path):
    """After model mixing (D-PSGD, the paper's Origin) PDUDT runs Eq. 7-9 on the stored pseudo-gradients unchanged,
    and its certificate says the replay is an approximation there; after Eq. 2 it is the residual as derived."""
    params, features, split = tiny
    p = copy.deepcopy(params)
    p["engine"]["history_dtype"] = "float32"
    p["spine"]["train"].update(rounds=5, checkpoint_every=5)
    assert p["spine"]["train"]["mixing"] == "model"
    state = trained_state(p, features, split, tmp_path)
    pdudt = METHODS["pdudt"](state, state.setup.request, {"sigma": 0.05})
    ablation = METHODS["noise_only"](state, state.setup.request, {"sigma": 0.05})
    history = state.history()
    correction = torch.stack([client_correction(history, c, p["spine"]["train"]["lr"], 5) for c in range(N - 1)])
    torch.testing.assert_close(ablation.theta - pdudt.theta, correction.to(pdudt.theta.device), atol=1e-6, rtol=1e-5)
    assert correction.abs().sum() > 0
    assert pdudt.certificate["replay"].startswith("heuristic replay under D-PSGD")
    assert "approximation" in pdudt.certificate["replay"] and ablation.certificate["replay"] is None
    _, eq2_state = five_rounds
    eq2 = METHODS["pdudt"](eq2_state, eq2_state.setup.request, {"sigma": 0.05})
    assert "as derived" in eq2.certificate["replay"]


def test_noise_standard_deviations():
    """Per-client std sqrt(n-1) sigma; the average of n-1 clients' noise has std sigma (Cor. 4.10)."""
    n, sigma, d = 10, 0.002, 200_000
    z = torch.stack([client_noise(d, n, sigma, 0, "t", c) for c in range(n - 1)])
    assert z.std().item() == pytest.approx(3 * sigma, rel=0.01)
    assert z.mean(0).std().item() == pytest.approx(sigma, rel=0.01)


def test_sigma_round_trip_and_known_values():
    for delta in (0.01, 1.0, 7.5):
        for eps in (0.1, 1.0, 10.0):
            for beta in (1e-5, 0.01):
                assert epsilon(delta, sigma_for(delta, eps, beta), beta) == pytest.approx(eps, rel=1e-10)
    # Delta = sigma, beta = e^-1/2: eps = 1/2 + sqrt(2 * 1/2) = 1.5
    assert epsilon(1.0, 1.0, math.exp(-0.5)) == pytest.approx(1.5)
    assert sigma_for(0.0, 1.0, 1e-5) == 0.0
    with pytest.raises(ValueError, match="beta"):
        sigma_for(1.0, 1.0, 1.5)


def test_d1_bound_behaviour():
    base = BoundInputs(eta=1e-4, L=1.0, n=10, t1=10, rho1=0.5, rho2=0.5, sigma1_sq=1.0, sigma2_sq=1.0,
                       df_n=1.0, df_n1=1.0)
    d1 = d1_bound(base)
    assert d1 > 0
    assert d1_bound(base.__class__(**{**base.__dict__, "sigma1_sq": 2.0})) > d1
    zero = BoundInputs(**{**base.__dict__, "sigma1_sq": 0, "sigma2_sq": 0, "df_n": 0, "df_n1": 0})
    assert d1_bound(zero) == 0.0
    rho_differ = BoundInputs(**{**base.__dict__, "rho2": 0.9})
    assert d1_bound(rho_differ, "D1") != d1_bound(rho_differ, "D2")
    limit = step_size_limit(1.0, 10, 10, 0.5, 0.5)
    assert limit == pytest.approx(min(math.sqrt(1 / 1200), math.sqrt(1 / 600), math.sqrt(1 / 810)))
    with pytest.raises(ValueError, match="Theorem 4.9 needs"):
        d1_bound(BoundInputs(**{**base.__dict__, "eta": 1.0}))


def test_certify_command_prints_sigma_and_epsilon(capsys):
    from unlearning.__main__ import main

    assert main(["certify", "--d1", "0.05", "--epsilon", "1", "--beta", "1e-5"]) == 0
    sigma = float(capsys.readouterr().out.split("sigma = ")[1])
    assert sigma == pytest.approx(sigma_for(0.05, 1.0, 1e-5), rel=1e-5)
    assert main(["certify", "--d1", "0.05", "--sigma", str(sigma), "--beta", "1e-5"]) == 0
    assert float(capsys.readouterr().out.split("epsilon = ")[-1]) == pytest.approx(1.0, rel=1e-4)
    assert main(["certify", "--eta", "1e-4", "--epsilon", "1", "--beta", "1e-5"]) == 2
    assert "missing: --L" in capsys.readouterr().err
