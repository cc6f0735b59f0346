"""DVC on top of Snakemake, in a temporary copy of the repository on the tiny config: `dvc repro` on a tree Snakemake
has built records it and runs no job, then does nothing; a parameter or a source module re-runs exactly its
dependents; `dvc exp run -S` shows up in `dvc exp show`; `dvc push` / `dvc pull` restore a gradient history byte for
byte. The copy is the session's tiny run (conftest's `tiny_run`, run in a copy of the checkout), so the tiny
workflow is not built a second time; the stages' Snakemake builds what a change touches in the tests below."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

BIN = Path(sys.executable).parent
SGLU_RULES = {"sglu_features", "sglu_accounting", "sglu_subset_accounting", "sglu_run", "sglu_report"}
TARGETS = {"all", "data", "experiments"}  # the stages' Snakemake targets
HISTORY = "artifacts/spine/pretrain/history/grads.npy"
FRONT = {"provenance", "index"}  # the run's provenance record and the front page follow every result


def run(repo: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(list(args), cwd=repo, capture_output=True, text=True, env=env)
    if check:
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def jobs_run(output: str) -> set[str]:
    """The Snakemake rules that ran, from the job headers Snakemake prints."""
    return set(re.findall(r"^(?:local)?rule (\w+):$", output, flags=re.M)) - TARGETS


def edit_params(repo: Path, section: str, key: str, value) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params[section][key] = value
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture(scope="module")
def repo(tiny_run, tmp_path_factory) -> Path:
    """A git + DVC copy of the session's tiny run (the checkout's files, the tiny config and every output, with
    their modification times and Snakemake's metadata), with a local remote, recorded by a first `dvc repro`."""
    base = tmp_path_factory.mktemp("dvc")
    repo = base / "repo"
    shutil.copytree(tiny_run, repo, symlinks=True)
    (repo / "snakemake.log").unlink()
    run(repo, "git", "init", "-q")
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "copy")
    run(repo, "dvc", "remote", "add", "-f", "-d", "local", str(base / "storage"))
    repo.joinpath("first_repro.log").write_text(run(repo, "dvc", "repro"))
    return repo


def test_stages_track_all_parameters_and_cover_every_report():
    """Nothing kept in sync by hand: every stage tracks all of params.yaml (so its Snakemake target can read
    any section), and every output of `rule all` lies under a stage's output."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = [next(iter(o)) if isinstance(o, dict) else o for s in stages.values() for o in s["outs"]]
    for name, stage in stages.items():
        assert {"params.yaml": None} in stage["params"], name
        assert {"src/unlearning", "Snakefile", "workflow"} <= set(stage["deps"]), name
    snakefile = (ROOT / "Snakefile").read_text()
    rule_all = re.search(r"rule all:\n    input:\n((?:        .*\n)+)", snakefile).group(1)
    for target in re.findall(r'"([^"]+)"', rule_all):
        assert any(target == o or target.startswith(o + "/") for o in outs), target
    for name, stage in stages.items():
        assert stage["cmd"].split()[-1] in TARGETS, name


def test_repro_records_a_built_tree_then_does_nothing(repo):
    """DVC runs every stage's command (Snakemake on the stage's target) and records the outputs; Snakemake finds
    the tiny run's outputs up to date, so no job runs. From scratch, those commands are the tiny run's own."""
    first = (repo / "first_repro.log").read_text()
    for stage in ("data", "experiments", "reports"):
        assert f"Running stage '{stage}'" in first, first[-3000:]
    assert not jobs_run(first), sorted(jobs_run(first))
    assert set(yaml.safe_load((repo / "dvc.lock").read_text())["stages"]) == {"data", "experiments", "reports"}
    result = json.loads((repo / "results" / "spine" / "retrain.json").read_text())
    assert result["config"]["scale"] == "quick" and len(result["config"]["sha256"]) == 16
    for report in ("reports/spine/index.md", "reports/pdudt/index.md", "reports/sglu/index.md",
                   "reports/cdfl/index.md"):
        assert f"Scale `quick`, configuration `{result['config']['sha256']}`" in (repo / report).read_text()
    second = run(repo, "dvc", "repro")
    assert "Data and pipelines are up to date" in second and not jobs_run(second)
    assert "Data and pipelines are up to date" in run(repo, "dvc", "status")


def test_a_parameter_or_a_module_reruns_only_its_dependents(repo):
    history = (repo / HISTORY).stat().st_mtime_ns
    edit_params(repo, "sglu", "trials", 3)
    changed = run(repo, "dvc", "repro")
    assert jobs_run(changed) == FRONT | {"sglu_run", "sglu_report"}  # the only rules reading sglu.trials
    assert json.loads((repo / "results/sglu/synthetic/fig3a.json").read_text())["trials"] == 3
    with open(repo / "src" / "unlearning" / "train" / "noisy_sgd.py", "a") as f:
        f.write("\n# an edit\n")
    changed = run(repo, "dvc", "repro")
    # noisy_sgd.py is imported by SGLU's steps and the common ground's centralized settings only (the MLP's reuses
    # the convex setting's canary and audit)
    assert jobs_run(changed) == FRONT | SGLU_RULES | {"common_central_method", "common_central_combine",
                                                      "common_ground_report"}
    assert (repo / HISTORY).stat().st_mtime_ns == history
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "sglu trials 3")


def test_push_then_pull_restores_a_gradient_history(repo, tmp_path):
    run(repo, "dvc", "push")
    clone = tmp_path / "clone"
    run(repo, "git", "clone", "-q", str(repo), str(clone))
    run(clone, "dvc", "remote", "add", "-f", "-d", "--local", "local", str(repo.parent / "storage"))
    assert not (clone / "artifacts").exists()
    run(clone, "dvc", "pull")
    assert (clone / HISTORY).read_bytes() == (repo / HISTORY).read_bytes()
    for name in ("artifacts/spine/pretrain/models.safetensors", "results/sglu/synthetic/fig3a.json"):
        assert (clone / name).read_bytes() == (repo / name).read_bytes(), name
    assert "Data and pipelines are up to date" in run(clone, "dvc", "status")


def test_exp_run_sets_a_parameter_and_exp_show_lists_it(repo):
    out = run(repo, "dvc", "exp", "run", "-S", "sglu.trials=2", "-n", "two-trials")
    assert jobs_run(out) == FRONT | {"sglu_run", "sglu_report"}
    rows = list(csv.DictReader(io.StringIO(run(repo, "dvc", "exp", "show", "--csv", "--no-pager"))))
    column = next(c for c in rows[0] if c.endswith("sglu.trials"))
    assert {r["Experiment"]: r[column] for r in rows if r["Experiment"]} == {"two-trials": "2"}, rows
