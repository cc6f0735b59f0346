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
from unlearning.methods import TrainedState, get_method


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
    from unlearning.methods import registry

    with pytest.raises(KeyError, match="not registered here; registered: .*retrain"):
        get_method("magic")
    with pytest.raises(KeyError, match="method: 'magic' unknown; valid: du, fats, fedrecovery, finetune, hdus, "
                                       "noise_only, pdudt, pdudt_es, retrain, rrdu"):
        registry.load("magic")


def test_retrain_without_forgetting_reproduces_training_exactly(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    nothing = copy.deepcopy(setup.request)
    nothing.masks = [torch.zeros_like(m) for m in nothing.masks]
    nothing.removed = ()
    result = get_method("retrain")(state, nothing, {})
    assert result.clients == [0, 1, 2, 3]
    assert result.theta.device == state.theta.device == setup.theta0.device
    assert torch.equal(result.theta, state.theta)


def test_retrain_never_sees_the_forgotten_client(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    first = get_method("retrain")(state, setup.request, {})
    assert first.clients == [0, 1, 2] and first.theta.shape[0] == 3
    assert first.cost.grad_evals == 3 * 40 * 3  # rounds x samples x remaining clients
    forgotten = setup.request.samples(setup.data.indices)
    setup.data.x[forgotten] = torch.randn_like(setup.data.x[forgotten])  # change only the forgotten data
    second = get_method("retrain")(state, setup.request, {})
    assert torch.equal(first.theta, second.theta)
    assert not torch.equal(first.theta, state.theta[:3])


def test_finetune_continues_from_the_last_checkpoint(trained):
    params, features, split, out = trained
    state, setup = state_of(params, features, split, out)
    result = get_method("finetune")(state, setup.request, {"rounds": 2, "lr": 0.1})
    assert result.clients == [0, 1, 2]
    assert result.cost.grad_evals == 2 * 40 * 3
    assert result.cost.bytes_read > 0 and result.certificate == {}
    assert not torch.equal(result.theta, state.theta[:3])
