"""benchmarks/workflow.py: a run's job seconds summed per paper from Snakemake's benchmark files."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("workflow_benchmark", ROOT / "benchmarks" / "workflow.py")
workflow = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workflow)

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_jobs_are_summed_per_paper_with_the_shared_steps_by_experiment(tmp_path):
    times = {"pdudt/pdudt_fashion_mnist/continue": 39.0, "pretrain/pdudt-eq2_fashion_mnist": 7.5,
             "pretrain/spine": 9.0, "unlearn/pdudt_fashion_mnist/retrain": 5.5, "cdfl/fashion_mnist/convex": 52.0,
             "prepare/fashion_mnist": 4.0, "index": 3.0}
    for job, s in times.items():
        path = tmp_path / "logs" / "benchmarks" / f"{job}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + f"{s}\t0:00:{int(s):02d}\t1\t1\t1\t1\t0\t0\t99\t{s / 3}\n")
    result = workflow.summary(tmp_path, 100.0, "test")
    assert result["parts"]["pdudt"] == {"jobs": 3, "job_seconds": 52.0}
    assert result["parts"]["spine"] == {"jobs": 1, "job_seconds": 9.0}
    assert result["parts"]["data"]["jobs"] == 1 and result["parts"]["reports"]["jobs"] == 1
    assert result["job_seconds"] == 120.0 and result["jobs"] == 7 and result["wall_s"] == 100.0
    assert list(result["largest"])[0] == "cdfl/fashion_mnist/convex"


def test_a_directory_without_benchmarks_names_what_to_give(tmp_path):
    with pytest.raises(FileNotFoundError, match="logs/benchmarks: missing"):
        workflow.summary(tmp_path, None, "")


DRY_RUN = """
rule a:
    input: data/x
    output: out/a
    benchmark: logs/benchmarks/a.tsv
rule b:
    input: out/a, src/code.py
    output: out/b
    benchmark: logs/benchmarks/b.tsv
rule c:
    input: out/b
    output: out/c
    benchmark: logs/benchmarks/c.tsv
rule d:
    input: data/big
    output: out/d
    benchmark: logs/benchmarks/d.tsv
rule e:
    input: data/big
    output: out/e
    benchmark: logs/benchmarks/e.tsv
localrule all:
    input: out/c, out/d, out/e
"""


def test_the_replay_finds_the_order_bound_and_what_snakemakes_order_loses(tmp_path):
    """A chain a -> b -> c of 10 s each and two 12 s jobs on 2 cores: job seconds / cores = 27 s, the chain 30 s.
    The chain first ends at 30 s; Snakemake's order for equal priorities, the larger inputs first, runs d and e
    first and starts the chain 12 s late: 42 s."""
    for job, s in {"a": 10.0, "b": 10.0, "c": 10.0, "d": 12.0, "e": 12.0}.items():
        path = tmp_path / "logs" / "benchmarks" / f"{job}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + f"{s}\t0:00:10\t1\t1\t1\t1\t0\t0\t99\t1\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x").write_bytes(b"1")
    (tmp_path / "data" / "big").write_bytes(b"1" * 100)
    result = workflow.schedule(tmp_path, 2, DRY_RUN)
    assert result["jobs"] == 6 and result["job_seconds"] == 54.0
    assert result["critical_path_s"] == 30.0 and result["bound_s"] == 30.0
    assert result["makespan_s"]["critical_path_first"] == 30.0
    assert result["makespan_s"]["snakemake_order"] == 42.0
