"""benchmarks/sglu_official.py: the official SGLU function and ours on one workload, from a clone given by path."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from conftest import ROOT
from unlearning.files import save_tensors

SCRIPT = ROOT / "benchmarks" / "sglu_official.py"

# a stand-in for the official sgd.py with its signature: every chain ends at the weights given below
FAKE = """
import numpy as np
def stochastic_gradient_descent_algorithm(init_point, dim_w, X, y, lam, sigma, device, burn_in=10000, len_list=1,
                                          step=0.1, M=1, m=0, projection=0, batch_size=0, batch_idx=None, num_class=0):
    assert num_class == 2 and projection == 0 and len(batch_idx) == len(X) and burn_in + len_list == EPOCHS
    return [np.full(dim_w, SIGN, dtype=np.float32)] * len_list
"""


def features(path, n=64, d=5):
    gen = torch.Generator().manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(n, d, generator=gen), dim=1)
    xt = torch.ones(10, d)  # every test point has a positive margin under w = +1 and a negative one under w = -1
    yt = torch.tensor([1.0] * 7 + [-1.0] * 3)
    save_tensors(path, {"x_train": x, "y_train": torch.where(x[:, 0] > 0, 1.0, -1.0), "x_test": xt, "y_test": yt},
                 {"data": "test"})


def run(tmp_path, official, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), "--official", str(official), "--features",
                           str(tmp_path / "f.safetensors"), "--out", str(tmp_path / "out.json"), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_official_chains_are_timed_and_scored_beside_ours(tmp_path):
    features(tmp_path / "f.safetensors")
    official = tmp_path / "official"
    official.mkdir()
    (official / "sgd.py").write_text(FAKE.replace("EPOCHS", "4").replace("SIGN", "-1.0"))
    done = run(tmp_path, official, "--batch", "16", "--epochs", "4", "--trials", "6", "--official-trials", "2")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert abs(result["official"]["accuracy_mean"] - 0.3) < 1e-6  # w = -1 predicts -1 everywhere: the 3 negatives of 10
    assert result["official"]["trials"] == 2 and result["ours"]["trials"] == 6
    assert result["official"]["seconds_for_trials_extrapolated"] == 6 * result["official"]["seconds_per_trial"]
    assert (result["batch"], result["epochs"], result["n"], result["d"]) == (16, 4, 64, 5)


def test_a_folder_without_the_official_code_is_refused(tmp_path):
    features(tmp_path / "f.safetensors")
    done = run(tmp_path, tmp_path)
    assert done.returncode != 0
    assert f"--official {tmp_path}: no sgd.py there; valid: a clone of Graph-COM/SGD_unlearning" in done.stderr
    assert not (tmp_path / "out.json").exists()
