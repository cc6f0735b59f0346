"""Every paper's CIFAR-10 and SVHN column through the workflow to its report, on tiny files in torchvision's formats
and on the column's own model (issue 70, item 4): PDUDT's ResNet-18 on CIFAR-10 and SVHN, CDFL's ResNet-18 on
CIFAR-10, SGLU's ResNet-18 extractor on CIFAR-10's pair and RR-DU's `resnet18_bn` on CIFAR-10. Nothing else runs them
before a user with a network does.

The files: CIFAR-10's python batches (`cifar-10-batches-py/`) and SVHN's `.mat` files (`SVHN/`) under
`data.raw_root`, with balanced random labels; the ImageNet ResNet-18 weights as torch hub caches them (a state dict
of a seeded random init, under `TORCH_HOME`). torchvision checks the md5 of the real CIFAR-10 and SVHN files, which
tiny files cannot match: the workflow's jobs run with `tests/support/` on `PYTHONPATH`, whose `sitecustomize.py`
replaces that check in `torchvision.datasets.cifar` and `.svhn` by an existence check (as `tests/test_data.py`'s
monkeypatch does in-process); nothing else in the jobs changes. Sizes: a few images a client and one round, since a
ResNet-18 step on one CPU thread costs about 0.1 s an image; what is checked is that each column runs and its report
cell is computed from it, not its numbers. Cost: 47 jobs, 189 job-seconds, 1 min 50 s alone on 2 idle cores of an
AMD EPYC with AVX-512 (2026-12-04; CDFL's cell runs sample-wise removal alone, Table I's: class-wise removal runs the
same model code on other masks, and Figure 1's job still removes a client on ResNet-18; 27 s against 42 s with all
three). The run takes the CPU's native code paths (it compares no bytes, and the portable ones about double
ResNet-18's time); each job's start is forked from the run's warm interpreter, so ResNet-18's own costs dominate.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
import yaml

from conftest import ROOT, checkout_copy, tiny_params
from unlearning import isa

pytestmark = [pytest.mark.columns, pytest.mark.dense]  # `pytest -m columns` runs these alone
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
SUPPORT = ROOT / "tests" / "support"
PER_CLASS = {"train": 24, "test": 2}  # 240 training and 20 test images of each dataset
TARGETS = ("reports/pdudt/index.md", "reports/cdfl/index.md", "reports/sglu/index.md", "reports/rrdu/index.md")


def _labels(per_class: int, rng) -> np.ndarray:
    y = np.repeat(np.arange(10), per_class)
    rng.shuffle(y)
    return y


def write_cifar10(raw_root: Path, rng) -> None:
    """data_batch_1..5, test_batch and batches.meta: dicts of uint8 rows (1024 red, 1024 green, 1024 blue bytes)
    and int labels, pickled as torchvision reads them."""
    folder = raw_root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    train = _labels(PER_CLASS["train"], rng)
    batches = [(f"data_batch_{k}", part) for k, part in enumerate(np.array_split(train, 5), 1)]
    for name, y in [*batches, ("test_batch", _labels(PER_CLASS["test"], rng))]:
        batch = {"batch_label": name, "data": rng.integers(0, 256, size=(len(y), 3072), dtype=np.uint8),
                 "labels": y.tolist(), "filenames": [f"{i}.png" for i in range(len(y))]}
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [f"class{i}" for i in range(10)],
                                                        "num_cases_per_batch": len(batches[0][1])}))


def write_svhn(raw_root: Path, rng) -> None:
    """train_32x32.mat and test_32x32.mat: X uint8 [32, 32, 3, N], y [N, 1] in 1..10 (10 for the digit 0)."""
    folder = raw_root / "SVHN"
    folder.mkdir(parents=True)
    for split, per_class in PER_CLASS.items():
        y = _labels(per_class, rng)
        scipy.io.savemat(folder / f"{split}_32x32.mat",
                         {"X": rng.integers(0, 256, size=(32, 32, 3, len(y)), dtype=np.uint8),
                          "y": np.where(y == 0, 10, y).astype(np.uint8)[:, None]})


def write_resnet18_weights(torch_home: Path) -> None:
    """A seeded random ResNet-18's state dict where torch hub keeps IMAGENET1K_V1 (the file name it looks for)."""
    from torchvision.models import ResNet18_Weights, resnet18

    checkpoints = torch_home / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        torch.save(resnet18().state_dict(), checkpoints / os.path.basename(ResNet18_Weights.IMAGENET1K_V1.url))


