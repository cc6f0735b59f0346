"""CDFL's optimizer and K calibration (spec note 8) on the tiny synthetic setup: one curve per optimizer, the first
round at the target, the cheapest choice, reproducibility, the report's section, and bad settings."""

import copy
import json

import pytest

from unlearning.experiments.cdfl import calibrate, report


def _params(tiny, **cal):
    params = copy.deepcopy(tiny[0])
    params["cdfl"]["calibration"] = {"optimizers": ["sgd", "adam"], "min_rounds": 1, "max_rounds": 3, "within": 3.0,
                                    **cal}
    return params


@pytest.fixture(scope="module")
def calibrated(tiny, tmp_path_factory):
    params = _params(tiny)
    out = tmp_path_factory.mktemp("cdfl_calibrate")
    calibrate.step_calibrate(params, "synthetic", tiny[1], str(out / "c.json"), str(out / "t.json"))
    return params, out


def test_paper_rt_reads_table_one():
    assert calibrate.paper_rt("fashion_mnist") == pytest.approx(84.24)  # Table I, Ring, RT
    assert calibrate.paper_rt("synthetic") is None


def test_every_optimizer_runs_max_rounds(calibrated):
    _, out = calibrated
    result = json.loads((out / "c.json").read_text())
    assert [r["optimizer"] for r in result["runs"]] == ["sgd", "adam"]
    for run in result["runs"]:
        assert [p["round"] for p in run["curve"]] == [1, 2, 3]
        assert run["best"] == max(p["test_accuracy"] for p in run["curve"])
        assert run["reached_round"] is None  # the synthetic data has no paper RT: no target
    assert result["paper_rt"] is None and result["choice"] is None
    assert sum(result["client_sizes"]) > 0 and "wall_time" not in (out / "c.json").read_text()
    timing = json.loads((out / "t.json").read_text())
    assert set(timing["runs"]) == {"sgd", "adam"} and timing["runs"]["adam"]["seconds"] > 0


def test_the_cheapest_optimizer_is_chosen(tiny, calibrated, tmp_path, monkeypatch):
    params, out = calibrated
    curves = {r["optimizer"]: r["curve"] for r in json.loads((out / "c.json").read_text())["runs"]}
    assert curves["sgd"] != curves["adam"]  # the optimizer reaches the engine
    # a target the runs cross at different rounds: the lowest accuracy one of them holds after round 1
    level = min(max(p["test_accuracy"] for p in c) for c in curves.values())
    monkeypatch.setattr(calibrate, "paper_rt", lambda *_: level + 3.0)
    calibrate.step_calibrate(params, "synthetic", tiny[1], str(tmp_path / "c.json"), str(tmp_path / "t.json"))
    result = json.loads((tmp_path / "c.json").read_text())
    assert result["target"] == pytest.approx(level)
    first = {r["optimizer"]: r["reached_round"] for r in result["runs"]}
    ks = {r["optimizer"]: r["k"] for r in result["runs"]}
    for name, curve in curves.items():
        assert first[name] == next((p["round"] for p in curve if p["test_accuracy"] >= level), None)
        # K: the first round >= min_rounds (1) within 3 points of the paper's RT on either side
        assert ks[name] == next((p["round"] for p in curve if abs(p["test_accuracy"] - level - 3.0) <= 3.0), None)
    order = ["sgd", "adam"]
    cheapest = min((k for k in ks if ks[k] is not None), key=lambda k: (ks[k], first[k], order.index(k)))
    assert result["choice"] == {"optimizer": cheapest, "rounds": ks[cheapest]}
    lines, summary = report.calibration_text(params["cdfl"], [result])
    assert f"Cheapest: {cheapest}, K = {ks[cheapest]}" in lines[0]
    assert list(summary["optimizer"]) == ["sgd", "adam"] and "first round at target" in summary
    assert len(report.calibration_table([result])) == 6


def test_calibration_is_reproducible(tiny, calibrated, tmp_path):
    params, out = calibrated
    calibrate.step_calibrate(params, "synthetic", tiny[1], str(tmp_path / "c.json"), str(tmp_path / "t.json"))
    assert (tmp_path / "c.json").read_text() == (out / "c.json").read_text()


def test_report_says_when_calibration_is_not_run():
    lines, summary = report.calibration_text({"calibration": None}, [])
    assert "not run at this scale" in lines[0] and summary.empty


def test_min_rounds_above_max_rounds_names_the_key(tiny, tmp_path):
    # (a max_rounds or optimizers the schema refuses: tests/test_cdfl_params.py)
    with pytest.raises(ValueError, match="cdfl.calibration.min_rounds"):
        calibrate.step_calibrate(_params(tiny, min_rounds=4), "synthetic", tiny[1], str(tmp_path / "c.json"),
                                 str(tmp_path / "t.json"))
    assert not (tmp_path / "c.json").exists()


def test_a_diverging_optimizer_is_recorded_and_the_others_run(tiny, tmp_path):
    params = _params(tiny)
    params["cdfl"]["train"]["lr"] = 1e6  # plain SGD blows up at once; Adam's steps stay bounded by lr
    params["cdfl"]["calibration"]["optimizers"] = ["sgd"]
    calibrate.step_calibrate(params, "synthetic", tiny[1], str(tmp_path / "c.json"), str(tmp_path / "t.json"))
    run = json.loads((tmp_path / "c.json").read_text())["runs"][0]
    assert run["diverged"] and run["curve"] == [] and run["reached_round"] is None
