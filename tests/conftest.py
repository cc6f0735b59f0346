"""Shared fixtures: the repository root and a copy of params.yaml to edit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def tiny_params(params: dict) -> dict:
    """The shipped params.yaml shrunk to a synthetic dataset, 4 clients and 3 rounds."""
    params["spine"].update(dataset="synthetic", mlp_hidden=16, clients=4, methods=["retrain", "finetune"])
    params["spine"]["partition"].update(kind="iid", train_per_client=40)
    params["spine"]["train"].update(rounds=3, batch_size=16, lr=0.1, checkpoint_every=1)
    params["spine"]["forget"].update(kind="client", client=3)
    params["spine"]["finetune"].update(rounds=2)
    params["spine"]["eval"]["mia_samples"] = 30
    params["spine"]["quick"] = {}
    pdudt = params["pdudt"]
    pdudt.update(datasets=["synthetic"], models={"synthetic": "mlp"}, mlp_hidden=16, clients=4,
                 sigmas=[0.001, 0.01], default_sigma=0.001, quick={}, paper={})
    pdudt["partition"].update(train_per_client=40)
    pdudt["train"].update(rounds=3, batch_size=16, lr=0.1, checkpoint_every=3)
    pdudt["forget"].update(client=3)
    pdudt["pdudt_es"]["es_rounds"] = 2
    pdudt["subsequent"].update(rounds=2, lr=0.1, eval_every=1)
    pdudt["eval"]["mia_samples"] = 30
    pdudt["mia"].update(shadow_models=2, shadow_epochs=2, repetitions=5, max_samples=20)
    pdudt["timing"]["repeats"] = 2
    sglu = params["sglu"]
    sglu.update(datasets=["synthetic", "mnist"], truncate_to=16, trials=2, partitions=None, quick={}, paper={},
                burn_in={"32": 10, "full": 60}, lam_per_n=2.5e-4, radius=10.0)  # n = 400: m = 0.1, c = 0.71
    sglu["pairs"]["synthetic"], sglu["extractors"]["synthetic"] = [0, 1], "pixels"
    sglu["table3"].update(epsilons=[0.5, 5], batch_sizes=[32, "full"])
    sglu["fig3a"].update(epsilons=[0.5, 5], batch_sizes=[32, "full"], d2d_steps=[1])
    sglu["fig3b"].update(requests=4, batch_sizes=[32, "full"], lu_group_sizes=[2])
    sglu["fig3d"].update(sigmas=[0.5, 1.0], batch_sizes=[32, "full"], requests=3)
    sglu["fig3c"].update(sigmas=[0.5, 1.0], batch_sizes=[32, "full"], projection=[True, False], trials=None)
    sglu["baselines"].update(d2d_burn_in=30, lu_burn_in=30)
    return params


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A synthetic experiment on disk: (params, features path, split path)."""
    from unlearning.experiments.spine import steps

    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = tiny_params(base)
    out = tmp_path_factory.mktemp("tiny")
    steps.step_prepare(params, "synthetic", str(out / "processed.safetensors"))
    steps.step_features(params, str(out / "processed.safetensors"), str(out / "features.safetensors"))
    steps.step_split(params, "spine", str(out / "features.safetensors"), str(out / "split.safetensors"))
    return params, str(out / "features.safetensors"), str(out / "split.safetensors")