def columns_params(base: dict) -> dict:
    """The tiny configuration with the image columns of each paper on their own models, at the least size that
    runs every step."""
    shipped = copy.deepcopy(base)
    params = tiny_params(base)
    for section in ("pdudt", "sglu", "rrdu", "cdfl"):
        params[section]["paper"] = {}
    pdudt = params["pdudt"]  # the paper's method and retraining, on 3 clients
    pdudt.update(datasets=["cifar10", "svhn"], models={"cifar10": "resnet18", "svhn": "resnet18"}, by_dataset={},
                 clients=3, methods=["retrain", "pdudt"], sigmas=[0.001], default_sigma=0.001)
    pdudt["settings"]["datasets"] = []
    pdudt["forget"].update(client=2)
    pdudt["partition"].update(train_per_client=8)
    pdudt["train"].update(rounds=1, batch_size=2, checkpoint_every=1)
    pdudt["pdudt_es"].update(es_rounds=1)
    pdudt["subsequent"].update(rounds=1, eval_every=1)
    pdudt["eval"]["mia_samples"] = 8
    pdudt["mia"].update(shadow_models=1, shadow_epochs=1, repetitions=2, max_samples=8)
    pdudt["timing"]["repeats"] = 1
    cdfl = params["cdfl"]  # sample-wise removal (Table I's cell), one damping and one sigma; Figure 1 client-wise
    cdfl.update(datasets=["cifar10"], models={"cifar10": "resnet18"}, clients=3)
    cdfl["partition"].update(train_per_client=8, min_size=4)
    cdfl["train"].update(rounds=1, batch_size=8)
    cdfl["unlearn"].update(granularities=["sample"], sample_fraction=0.25, client_weights=["newton"])
    cdfl["unlearn"]["sequential"].update(requests=2)
    cdfl["sweeps"].update(sigmas=[0.001], dampings=[10.0])
    cdfl["calibration"].update(optimizers=["sgd"], min_rounds=1, max_rounds=1)
    cdfl["synthetic_timing"]["datasets"] = []
    cdfl["eval"].update(test_images=10, mia_fit=8)
    sglu = params["sglu"]  # the synthetic column stays: the common ground's centralized tables read its features
    sglu.update(datasets=["synthetic", "cifar10"], truncate_to=8, lam_per_n=0.01)
    rrdu = params["rrdu"]  # Table 3 at p = 1; the ablations less the sensitivity reading (the paper scale's)
    rrdu.update(datasets={"cifar10": shipped["rrdu"]["datasets"]["cifar10"]}, clients=3, train_per_client=4,
                sensitivity=False, table3={"ps": [1.0], "semantics": []},
                sweeps={"rho": [5.0], "L": [0.1], "epsilon": [0.1], "delta": [1.0e-4]})
    rrdu["train"].update(hops=2, batch_size=4)
    rrdu["unlearn"].update(hops=2, streams=1)
    rrdu["backdoor"].update(test_size=10)
    rrdu["eval"].update(test_images=10, every=2)
    return params


@pytest.fixture(scope="module")
def columns_run(tmp_path_factory) -> Path:
    """The four papers' reports on the image columns, `snakemake --cores 2`, in a copy of the checkout."""
    workdir = checkout_copy(tmp_path_factory.mktemp("columns"))
    rng = np.random.default_rng(70)
    write_cifar10(workdir / "data" / "raw", rng)
    write_svhn(workdir / "data" / "raw", rng)
    write_resnet18_weights(workdir / "torch_home")
    params = columns_params(yaml.safe_load((ROOT / "params.yaml").read_text()))
    (workdir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # the CPU's native code paths: this run compares no bytes, and the portable ones double ResNet-18's time
    env = {**isa.environment("native"), "PYTHONPATH": f"{workdir / 'src'}{os.pathsep}{SUPPORT}",
           "TORCH_HOME": str(workdir / "torch_home")}
    run = subprocess.run([str(SNAKEMAKE), "--cores", "2", *TARGETS], cwd=workdir, capture_output=True, text=True,
                         env=env)
    (workdir / "snakemake.log").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


def _rows(path: Path, **match: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if all(r[k] == v for k, v in match.items())]


def _computed(rows: list[dict[str, str]], value: str) -> bool:
    return bool(rows) and all(r[value] != "" and not r["status"].startswith("missing") for r in rows)


def test_the_tiny_files_are_what_the_columns_trained_on(columns_run):
    """The processed tensors are the tiny files' images (SVHN's label 10 read as the digit 0), and SGLU's pair went
    through the ResNet-18 extractor (512 features)."""
    from safetensors import safe_open

    for name in ("cifar10", "svhn"):
        with safe_open(columns_run / "data" / "processed" / f"{name}.safetensors", "pt") as f:
            assert f.get_slice("x_train").get_shape() == [10 * PER_CLASS["train"], 3, 32, 32]
            assert sorted(f.get_tensor("y_train").bincount().tolist()) == [PER_CLASS["train"]] * 10
    with safe_open(columns_run / "data" / "sglu" / "cifar10.safetensors", "pt") as f:
        meta = json.loads(f.metadata()["json"])
        assert meta["extractor"] == "resnet18" and f.get_slice("x_train").get_shape()[1] == 512


def test_each_column_trains_its_papers_model(columns_run):
    from safetensors import safe_open

    from unlearning.models import build_model

    resnet18 = sum(p.numel() for p in build_model("resnet18", (3, 32, 32), 10).parameters())
    for name in ("cifar10", "svhn"):
        with safe_open(columns_run / "artifacts" / f"pdudt_{name}" / "pretrain" / "models.safetensors", "pt") as f:
            assert f.get_slice("theta").get_shape()[1] == resnet18
    models = {"cdfl/cifar10/iid_ring_s0.json": "resnet18", "rrdu/cifar10/seed0.json": "resnet18_bn"}
    for path, model in models.items():
        assert json.loads((columns_run / "results" / path).read_text())["model"] == model


def test_each_column_reaches_its_report_cell(columns_run):
    """Each paper's report computes its image columns' cells from these runs (none shows as missing)."""
    reports = columns_run / "reports"
    for name in ("cifar10", "svhn"):
        assert _computed(_rows(reports / "pdudt" / "table2.csv", dataset=name, method="pdudt"), "seconds"), name
    ring = _rows(reports / "cdfl" / "table1.csv", topology="ring", dataset="cifar10", metric="RT test acc")
    assert _computed(ring, "ours")
    assert _computed(_rows(reports / "sglu" / "fig3a.csv", dataset="cifar10"), "mean")
    assert _computed(_rows(reports / "rrdu" / "table3.csv", dataset="cifar10"), "clean")
