"""CDFL's convex stand-in (experiments/cdfl/convex.py) on the tiny synthetic config, and its report table."""

import json

import networkx as nx
import pandas as pd
import pytest
import torch

from unlearning.experiments.cdfl import convex
from unlearning.methods import du
from unlearning.models import LogisticRegression
from unlearning.train.exact import minimiser
from unlearning.train.flat import FlatSpec


@pytest.fixture(scope="module")
def stand_in(tiny, tmp_path_factory):
    params, features, _ = tiny
    out = tmp_path_factory.mktemp("convex")
    convex.step_convex(params, "synthetic", features, str(out / "convex.json"), str(out / "t.json"))
    return params, features, out


def test_step_writes_three_ratios_per_lambda_and_the_gradient_norms(stand_in):
    params, _, out = stand_in
    result = json.loads((out / "convex.json").read_text())
    assert result["stand_in"] is True and "not a paper table" in result["title"]
    assert result["dim"] == 10 * (7 * 7 + 1) and result["client_sizes"] == [40] * 4 and result["deleted"] == [4] * 4
    assert [p["lambda"] for p in result["lambdas"]] == params["cdfl"]["convex"]["lambdas"]
    assert result["config"]["scale"] == params["scale"]
    for point in result["lambdas"]:
        assert point["original"]["grad_norm"] < 1e-10 and point["retrained"]["grad_norm"] < 1e-10
        assert point["distance"] > 0
        assert set(point["methods"]) == set(convex.METHODS)
        for method, m in point["methods"].items():
            assert m["ratio"] == pytest.approx(m["distance_to_retrained"] / point["distance"])
            assert 0 <= m["test_accuracy"] <= 100 and m["gate"] == convex.gate(method, point["lambda"])
        assert point["methods"]["central_newton"]["ratio"] < point["methods"]["alg1_hessian"]["ratio"]
    timing = json.loads((out / "t.json").read_text())
    assert timing["wall_time_s"] > 0 and len(timing["lambdas"]) == len(result["lambdas"])


def test_step_is_reproducible(stand_in, tmp_path):
    params, features, out = stand_in
    convex.step_convex(params, "synthetic", features, str(tmp_path / "again.json"))
    assert (tmp_path / "again.json").read_text() == (out / "convex.json").read_text()


def test_the_shared_hessians_give_du_global_newton(stand_in):
    """The step's centralised step (the mean of Algorithm 1's local retained Hessians) is du.global_newton's, and
    its x'* (chord Newton from there) is the minimiser from scratch."""
    params, features, _ = stand_in
    data, forget, _, _, classes = convex.load_problem(params, "synthetic", features)
    model = LogisticRegression(data.x.shape[1], classes).double()
    spec, lam, n = FlatSpec.of(model), 0.01, len(data.indices)
    x = minimiser(model, spec, data, data.keep, lam, classes).w
    cfg = du.DUConfig(curvature="hessian_exact", damping=lam, l2=lam, noise="none")
    terms = du.all_request_terms(model, spec, x.expand(n, -1).clone(), data, forget, list(range(n)), cfg, classes)
    h = sum(t.curv for t in terms.values()) / n
    central = x + du.solve(h, lam, sum(t.grad / t.denom for t in terms.values()) / n)
    assert torch.allclose(central, du.global_newton(model, spec, x, data, forget, cfg, classes), atol=1e-12)
    keep = [~f for f in forget]
    chord = minimiser(model, spec, data, keep, lam, classes, lbfgs_iter=0, start=central, hessian=h)
    assert torch.allclose(chord.w, minimiser(model, spec, data, keep, lam, classes).w, atol=1e-10)
    res = du.sample_wise(model, spec, x.expand(n, -1).clone(), data, forget, nx.complete_graph(n), list(range(n)),
                         cfg, classes=classes)
    assert torch.allclose(res.theta, du.apply_terms(x.expand(n, -1).clone(), terms, nx.complete_graph(n),
                                                    list(range(n)), cfg).theta)


