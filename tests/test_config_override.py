"""What Snakemake plans is what the jobs compute: `--config` and `--configfile` overrides, of the scale and of a
nested key, reach the job, and every result and report records the configuration it was computed under."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from unlearning.config import ParamsError
from unlearning.files import load_metadata, load_tensors
from unlearning.resolved import check_inputs, config_hash, stamp, write_resolved

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")
SPLIT = "data/splits/spine.safetensors"


def tiny(**spine) -> dict:
    params = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    params["spine"].update(spine)
    return params


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([SNAKEMAKE, "--cores", "2", "-d", str(workdir), "-s", str(ROOT / "Snakefile"), SPLIT, *args],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def split_of(workdir: Path) -> tuple[int, dict]:
    """Samples per client and the partition the split job wrote."""
    tensors = load_tensors(workdir / SPLIT)
    return tensors["client0.indices"].numel(), load_metadata(workdir / SPLIT)["partition"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The tiny config, with a paper scale that halves the samples per client."""
    path = tmp_path_factory.mktemp("override")
    (path / "params.yaml").write_text(yaml.safe_dump(tiny(paper={"partition": {"train_per_client": 20}})))
    return path


def test_overrides_of_the_scale_and_of_nested_keys_reach_the_job(workdir):
    snakemake(workdir)
    assert split_of(workdir) == (40, {"alpha": 0.5, "kind": "iid", "train_per_client": 40})
    snakemake(workdir, "--config", "scale=paper")
    assert split_of(workdir)[0] == 20
    snakemake(workdir, "--config", "spine={partition: {kind: dirichlet}}")  # nested, deep-merged
    assert split_of(workdir)[1] == {"alpha": 0.5, "kind": "dirichlet", "train_per_client": 40}
    override = workdir / "override.yaml"
    override.write_text("spine:\n  partition: {train_per_client: 30}\n")
    snakemake(workdir, "--configfile", str(override))
    assert split_of(workdir) == (30, {"alpha": 0.5, "kind": "iid", "train_per_client": 30})
    snakemake(workdir, "--configfile", str(override), "--config", "scale=paper")  # the scale's override wins
    assert split_of(workdir)[0] == 20
    resolved = sorted((workdir / ".snakemake" / "resolved").glob("*.yaml"))
    assert len(resolved) == 5  # one content-addressed file per distinct configuration
    for path in resolved:
        assert path.stem == config_hash(yaml.safe_load(path.read_text()))


def test_resolved_file_is_content_addressed(tmp_path):
    params = tiny()
    path = write_resolved(params, tmp_path)
    assert yaml.safe_load(path.read_text()) == params
    assert write_resolved(yaml.safe_load(path.read_text()), tmp_path) == path
    changed = tiny(clients=5)
    assert write_resolved(changed, tmp_path) != path
    assert stamp(params)["_resolved"] == {"scale": "quick", "sha256": path.stem}


def test_reports_refuse_inputs_of_another_scale(tmp_path):
    quick, paper = stamp(tiny()), stamp({**tiny(), "scale": "paper"})
    files = []
    for name, params in (("a", quick), ("b", paper)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({"config": params["_resolved"]}))
    assert check_inputs(quick, [str(files[0])]).startswith(f"Scale `quick`, configuration `{config_hash(quick)}`")
    with pytest.raises(ParamsError, match="b.json: computed at scale 'paper', but this report is at scale 'quick'"):
        check_inputs(quick, [str(f) for f in files])
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(ParamsError, match="old.json: records no configuration"):
        check_inputs(quick, [str(tmp_path / "old.json")])
    older = stamp(tiny(clients=5))
    (tmp_path / "c.json").write_text(json.dumps({"config": older["_resolved"]}))
    line = check_inputs(quick, [str(files[0]), str(tmp_path / "c.json")])
    assert f"1 of 2 inputs record another configuration (`{config_hash(older)}`)" in line


@pytest.mark.slow  # plans the workflow twice (Snakemake dry runs): the full suite's, not the edit loop's (issue 40)
def test_auto_threads_are_one_a_job_at_quick_and_every_core_at_paper(tmp_path):
    """engine.cpu_threads: auto gives every job one thread at scale quick (Snakemake runs --cores of them side by
    side, and the quick numbers do not depend on --cores) and a big step every core at paper (a dry run's plan)."""
    params = tiny()
    params["engine"]["cpu_threads"] = "auto"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))

    def threads(*args: str) -> set[str]:
        plan = subprocess.run([SNAKEMAKE, "-n", "--cores", "2", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile"),
                               SPLIT, *args], capture_output=True, text=True, check=True).stdout
        return {line.split("--threads ")[1].split()[0] for line in plan.splitlines()
                if " -m unlearning.warm " in line}  # the job's command (unlearning/warm.py)

    assert threads() == {"1"}
    assert threads("--config", "scale=paper") == {"2"}


