"""The method registry and the two reference methods, retrain and finetune, on the test device: the stored
models are loaded onto it, and exact equalities hold there (on CUDA under load_setup's deterministic algorithms)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from unlearning.experiment import load_setup
from unlearning.experiments.spine import steps
from unlearning.files import load_tensors
from unlearning.methods import METHODS, TrainedState


@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory):
    params, features, split = tiny
    out = tmp_path_factory.mktemp("pretrain")
    steps.step_pretrain(params, "spine", features, split, str(out / "pretrain"), str(out / "timing.json"))
    out = out / "pretrain"
    return params, features, split, out


def state_of(params, features, split, out):
    setup = load_setup(params, "spine", features, split)
    models = load_tensors(Path(out) / "models.safetensors")
    return TrainedState(setup, models["theta"].to(setup.device), models["clients"].tolist(),
                        params["spine"]["train"]["rounds"], Path(out)), setup


def test_unknown_method_names_the_valid_ones():
    from unlearning.plugins import PluginError

    with pytest.raises(PluginError, match=f"method 'magic': unknown; valid: {', '.join(METHODS.names())} "):
        METHODS["magic"]


def test_retrain_without_forgetting_reproduces_training_exactly(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    nothing = copy.deepcopy(setup.request)
    nothing.masks = [torch.zeros_like(m) for m in nothing.masks]
    nothing.removed = ()
    result = METHODS["retrain"](state, nothing, {})
    assert result.clients == [0, 1, 2, 3]
    assert result.theta.device == state.theta.device == setup.theta0.device
    assert torch.equal(result.theta, state.theta)


def test_retrain_never_sees_the_forgotten_client(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    first = METHODS["retrain"](state, setup.request, {})
    assert first.clients == [0, 1, 2] and first.theta.shape[0] == 3
    assert first.cost.grad_evals == 3 * 40 * 3  # rounds x samples x remaining clients
    forgotten = setup.request.samples(setup.data.indices)
    setup.data.x[forgotten] = torch.randn_like(setup.data.x[forgotten])  # change only the forgotten data
    second = METHODS["retrain"](state, setup.request, {})
    assert torch.equal(first.theta, second.theta)
    assert not torch.equal(first.theta, state.theta[:3])


def test_finetune_continues_from_the_last_checkpoint(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    result = METHODS["finetune"](state, setup.request, {"rounds": 2, "lr": 0.1})
    assert result.clients == [0, 1, 2]
    assert result.cost.grad_evals == 2 * 40 * 3
    assert result.cost.bytes_read > 0 and result.certificate == {}
    assert not torch.equal(result.theta, state.theta[:3])


def test_neggrad_plus_at_alpha_one_is_descent_on_the_retained_data_by_every_client(trained):
    """alpha = 1 leaves the retain term alone: the D-SGD rounds of train() on the retained data, every client of the
    original in them (the leaving one has no retained data: it only mixes), its row dropped after."""
    from unlearning.methods import neggrad_plus  # noqa: F401 - registers it
    from unlearning.train.dsgd import train

    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    result = METHODS["neggrad_plus"](state, setup.request, {"rounds": 2, "lr": 0.1, "alpha": 1.0})
    theta, clients = state.checkpoints().load(state.rounds)
    rounds = range(state.rounds, state.rounds + 2)
    expected, _ = train(setup.model, setup.spec, theta.to(setup.device), setup.data.retained(setup.request.masks),
                        clients, setup.schedule(lr=0.1), rounds, setup.strategy)
    assert result.clients == [0, 1, 2] and torch.equal(result.theta, expected[:3])
    assert result.cost.communication_floats > 0 and result.certificate == {}


def test_neggrad_plus_ascent_raises_the_forget_loss_and_a_bad_alpha_is_refused(trained):
    from unlearning.methods import neggrad_plus  # noqa: F401 - registers it
    from unlearning.train.dsgd import make_loss

    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    forget = setup.request.samples(setup.data.indices).to(setup.data.x.device)
    x, y = setup.data.x[forget], setup.data.y[forget]
    loss = make_loss(setup.model, setup.spec)
    ones = torch.ones(len(y), device=x.device)
    before = loss(state.theta[3], x, y, ones)  # the leaving client's model, on its own data
    ascent = METHODS["neggrad_plus"](state, setup.request, {"rounds": 1, "lr": 0.1, "alpha": 0.0})
    descent = METHODS["neggrad_plus"](state, setup.request, {"rounds": 1, "lr": 0.1, "alpha": 1.0})
    # the leaving client's ascent reaches the others through the mixing: their loss on its data is higher
    assert all(loss(a, x, y, ones) > loss(d, x, y, ones) for a, d in zip(ascent.theta, descent.theta))
    assert before.isfinite()
    with pytest.raises(ValueError, match=r"neggrad_plus.alpha = 1.5: valid: a number in \[0, 1\]"):
        METHODS["neggrad_plus"](state, setup.request, {"rounds": 1, "lr": 0.1, "alpha": 1.5})


def test_salun_saliency_keeps_the_top_ratio_and_random_labels_differ_from_the_true_ones():
    from unlearning.methods.salun import random_labels, saliency_mask

    mask = saliency_mask(torch.tensor([0.1, -3.0, 2.0, 0.0, -0.5, 1.0]), 0.5)
    assert mask.tolist() == [0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    assert saliency_mask(torch.ones(7), 1.0).sum() == 7 and saliency_mask(torch.ones(7), 0.1).sum() == 1
    y = torch.arange(10).repeat(50)
    y2 = random_labels(y, 10, torch.Generator().manual_seed(0))
    assert (y2 != y).all() and y2.min() >= 0 and y2.max() <= 9 and len(set(y2.tolist())) == 10


def test_salun_moves_only_the_salient_weights(trained):
    """Eq. 6: the coordinates outside the mask keep each remaining client's original values; the salient ones move."""
    from unlearning.methods import salun as module

    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    theta, clients = state.checkpoints().load(state.rounds)
    result = METHODS["salun"](state, setup.request, {"rounds": 2, "lr": 0.1, "ratio": 0.25})
    assert result.clients == [0, 1, 2] and result.cost.communication_floats > 0 and result.certificate == {}
    moved = (result.theta != theta[:3].to(result.theta)).any(0)
    assert 0 < int(moved.sum()) <= module.math.ceil(0.25 * theta.shape[1])
    with pytest.raises(ValueError, match=r"salun.ratio = 0.0: valid: a number in \(0, 1\]"):
        METHODS["salun"](state, setup.request, {"rounds": 1, "lr": 0.1, "ratio": 0})


