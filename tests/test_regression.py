"""Regression of the reported numbers: the quick scale on real Fashion-MNIST, against golden files.

The suite re-runs the whole workflow with the shipped params.yaml (scale quick) in a scratch
directory and compares every number in tests/regression/{spine,pdudt,sglu}_quick.json within its tolerance.
To update the golden file on purpose (a change that is meant to move the numbers):

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_regression.py

and commit the new file with the reason in the commit message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

GOLDEN = ROOT / "tests" / "regression" / "spine_quick.json"
GOLDEN_PDUDT = ROOT / "tests" / "regression" / "pdudt_quick.json"
PDUDT_TOLERANCE = {  # per variant (checkpoint, sigma); MIA precision in points
    "client_mean_test_accuracy": 0.01, "averaged_model_test_accuracy": 0.01, "forget_accuracy": 0.01,
    "mia_loss_threshold_auc": 0.02, "mia_shadow.precision_mean": 10.0, "mia_shadow.auc_mean": 5.0,
}
GAP_TOLERANCE = {"averaged_model_gap": 0.01}  # spec 7-N gaps (l2 norm of a parameter difference)
TOLERANCE = {  # absolute; accuracies move by one test sample = 1e-4, counts must not move
    "test_accuracy": 0.01, "forget_accuracy": 0.01, "retain_accuracy": 0.01, "test_loss": 0.02,
    "mia_loss_threshold_auc": 0.02, "grad_evals": 0, "bytes_read": 0, "forget_samples": 0, "mia_samples": 0,
}
GOLDEN_SGLU = ROOT / "tests" / "regression" / "sglu_quick.json"
SGLU_TOLERANCE = {  # accounting is exact (sigma to 1e-6 of itself, counts not at all); accuracies over 4 trials
    "sigma": 1e-6, "total": 0, "mean": 0.02, "std": 0.02, "unlearned_mean": 0.02, "retrained_mean": 0.02,
}
RAW = ROOT / "data" / "raw" / "FashionMNIST" / "raw" / "train-images-idx3-ubyte"


def skip_without_device_goldens(device_choice: str) -> None:
    """The goldens above were recorded on the CPU. A workflow that runs on CUDA (params.yaml's `device`; auto
    = CUDA where torch sees it) is compared only with goldens recorded there, tests/regression/*_cuda.json;
    without them the regression skips and says why, never comparing a CUDA run with CPU numbers."""
    from unlearning.experiment import pick_device

    if pick_device(device_choice).type == "cuda" and not any((ROOT / "tests" / "regression").glob("*_cuda.json")):
        pytest.skip(f"device: {device_choice} runs the workflow on CUDA and tests/regression holds no *_cuda.json "
                    "goldens; a CUDA run is not compared with the CPU goldens (set device: cpu in params.yaml to "
                    "compare on the CPU)")


def reported(results_dir: Path) -> dict:
    out = {}
    for path in sorted(results_dir.glob("*.json")):
        result = json.loads(path.read_text())
        numbers = {k: result[k] for k in TOLERANCE}
        numbers.update({f"per_class_accuracy.{c}": v for c, v in result["per_class_accuracy"].items()})
        out[result["method"]] = numbers
    return out


def reported_pdudt(results_dir: Path) -> dict:
    out = {}
    for path in sorted(results_dir.glob("*.json")):
        result = json.loads(path.read_text())
        if path.stem == "gaps":
            out.update({f"gaps.{m}": {k: g[k] for k in GAP_TOLERANCE} for m, g in result["methods"].items()})
            continue
        groups = {result["method"]: result["checkpoints"], "original_all": result.get("all_clients", {})}
        for method, checkpoints in groups.items():
            for checkpoint, variants in checkpoints.items():
                for v in variants:
                    key = f"{method}.{checkpoint}.sigma={v['sigma']}"
                    out[key] = {k: (v[k.split(".")[0]][k.split(".")[1]] if "." in k else v[k])
                                for k in PDUDT_TOLERANCE}
    return out


def reported_sglu(results_dir: Path) -> dict:
    """Every SGLU number: Table 3 sigmas, Figure 3b/3d totals, Figure 3a/3c accuracies, per dataset."""
    out = {}
    for folder in sorted(results_dir.iterdir()):
        ds = folder.name
        acc = json.loads((folder / "accounting.json").read_text())
        out.update({f"{ds}.table3.b={r['b']}.eps={r['epsilon']}": {"sigma": r["sigma"]} for r in acc["table3"]})
        b3 = acc["fig3b"]
        out[f"{ds}.fig3b.d2d"] = {"total": sum(b3["d2d"])}
        out.update({f"{ds}.fig3b.lu.S={S}": {"total": sum(ks)} for S, ks in b3["lu"].items()})
        out.update({f"{ds}.fig3b.{v}.b={b}": {"total": sum(ks)}
                    for v, per in b3["sglu"].items() for b, ks in per.items()})
        out.update({f"{ds}.fig3d.{v}.b={b}.sigma={s}": {"total": sum(ks)} for v, per in acc["fig3d"].items()
                    for b, per_s in per.items() for s, ks in per_s.items()})
        if (folder / "fig3a.json").is_file():
            for r in json.loads((folder / "fig3a.json").read_text())["rows"]:
                out[f"{ds}.fig3a.{r['method']}.{r['model']}.b={r['b']}.eps={r['epsilon']}"] = {
                    "mean": r["mean"], "std": r["std"]}
            for r in json.loads((folder / "fig3c.json").read_text())["rows"]:
                out[f"{ds}.fig3c.b={r['b']}.sigma={r['sigma']}.projection={r['projection']}"] = {
                    "unlearned_mean": r["unlearned"]["mean"], "retrained_mean": r["retrained"]["mean"],
                    "total": r["epochs"]}
    return out


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    assert RAW.is_file(), f"{RAW} missing: run `bash scripts/bootstrap.sh` (it installs Fashion-MNIST)"
    work = tmp_path_factory.mktemp("quick")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["scale"] == "quick", "the golden numbers are for scale: quick"
    skip_without_device_goldens(params["device"])
    params["data"]["raw_root"] = str(ROOT / params["data"]["raw_root"])
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    snakemake = os.path.join(os.path.dirname(sys.executable), "snakemake")
    run = subprocess.run([snakemake, "--cores", "2", "-d", str(work), "-s", str(ROOT / "Snakefile")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps({"scale": "quick", "tolerance": TOLERANCE,
                                      "methods": reported(work / "results" / "spine")},
                                     indent=2, sort_keys=True) + "\n")
        shutil.copy(work / "reports" / "spine" / "index.md", GOLDEN.with_suffix(".md"))
        GOLDEN_PDUDT.write_text(json.dumps({"scale": "quick", "tolerance": {**PDUDT_TOLERANCE, **GAP_TOLERANCE},
                                            "variants": reported_pdudt(work / "results" / "pdudt_fashion_mnist")},
                                           indent=2, sort_keys=True) + "\n")
        shutil.copy(work / "reports" / "pdudt" / "index.md", GOLDEN_PDUDT.with_suffix(".md"))
        GOLDEN_SGLU.write_text(json.dumps({"scale": "quick", "tolerance": SGLU_TOLERANCE,
                                           "numbers": reported_sglu(work / "results" / "sglu")},
                                          indent=2, sort_keys=True) + "\n")
        shutil.copy(work / "reports" / "sglu" / "index.md", GOLDEN_SGLU.with_suffix(".md"))
    return work


@pytest.fixture(scope="module")
def quick_numbers(quick_run) -> dict:
    return reported(quick_run / "results" / "spine")


def test_pdudt_quick_numbers_match_golden(quick_run):
    golden = json.loads(GOLDEN_PDUDT.read_text())["variants"]
    got = reported_pdudt(quick_run / "results" / "pdudt_fashion_mnist")
    assert got.keys() == golden.keys()
    tolerance = {**PDUDT_TOLERANCE, **GAP_TOLERANCE}
    moved = [f"{variant}.{key}: {got[variant][key]} (golden {expected}, tolerance {tolerance[key]})"
             for variant, numbers in golden.items() for key, expected in numbers.items()
             if (got[variant][key] is None) != (expected is None)
             or (expected is not None and abs(got[variant][key] - expected) > tolerance[key])]
    assert not moved, "numbers moved beyond tolerance:\n" + "\n".join(moved)


def test_sglu_quick_numbers_match_golden(quick_run):
    golden = json.loads(GOLDEN_SGLU.read_text())["numbers"]
    got = reported_sglu(quick_run / "results" / "sglu")
    assert got.keys() == golden.keys()
    moved = [f"{cell}.{key}: {got[cell][key]} (golden {expected}, tolerance {SGLU_TOLERANCE[key]})"
             for cell, numbers in golden.items() for key, expected in numbers.items()
             if abs(got[cell][key] - expected) > SGLU_TOLERANCE[key]]
    assert not moved, "numbers moved beyond tolerance:\n" + "\n".join(moved)


def test_sglu_quick_scale_reproduces_the_papers_accounting(quick_run):
    """Issue 4's acceptance, read from the report the quick scale builds: Table 3, Figures 3b and 3d."""
    import pandas as pd

    report = quick_run / "reports" / "sglu"
    table3 = pd.read_csv(report / "table3.csv")
    assert (table3[table3.dataset.isin(["mnist", "cifar10"])].status == "within").sum() == 24
    for name, expected in (("fig3b", 8), ("fig3d", 40)):
        table = pd.read_csv(report / f"{name}.csv")
        compared = table[table.paper_total.notna() & (table.status.isin(["within", "outside"]))]
        assert len(compared) == expected and (compared.status == "within").all(), compared


def test_quick_scale_numbers_match_golden(quick_numbers):
    golden = json.loads(GOLDEN.read_text())
    assert quick_numbers.keys() == golden["methods"].keys()
    moved = []
    for method, numbers in golden["methods"].items():
        for key, expected in numbers.items():
            got = quick_numbers[method][key]
            tol = TOLERANCE.get(key.split(".")[0], 0.01 if key.startswith("per_class") else 0)
            if got is None or expected is None:
                ok = got is expected
            else:
                ok = abs(got - expected) <= tol
            if not ok:
                moved.append(f"{method}.{key}: {got} (golden {expected}, tolerance {tol})")
    assert not moved, "numbers moved beyond tolerance:\n" + "\n".join(moved)


def test_forgetting_is_visible_at_quick_scale(quick_numbers):
    """The spine's point: retraining removes client 9 (which holds class 9), fine-tuning only partly."""
    original, retrain, finetune = (quick_numbers[m] for m in ("original", "retrain", "finetune"))
    assert original["forget_accuracy"] > 0.5
    assert retrain["forget_accuracy"] < 0.1
    assert retrain["forget_accuracy"] <= finetune["forget_accuracy"] <= original["forget_accuracy"]
