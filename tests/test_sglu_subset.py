"""SGLU's MNIST column on a subset of the paper's data (issue 38): the runs' own accounting, the cells it cannot
certify, the report's statuses and claims."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
import yaml

from conftest import ROOT, tiny_params
from unlearning.config import ParamsError
from unlearning.experiments.sglu import report
from unlearning.experiments.sglu import steps as ss
from unlearning.files import save_tensors
from unlearning.report.compare import subset_status


def _features(path, n: int = 64, d: int = 6, data: str = "mnist_5k") -> str:
    gen = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n + 40,), generator=gen).float() * 2 - 1
    x = torch.randn(n + 40, d, generator=gen) + 0.8 * y[:, None]
    x = x / x.norm(dim=1, keepdim=True)
    save_tensors(path, {"x_train": x[:n], "y_train": y[:n], "x_test": x[n:], "y_test": y[n:]},
                 {"n": n, "d": d, "dataset": "mnist", "data": data})
    return str(path)


@pytest.fixture
def sglu_params() -> dict:
    params = tiny_params(yaml.safe_load((ROOT / "params.yaml").read_text()))
    params["sglu"].update(lam_per_n=1e-6, burn_in={"32": 10, "full": 60})  # the paper's lambda: n = 64 cannot certify
    return params


def test_the_subsets_accounting_lists_the_cells_no_sigma_certifies(sglu_params):
    """At the paper's lambda = 1e-6 n, one epoch certifies nothing at a small n: the strict accounting (params.yaml
    itself) stops with the key to change; the subset's records each cell with its least sigma and why."""
    cfg = ss.config(sglu_params)
    with pytest.raises(ParamsError, match="no sigma <= 10 certifies"):
        ss.accounting(cfg, "mnist", 64, 6, None)
    lenient = ss.accounting(cfg, "mnist", 64, 6, None, strict=False)
    rows = lenient["fig3a_sglu"]
    assert rows and all(r["sigma"] is None and r["least_sigma"] > 10 for r in rows)
    assert "n = 64" in rows[0]["untestable"] and "lambda = 6.4e-05" in rows[0]["untestable"]


def test_a_subsets_features_give_the_runs_accounting_and_table3_keeps_the_papers_n(sglu_params, tmp_path):
    features = _features(tmp_path / "f.safetensors")
    ss.step_accounting(sglu_params, "mnist", features, str(tmp_path / "subset.json"))
    tiny = tiny_params(yaml.safe_load((ROOT / "params.yaml").read_text()))  # its lambda certifies the paper's n
    ss.step_accounting(tiny, "mnist", None, str(tmp_path / "paper.json"))
    subset, paper = (json.loads((tmp_path / f"{k}.json").read_text()) for k in ("subset", "paper"))
    assert (subset["n"], subset["data"]) == (64, "mnist_5k") and any(r["sigma"] is None for r in subset["fig3a_sglu"])
    assert (paper["n"], paper["data"]) == (ss.PAPER_N["mnist"][0], "mnist")
    assert all(r["sigma"] is not None for r in paper["table3"])
    with pytest.raises(ParamsError):  # the column's own data: the same cells are a params error
        ss.step_accounting(sglu_params, "mnist", _features(tmp_path / "own.safetensors", data="mnist"),
                           str(tmp_path / "own.json"))


def test_figures_run_only_the_cells_the_subsets_accounting_can_test(sglu_params, tmp_path):
    """Figure 3a runs no SGLU cell without a sigma (LU and D2D still run); Figure 3c runs no sigma whose every
    removal needs K_s >= T epochs, and runs the others."""
    features = _features(tmp_path / "f.safetensors")
    ss.step_accounting(sglu_params, "mnist", features, str(tmp_path / "acc.json"))
    ss.step_fig3a(sglu_params, "mnist", features, str(tmp_path / "acc.json"), str(tmp_path / "a.json"),
                  str(tmp_path / "ta.json"))
    a = json.loads((tmp_path / "a.json").read_text())
    assert a["data"] == "mnist_5k" and a["chance"] >= 0.5
    assert {r["method"] for r in a["rows"]} == {"lu", "d2d"}
    assert {(u["b"], u["epsilon"]) for u in a["untestable"]} == {
        (b, e) for b in sglu_params["sglu"]["fig3a"]["batch_sizes"] for e in sglu_params["sglu"]["fig3a"]["epsilons"]}

    account = json.loads((tmp_path / "acc.json").read_text())
    variant, f3c = sglu_params["sglu"]["accounting"], sglu_params["sglu"]["fig3c"]
    slow, fast = (str(s) for s in f3c["sigmas"])
    for b in f3c["batch_sizes"]:
        requests, T = len(account["fig3d"][variant][str(b)][slow]), sglu_params["sglu"]["burn_in"][str(b)]
        account["fig3d"][variant][str(b)][slow] = [T] * requests  # every removal costs a retraining
        account["fig3d"][variant][str(b)][fast] = [1] * requests
    (tmp_path / "acc_c.json").write_text(json.dumps(account))
    ss.step_fig3c(sglu_params, "mnist", features, str(tmp_path / "acc_c.json"), str(tmp_path / "c.json"),
                  str(tmp_path / "tc.json"))
    c = json.loads((tmp_path / "c.json").read_text())
    assert {r["sigma"] for r in c["rows"]} == {float(fast)}
    assert {u["sigma"] for u in c["untestable"]} == {float(slow)} and "K_s >= T" in c["untestable"][0]["reason"]


