"""The CDFL cell step on the tiny synthetic setup: what one results file holds, and that it is reproducible."""

import json

import pytest

from unlearning.experiments.cdfl import steps


@pytest.fixture(scope="module")
def cell(tiny, tmp_path_factory):
    params, features, _ = tiny
    out = tmp_path_factory.mktemp("cdfl")
    steps.step_cell(params, "synthetic", "iid", "ring", 0, features, str(out / "cell.json"), str(out / "t.json"))
    return params, features, out


def test_cell_holds_original_du_and_rt_per_granularity(cell):
    params, _, out = cell
    result = json.loads((out / "cell.json").read_text())
    assert result["config"]["scale"] == params["scale"] and "sha256" in result["config"]
    assert result["client_sizes"] == [40] * 4 and result["rounds"] == 3 and result["test_images"] == 200
    assert len(result["original"]["curve"]) == 3
    for granularity in ("sample", "class"):
        g = result["granularities"][granularity]
        assert len(g["rt"]["curve"]) == 3
        assert g["rt"]["best"]["test_accuracy"] == max(p["test_accuracy"] for p in g["rt"]["curve"])
        assert g["du"]["after_correction"]["test_accuracy"] is not None
        for who in ("original", "rt"):
            mia = g[who]["mia"]
            assert mia["samples"] % 2 == 0 and mia["ci_low"] <= mia["accuracy"] <= mia["ci_high"]
        assert g["du"]["messages"] > 0 and g["du"]["floats"] == g["du"]["messages"] * result["dim"]
    assert result["granularities"]["sample"]["forget_samples"] == 4 * 4  # round(0.1 x 40) per client
    # class-wise: the attack's non-members are class-0 test samples of half B only, so 2s <= 2 x those
    labels_b = result["granularities"]["class"]["rt"]["mia"]["samples"] // 2
    assert labels_b <= result["granularities"]["class"]["forget_samples"]
    timing = json.loads((out / "t.json").read_text())
    assert timing["sample"]["rt_s"] > 0 and timing["sample"]["du_correction_s"] > 0


def test_cell_is_reproducible(cell, tmp_path):
    params, features, out = cell
    steps.step_cell(params, "synthetic", "iid", "ring", 0, features, str(tmp_path / "again.json"), str(tmp_path / "t"))
    assert (tmp_path / "again.json").read_text() == (out / "cell.json").read_text()


def test_cell_outside_the_grid_names_the_key(tiny, tmp_path):
    params, features, _ = tiny
    with pytest.raises(KeyError, match="cdfl.topology.kinds: 'erdos_renyi' is not in it; valid: ring"):
        steps.step_cell(params, "synthetic", "iid", "erdos_renyi", 0, features, str(tmp_path / "x"),
                        str(tmp_path / "t"))