def test_paper_regime_compares_du_with_rt_where_the_models_are_trained(stand_in):
    params, _, out = stand_in
    r = json.loads((out / "convex.json").read_text())["paper_regime"]
    t = params["cdfl"]["train"]
    assert (r["rounds"], r["optimizer"], r["lr"], r["lambda"]) == (t["rounds"], t["optimizer"], t["lr"], t["l2"])
    assert r["original"]["ratio"] == pytest.approx(1.0)  # the original against itself: the denominator
    assert r["original"]["distance_to_rt"] > 0
    assert r["original"]["distance_to_minimiser"] is None  # tiny: cdfl.train.l2 is not among the swept lambdas
    for m in r["methods"].values():
        for when in ("before_finetune", "after_finetune"):
            assert m[when]["ratio"] == pytest.approx(m[when]["distance_to_rt"] / r["original"]["distance_to_rt"])
            assert 0 <= m[when]["test_accuracy"] <= 100
    # the exact-Hessian step moves the models: its correction is not zero
    assert r["methods"]["alg1_hessian"]["before_finetune"]["distance_to_rt"] != r["original"]["distance_to_rt"]


def test_paper_regime_measures_the_distance_to_the_minimiser(tiny, tmp_path):
    params = {**tiny[0], "cdfl": {**tiny[0]["cdfl"]}}
    lam = params["cdfl"]["train"]["l2"]
    params["cdfl"]["convex"] = {**params["cdfl"]["convex"], "lambdas": [lam]}
    convex.step_convex(params, "synthetic", tiny[1], str(tmp_path / "c.json"))
    result = json.loads((tmp_path / "c.json").read_text())
    assert result["paper_regime"]["original"]["distance_to_minimiser"] > 0


def test_pool_refuses_a_side_that_does_not_divide():
    with pytest.raises(ValueError, match="cdfl.convex.image_side: 5 does not divide"):
        convex.pool(torch.zeros(2, 1, 28, 28), 5)
    assert convex.pool(torch.ones(2, 1, 28, 28), 14).shape == (2, 196)


def test_report_convex_table_statuses():
    from unlearning.experiments.cdfl.report import convex_table

    def point(lam, ratios):
        return {"lambda": lam, "distance": 1.0, "original": {"test_accuracy": 80.0, "grad_norm": 1e-15},
                "retrained": {"test_accuracy": 79.0, "grad_norm": 2e-15},
                "methods": {m: {"ratio": r, "test_accuracy": 79.5} for m, r in zip(convex.METHODS, ratios)}}

    result = {"dataset": "fashion_mnist", "image_side": 14, "dim": 1970, "client_sizes": [2000] * 10,
              "lambdas": [point(1e-3, [0.56, 1.1, 0.026]), point(1e-2, [0.25, 1.9, 0.03]),
                          point(0.1, [0.21, 2.4, 0.004])]}
    df = convex_table([result], "unused")
    status = {(r["lambda"], r["method"]): r["status"] for _, r in df.iterrows()}
    assert status[(1e-2, "alg1_hessian")] == "within" and status[(0.1, "alg1_hessian")] == "outside"
    assert status[(1e-2, "central_newton")] == "outside"
    assert status[(1e-3, "alg1_hessian")] == status[(1e-3, "central_newton")] == "reported"
    assert all(status[(lam, "alg1_fisher")] == "reported" for lam in (1e-3, 1e-2, 0.1))
    assert len(df) == 9 and df.gate.notna().sum() == 3
    missing = convex_table([], "not on disk")
    assert len(missing) == 3 and (missing.status == "missing: not on disk").all()


def test_report_writes_the_convex_table(stand_in, tmp_path):
    from unlearning.experiments.cdfl import report

    params, _, out = stand_in
    report.write_report(params, [], [], {}, str(tmp_path), convex=[str(out / "convex.json")])
    df = pd.read_csv(tmp_path / "convex.csv")
    assert len(df) == 3 * len(params["cdfl"]["convex"]["lambdas"])
    assert set(df.status) <= {"within", "outside", "reported"}
    md = (tmp_path / "index.md").read_text()
    assert convex.TITLE in md and "The convex stand-in (multinomial" not in md