@pytest.mark.slow
def test_pdudt_training_steps_are_one_job_at_quick_and_one_a_method_at_paper(tmp_path):
    """Issue 40: at scale quick every method of a PDUDT experiment continues in one job (seconds of work each after
    a job's start); at paper, one job a method (tens of minutes each, side by side on a cluster). Both evaluate
    every method in one job (a dry run's plan)."""
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tiny()))
    target = "results/pdudt_synthetic/pdudt.json"

    def jobs(*args: str) -> set[str]:
        plan = subprocess.run([SNAKEMAKE, "-n", "--cores", "2", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile"),
                               target, *args], capture_output=True, text=True, check=True).stdout
        return {line.split()[0] for line in plan.splitlines() if line.startswith("pdudt_")}

    quick, paper = jobs(), jobs("--config", "scale=paper")
    assert {"pdudt_continue_pdudt_synthetic", "pdudt_variants_pdudt_synthetic", "pdudt_server_pdudt_synthetic",
            "pdudt_evaluate_a_pdudt_synthetic", "pdudt_evaluate_pdudt_synthetic"} <= quick
    assert not any(j.startswith("pdudt_continue_pdudt_synthetic_") for j in quick)
    assert {"pdudt_continue_pdudt_synthetic_pdudt", "pdudt_continue_pdudt_synthetic_original",
            "pdudt_variants_pdudt_synthetic_fats", "pdudt_server_pdudt_synthetic_hdus",
            "pdudt_evaluate_a_pdudt_synthetic", "pdudt_evaluate_pdudt_synthetic"} <= paper
    assert "pdudt_continue_pdudt_synthetic" not in paper


@pytest.mark.slow  # plans the workflow (Snakemake dry runs, 6 s): the full suite's, not the edit loop's
def test_a_datasets_own_methods_set_what_its_experiment_runs_and_the_report_reads(tmp_path):
    """`pdudt.by_dataset.<dataset>.methods` (issue 38's override) changes that experiment's jobs and the report's
    inputs: a dry run of the whole report plans no job of a method left out, and no missing input."""
    params = tiny()
    params["pdudt"]["by_dataset"]["mnist"]["methods"] = ["retrain", "pdudt"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    plan = subprocess.run([SNAKEMAKE, "-n", "--cores", "2", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile"),
                           "reports/pdudt/index.md"], capture_output=True, text=True, check=True).stdout
    assert "results/pdudt_mnist/pdudt.json" in plan and "results/pdudt_mnist/fats.json" not in plan
    assert "results/pdudt_synthetic/fats.json" in plan


@pytest.mark.slow  # plans the workflow (Snakemake dry runs, 5 s): the full suite's, not the edit loop's
def test_more_samples_than_the_mnist_subset_holds_stop_before_any_job(tmp_path):
    """check_params counts MNIST's 60,000 training digits; where the 5,000-digit subset serves the column (4,000 to
    train on), the workflow names the key and the largest valid value before planning a job."""
    params = tiny()
    params["pdudt"]["by_dataset"]["mnist"]["partition"]["train_per_client"] = 1001
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = subprocess.run([SNAKEMAKE, "-n", "--cores", "2", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile")],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert ("pdudt.partition.train_per_client (pdudt_mnist): 1001 x 4 clients needs 4004 training samples, but "
            "mnist_5k serves mnist's column with 4000; valid: at most 1000") in run.stderr


@pytest.mark.slow  # plans the workflow (Snakemake dry runs, 6 s): the full suite's, not the edit loop's
def test_no_subsequent_rounds_leave_out_the_continuation_but_not_checkpoint_b(tmp_path):
    """`subsequent.rounds: 0` (the quick scale's candidates but eq2 and pretrained, issue 40): no continuation job;
    the checkpoint-B job still writes the experiment's results (A's alone), which the report reads."""
    params = tiny()
    params["pdudt"]["subsequent"]["rounds"] = 0
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    plan = subprocess.run([SNAKEMAKE, "-n", "--cores", "2", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile"),
                           "results/pdudt_synthetic/pdudt.json"], capture_output=True, text=True, check=True).stdout
    jobs = {line.split()[0] for line in plan.splitlines() if line.startswith("pdudt_")}
    assert "pdudt_evaluate_pdudt_synthetic" in jobs and "pdudt_evaluate_a_pdudt_synthetic" in jobs
    assert not any(j.startswith("pdudt_continue") for j in jobs), jobs
