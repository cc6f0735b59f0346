"""scripts/gpu/cuda_checks.sh refuses bad input before it runs anything (it is run on a lent GPU, minutes at a time)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu" / "cuda_checks.sh"


def test_a_misspelt_phase_is_refused_before_any_phase_runs(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(SCRIPT), str(out), "tests", "tiyn"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 2
    assert "unknown phase tiyn; valid: tests, tiny, engine" in run.stderr
    assert not out.exists()  # nothing ran, nothing written


@pytest.mark.slow  # imports torch in a process (seconds)
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_without_a_cuda_device_it_says_so_and_runs_nothing(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(SCRIPT), str(out), "engine"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert "torch sees no CUDA device; valid: a machine with one" in run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["summary.txt"]


def test_the_tiny_phase_without_snakemake_is_refused_before_any_phase_runs(tmp_path):
    python = tmp_path / "python"  # a Python that lacks snakemake and has everything else
    python.write_text('#!/bin/sh\ncase "$*" in *"import snakemake"*) exit 1 ;; esac\nexec %s "$@"\n' % sys.executable)
    python.chmod(0o755)
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(SCRIPT), str(out), "tests", "tiny"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30, env={**os.environ, "PYTHON": str(python), "DEVICE": "cpu"})
    assert run.returncode == 2
    assert f"{python} cannot import snakemake, which the tiny phase runs" in run.stderr
    assert not out.exists()


@pytest.mark.parametrize("official, env, message", [
    ("nowhere", {}, "no sgd.py in nowhere; valid: a clone of Graph-COM/SGD_unlearning or a folder holding its sgd.py"),
    ("OFFICIAL", {"SCALE": "papers"}, "SCALE=papers; valid: quick, paper"),
])
def test_sglu_paper_refuses_bad_input_before_anything_runs(tmp_path, official, env, message):
    folder = tmp_path / "official"
    folder.mkdir()
    (folder / "sgd.py").write_text("# the official code\n")
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "sglu_paper.sh"), str(out),
                          str(folder) if official == "OFFICIAL" else official], cwd=ROOT, capture_output=True,
                         text=True, timeout=30, env={**os.environ, **env})
    assert run.returncode == 2
    assert message in run.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, env, message", [
    ([], {}, "no target; valid: result files, e.g. results/rrdu/fashion_mnist/seed0.json"),
    (["reports/rrdu/index.md"], {}, "reports/rrdu/index.md; valid: result files under results/<experiment>/"),
    (["results/rrdu/fashion_mnist/seed0.json"], {"LIMIT_S": "7m"}, "LIMIT_S=7m; valid: whole seconds"),
    (["results/r2d/fmnist_users_resnet/s0.json"], {"CONFIGFILE": "scripts/gpu/r2d_resnet.yml"},
     "CONFIGFILE=scripts/gpu/r2d_resnet.yml not found; valid: a YAML file of parameters"),
])
def test_paper_jobs_refuses_bad_input_before_anything_runs(tmp_path, args, env, message):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu" / "paper_jobs.sh"), str(out), *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=30, env={**os.environ, **env})
    assert run.returncode == 2
    assert message in run.stderr
    assert not out.exists()


def test_the_gpu_parameter_files_are_valid_over_params_yaml(tmp_path):
    """Each scripts/gpu/*.yaml, merged over params.yaml as Snakemake's --configfile merges it, passes check-params."""
    import yaml
    from snakemake.utils import update_config

    from unlearning.config import check_params

    files = sorted((ROOT / "scripts" / "gpu").glob("*.yaml"))
    assert files
    for path in files:
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        update_config(params, yaml.safe_load(path.read_text()))
        check_params({**params, "scale": "paper"})