def test_a_runner_on_the_convex_model_only_says_why_not_on_the_mlp_and_an_unknown_one_names_the_valid_ones():
    """`@register_central` (issue 55): each runner is its module's; a method with a convex runner and none on the MLP
    names why in its declaration (the MLP table's row); asking for a runner a model lacks names the ones it has."""
    from unlearning.methods import CENTRAL, central_runner
    from unlearning.plugins import PluginError

    convex = {n for n, m in CENTRAL.all() if m == "convex"}
    mlp = {n for n, m in CENTRAL.all() if m == "mlp"}
    assert convex - mlp and mlp
    for (name, model), info in CENTRAL.all().items():
        assert (info.name, info.model) == (name, model) and info.module.startswith("unlearning.methods.")
    for name in convex - mlp:
        assert central_runner(name, "convex").does_not_apply["mlp"]
        with pytest.raises(PluginError, match=f"'{name}' on the mlp model: no @register_central.*valid: "
                                              f"{', '.join(sorted(mlp))}$"):
            central_runner(name, "mlp")


def test_retain_forget_descent_ascends_on_the_canary_moves_only_the_mask_and_stops_when_it_diverges():
    from unlearning.experiments.common_ground.centralized import LogisticAsTwoClasses, retain_forget_descent

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(40, 6, generator=gen)
    x = x / x.norm(dim=1, keepdim=True)
    labels = (x[:, 0] > 0).long()
    labels[-1] = 1 - labels[-1]  # the canary, mislabelled
    model, theta = LogisticAsTwoClasses(torch.zeros(6)), torch.zeros(1, 6)

    def canary_loss(th):
        z = x[-1] @ th[0]
        return float(torch.nn.functional.cross_entropy(torch.stack([torch.zeros(()), z])[None], labels[-1:]))

    down = retain_forget_descent(model, theta, x, labels, 39, 20, 0.5, 1.0, 0.0)
    up = retain_forget_descent(model, theta, x, labels, 39, 20, 0.5, 1.0, -0.5)
    assert canary_loss(up) > canary_loss(down) > 0
    mask = torch.tensor([1.0, 0, 1, 0, 0, 0])
    masked = retain_forget_descent(model, theta, x, labels, 39, 20, 0.5, 1.0, -0.5, mask=mask)
    assert (masked[0, mask == 0] == 0).all() and (masked[0, mask == 1] != 0).all()
    with pytest.raises(FloatingPointError, match=r"NegGrad\+: the model is not finite after step \d+ of 500"):
        retain_forget_descent(model, theta, x, labels, 39, 500, 1e37, 0.0, -1.0, what="NegGrad+")
