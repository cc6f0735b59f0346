"""Regression of the reported numbers: the quick scale on real Fashion-MNIST, against golden files.

The suite re-runs the whole workflow with the shipped params.yaml (scale quick) in a scratch
directory and compares every number in tests/regression/spine_quick.json within its tolerance.
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
RAW = ROOT / "data" / "raw" / "FashionMNIST" / "raw" / "train-images-idx3-ubyte"


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


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    assert RAW.is_file(), f"{RAW} missing: run `bash scripts/bootstrap.sh` (it installs Fashion-MNIST)"
    work = tmp_path_factory.mktemp("quick")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["scale"] == "quick", "the golden numbers are for scale: quick"
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
        shutil.copy(work / "reports" / "index.md", GOLDEN.with_suffix(".md"))
        GOLDEN_PDUDT.write_text(json.dumps({"scale": "quick", "tolerance": {**PDUDT_TOLERANCE, **GAP_TOLERANCE},
                                            "variants": reported_pdudt(work / "results" / "pdudt_fashion_mnist")},
                                           indent=2, sort_keys=True) + "\n")
        shutil.copy(work / "reports" / "pdudt" / "index.md", GOLDEN_PDUDT.with_suffix(".md"))
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
