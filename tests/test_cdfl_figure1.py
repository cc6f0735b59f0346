"""CDFL's Figure 1 on the tiny synthetic setup: the original's K rounds, each sequential request's window for DU
and RT, the client-wise panel, reproducibility, and the report's figure1.png / figure1.csv."""

import json

import pytest

from unlearning.experiments.cdfl import figure1


@pytest.fixture(scope="module")
def fig1(tiny, tmp_path_factory):
    params, features, _ = tiny
    out = tmp_path_factory.mktemp("cdfl_figure1")
    figure1.step_figure1(params, "synthetic", features, str(out / "figure1.json"), str(out / "t.json"))
    return params, features, out


def test_figure1_holds_every_curve(fig1):
    params, _, out = fig1
    cfg = params["cdfl"]
    k, n = cfg["train"]["rounds"], cfg["unlearn"]["sequential"]["requests"]
    w = figure1.window(cfg)
    assert cfg["figure1"]["window"] is None and w == k  # tiny: null = K
    result = json.loads((out / "figure1.json").read_text())
    assert (result["partition"], result["topology"], result["seed"]) == ("iid", "erdos_renyi", cfg["seeds"][0])
    assert [p["round"] for p in result["original"]["curve"]] == list(range(1, k + 1))
    requests = result["sample"]["requests"]
    assert [b["round"] for b in requests] == [k + r * w for r in range(n)]
    total = 0
    for r, b in enumerate(requests):
        at = k + r * w
        window_rounds = list(range(at + 1, at + w + 1))
        assert b["du"]["diverged"] is None and b["du"]["after_correction"]["round"] == at
        assert b["du"]["after_correction"]["test_accuracy"] is not None
        assert [p["round"] for p in b["du"]["curve"]] == window_rounds
        assert [p["round"] for p in b["rt"]["curve"]] == window_rounds
        total += b["forget_samples"]
        assert b["forget_samples_total"] == total  # cumulative
    # 20 % of 4 x 40 samples in 3 equal parts: round(0.2 x 40 / 3) = 3 per client and request
    assert [b["forget_samples"] for b in requests] == [4 * 3] * n
    client = result["client"]
    assert client["target"] not in client["remaining"] and len(client["remaining"]) == cfg["clients"] - 1
    assert set(client["du"]) == set(cfg["unlearn"]["client_weights"])
    for d in client["du"].values():
        assert [p["round"] for p in d["curve"]] == list(range(k + 1, k + w + 1))
    assert [p["round"] for p in client["rt"]["curve"]] == list(range(k + 1, k + w + 1))
    pdudt = client["pdudt"]  # Fig. 1d-f: PDUDT's correction at round K, then its subsequent rounds in the window
    assert pdudt["after_correction"]["round"] == k and pdudt["diverged"] is None
    assert [p["round"] for p in pdudt["curve"]] == list(range(k + 1, k + w + 1))
    timing = json.loads((out / "t.json").read_text())
    assert timing["client"]["pdudt"]["pdudt_window_s"] > 0
    assert len(timing["sample"]) == n and all(t["rt_s"] > 0 for t in timing["sample"])
    assert "wall_time" not in (out / "figure1.json").read_text()


def test_figure1_is_reproducible(fig1, tmp_path):
    params, features, out = fig1
    figure1.step_figure1(params, "synthetic", features, str(tmp_path / "again.json"), str(tmp_path / "t.json"))
    assert (tmp_path / "again.json").read_text() == (out / "figure1.json").read_text()


def test_report_draws_figure1(fig1, tmp_path):
    import pandas as pd

    from unlearning.experiments.cdfl import report

    params, _, out = fig1
    report.write_report(params, [], [], {}, str(tmp_path), figure1=[str(out / "figure1.json")])
    assert (tmp_path / "figure1.png").read_bytes().startswith(b"\x89PNG")
    curves = pd.read_csv(tmp_path / "figure1.csv")
    assert list(curves.columns) == ["dataset", "panel", "method", "request", "round", "test_accuracy"]
    assert set(curves.panel) == {"sample-wise", "client-wise"}
    sample = curves[curves.panel == "sample-wise"]
    k, n = params["cdfl"]["train"]["rounds"], params["cdfl"]["unlearn"]["sequential"]["requests"]
    assert (sample.method == "original").sum() == k and (sample.method == "DU after correction").sum() == n
    assert (sample.method == "DU").sum() == (sample.method == "RT").sum() == n * figure1.window(params["cdfl"])
    client = curves[curves.panel == "client-wise"]
    assert (client.method == "PDUDT").sum() == (client.method == "RT").sum() == figure1.window(params["cdfl"])
    assert (client.method == "PDUDT after correction").sum() == 1
    md = (tmp_path / "index.md").read_text()
    assert "Figure 1: test accuracy over rounds" in md and "figure1.png" in md and "image only" in md
    # no Figure 1 result: the figure and an empty table are still written
    report.write_report(params, [], [], {}, str(tmp_path / "none"))
    assert (tmp_path / "none" / "figure1.png").is_file() and pd.read_csv(tmp_path / "none" / "figure1.csv").empty