def _run(rows: list[dict], data: str = "mnist_5k", untestable: list[dict] | None = None) -> dict:
    return {"dataset": "mnist", "data": data, "n": 512, "chance": 0.5, "rows": rows, "untestable": untestable or []}


def _cell(method: str, model: str, b, eps: float, mean: float, std: float = 0.01) -> dict:
    return {"method": method, "model": model, "b": b, "epsilon": eps, "sigma": 1.0, "mean": mean, "std": std,
            "trials": 4}


LABEL = "mnist (real MNIST, 5,000-digit subset)"


def test_a_subsets_cells_show_the_papers_values_beside_them_and_are_not_compared():
    untestable = [{"method": "sglu", "b": 128, "epsilon": 0.05, "least_sigma": 12035.6, "reason": "no sigma <= 10"}]
    f3a = report.fig3a([_run([_cell("lu", "unlearned", "full", 0.05, 0.55)], untestable=untestable)], {})
    lu = f3a[f3a.method == "lu K=1"].iloc[0]
    paper = pd.read_csv(ROOT / "reference" / "sglu" / "fig3a.csv")
    expected = paper[(paper.dataset == "mnist") & (paper.method == "lu K=1") & (paper.epsilon == 0.05)]["mean"]
    assert lu.dataset == LABEL and lu.status == subset_status() and lu.paper_mean == float(expected.iloc[0])
    listed = f3a[f3a.method.isin(["sglu b=128", "retrain b=128"])]
    assert len(listed) == 2 and listed["mean"].isna().all()
    assert (listed.status == "not testable: not run: no sigma <= 10").all()
    assert listed[listed.method == "sglu b=128"].paper_mean.iloc[0] == 0.817  # reference/sglu/fig3a.csv

    fashion = report.fig3a([{**_run([_cell("lu", "unlearned", "full", 0.05, 0.55)], data="fashion_mnist"),
                             "dataset": "fashion_mnist"}], {})
    assert fashion.paper_mean.isna().all() and fashion.status.iloc[0].startswith("stand-in")


def test_claims_on_cells_not_run_are_not_testable_and_a_curve_at_chance_is_not_judged():
    untestable = [{"method": "sglu", "b": b, "epsilon": e, "least_sigma": 100.0, "reason": "no sigma <= 10"}
                  for b in (128, "full") for e in (0.05, 5)]
    rows = [_cell("lu", "unlearned", "full", 0.05, 0.55, 0.05), _cell("lu", "unlearned", "full", 5, 0.80, 0.01),
            _cell("d2d", "I=1", "full", 0.05, 0.56, 0.04), _cell("d2d", "I=1", "full", 5, 0.46, 0.04)]
    f3a = report.fig3a([_run(rows, untestable=untestable)], {})
    f3c = report.fig3c([{**_run([], untestable=[{"b": 128, "sigma": 0.5, "epochs": 96600, "T": 20,
                                                  "reason": "every request needs K_s >= T"}]),
                         "variant": "paper", "requests": 100}], {})
    verdicts = report.claims(f3a, f3c).set_index("claim")
    sglu_claims = [c for c in verdicts.index if c.lower().startswith("sglu") or c.startswith("Figure 3a")]
    assert len(sglu_claims) == 6 and (verdicts.loc[sglu_claims, "status"] == "not testable").all()
    assert "no sigma <= 10" in verdicts.loc[sglu_claims[0], "reason"]
    rise = "accuracy rises with epsilon (no drop beyond twice the standard error)"
    lu = verdicts.loc[f"lu K=1: {rise}"]  # 0.55 (at chance) -> 0.80: one point that can move is no trend (issue 69)
    assert lu.status == "uninformative" and "only 1 of 2 points leaves chance" in lu.reason
    d2d = verdicts.loc[f"d2d I=1: {rise}"]  # 0.56 -> 0.46: a drop, but from a point at chance
    assert d2d.status == "not testable" and "0 of 2 points above chance" in d2d.reason
    fig3c = verdicts.loc["Figure 3c: unlearned within 0.01 of retrained in every cell"]
    assert fig3c.status == "uninformative" and "K_s >= T" in fig3c.reason

    above = report.fig3a([_run([_cell("d2d", "I=1", "full", 0.05, 0.90), _cell("d2d", "I=1", "full", 5, 0.60)])], {})
    assert report.claims(above, f3c.iloc[:0]).set_index("claim").loc[f"d2d I=1: {rise}", "status"] == "fails"
    rising = report.fig3a([_run([_cell("d2d", "I=1", "full", 0.05, 0.70), _cell("d2d", "I=1", "full", 5, 0.80)])], {})
    assert report.claims(rising, f3c.iloc[:0]).set_index("claim").loc[f"d2d I=1: {rise}", "status"] == "holds"


def test_the_subsets_column_is_labelled_on_the_front_page(tmp_path):
    pd.DataFrame({"dataset": [LABEL], "status": [subset_status()]}).to_csv(tmp_path / "fig3a.csv", index=False)
    assert report.summary(tmp_path).title == "SGLU (Chien et al., 2024); MNIST: real MNIST, 5,000-digit subset"
