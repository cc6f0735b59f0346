"""Common ground's centralized setting (experiments/common_ground/centralized.py): the canary, the held-out
audit, and the step on a tiny synthetic SGLU feature file."""

from __future__ import annotations

import json
import math

import pytest
import torch
import yaml

from conftest import ROOT
from unlearning.experiments.common_ground import centralized as cg
from unlearning.experiments.common_ground.report import centralized_table
from unlearning.files import save_tensors
from unlearning.privacy import audit
from unlearning.privacy import sglu_baselines as base

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def features(tmp_path):
    """SGLU's feature format: unit-norm rows, labels in {-1, +1} sorted by class (as sglu-features writes them)."""
    g = torch.Generator().manual_seed(0)
    direction = torch.randn(6, generator=g)
    def draw(n):
        x = torch.randn(n, 6, generator=g)
        y = torch.where(x @ direction > 0, 1.0, -1.0)
        order = torch.argsort(-y, stable=True)
        return (x / x.norm(dim=1, keepdim=True))[order], y[order]
    x, y = draw(200)
    xt, yt = draw(100)
    path = tmp_path / "synthetic.safetensors"
    save_tensors(path, {"x_train": x, "y_train": y, "x_test": xt, "y_test": yt}, {"n": 200, "d": 6})
    return path


def test_canary_is_the_last_point_mislabelled_and_a_subset_keeps_both_classes(features):
    full = cg.canary_data(str(features), None, "cpu", 0)
    x_c, y_c = full["canary"]
    assert full["n"] == 200 and torch.equal(x_c, full["x"][-1]) and y_c == 1.0  # the file ends with class -1
    assert torch.equal(full["x"][:-1], full["x1"][:-1]) and not torch.equal(full["x"][-1], full["x1"][-1])
    part = cg.canary_data(str(features), 50, "cpu", 0)
    assert part["n"] == 50 and set(part["y"][:-1].tolist()) == {-1.0, 1.0}  # a random subset, not the first 50
    with pytest.raises(ValueError, match="train_size = 201"):
        cg.canary_data(str(features), 201, "cpu", 0)


def test_held_out_audit_sees_a_separable_canary_and_not_an_absent_one():
    g = torch.Generator().manual_seed(1)
    apart = cg.held_out_audit(torch.rand(400, generator=g), 5 + torch.rand(400, generator=g), 1e-5, 0.95)
    assert apart["false_positives"] == apart["false_negatives"] == 0 and apart["runs_per_side"] == 200
    assert apart["epsilon_lower"] == pytest.approx(audit.epsilon_lower_bound(0, 0, 200, 1e-5).epsilon_lower)
    same = cg.held_out_audit(torch.rand(400, generator=g), torch.rand(400, generator=g), 1e-5, 0.95)
    assert same["epsilon_lower"] == 0.0


def test_d2d_epsilon_inverts_its_sigma():
    k = base.BaselineConstants(n=1000, L=0.251, m=0.001, d=6, delta=1e-5)
    assert cg.d2d_epsilon(k, base.d2d_sigma_internal(k, 0.7, 3), 3) == pytest.approx(0.7, rel=1e-9)


def test_step_runs_every_method_and_its_control_and_the_report_reads_it(features, tmp_path):
    params = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    out, timing = tmp_path / "c.json", tmp_path / "t.json"
    cg.step_centralized(params, str(features), str(out), str(timing))
    result = json.loads(out.read_text())
    assert set(result["methods"]) == {"sglu", "sglu@0.01", "lu", "lu@0.01", "d2d", "d2d@0.01"}
    for key, m in result["methods"].items():
        control = "@" in key
        assert (m["claimed_epsilon"] > 1.0) if control else m["claimed_epsilon"] == 1.0
        assert m["audit"]["runs_per_side"] == 4 and m["audit"]["epsilon_lower"] >= 0.0
        assert math.isfinite(m["sigma"]) and 0 <= m["test_accuracy"]["unlearned"]["mean"] <= 1
    assert result["methods"]["sglu@0.01"]["sigma"] == pytest.approx(0.01 * result["methods"]["sglu"]["sigma"])
    again = tmp_path / "again.json"
    cg.step_centralized(params, str(features), str(again), str(tmp_path / "t2.json"))
    assert again.read_bytes() == out.read_bytes()  # seeded: byte-identical
    table = centralized_table(result, json.loads(timing.read_text()))
    run = table[table.status.str.startswith(("holds", "fails"))]
    assert len(run) == 6 and (table.status.str.startswith("missing: not built yet")).sum() == 3


@pytest.mark.parametrize("edit, key", [
    (lambda c: c["centralized"].update(dataset="cifar10"), "common.centralized.dataset"),  # not in tiny sglu.datasets
    (lambda c: c["centralized"].update(trials=3), "trials"),
    (lambda c: c["centralized"].update(control_noise=2.0), "control_noise"),
    (lambda c: c["centralized"].update(methods=["r2d"]), "methods"),
])
def test_bad_common_params_stop_in_one_line_naming_the_key(edit, key):
    from unlearning.config import ParamsError, check_params

    params = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    edit(params["common"])
    with pytest.raises(ParamsError, match=key) as err:
        check_params(params)
    assert "\n" not in str(err.value)
