"""The whole workflow end to end on the tiny synthetic config, and part of it again: identical results.

Both runs compute on the pinned CPU code paths (conftest's `workflow_env`); the second starts from an environment a
user's machine may carry (other instruction sets and thread counts requested of MKL, OpenMP, OpenBLAS, ATen and
oneDNN), so that a result whose bits depend on such a setting, i.e. on the machine, fails here. The second runs one
chain per kind of job (OTHER_MACHINE_TARGETS), not the whole graph (issue 54): the whole graph's re-run on one
machine is test_crash_safety's, whose killed and resumed tree must give the session's tiny run byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT, workflow_env
from unlearning.files import load_tensors

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")


# what another machine's environment may set: instruction sets and thread counts (the pin replaces the first
# four; the others it leaves as they are, so they must not move a result)
ANOTHER_MACHINE = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "NPY_DISABLE_CPU_FEATURES": "X86_V4", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "MKL_NUM_THREADS": "2",
                   "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "MKL_DYNAMIC": "TRUE"}


# one chain per kind of job: a training, an unlearning, the attacks and a report (the spine's report), and the jobs
# whose kernels differ most between CPUs: RR-DU's walk (a CNN under the project's Adam, issue 53's leak) and a CDFL
# cell (D-PSGD, the Fisher correction, fine-tuning)
OTHER_MACHINE_TARGETS = ("reports/spine/index.md", "results/rrdu/synthetic/seed0.json",
                         "results/cdfl/synthetic/iid_ring_s0.json")


def run_workflow(workdir: Path, params: Path, env: dict[str, str] | None = None,
                 targets: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(params, workdir / "params.yaml")
    return subprocess.run([SNAKEMAKE, "--cores", "2", "-d", str(workdir), "-s", str(ROOT / "Snakefile"), *extra,
                           *targets], capture_output=True, text=True, env=env or workflow_env())


def deterministic_files(workdir: Path) -> dict[str, bytes]:
    """Everything but the wall times: results, models, histories, checkpoints, costs, the metrics table."""
    files = [f for d in ("results", "artifacts") for f in sorted((workdir / d).rglob("*")) if f.is_file()]
    files.append(workdir / "reports" / "spine" / "metrics.csv")
    files += [workdir / "reports" / "pdudt" / f"{name}.csv" for name in ("table3", "figure1", "figure2", "subsequent",
                                                                              "gaps")]
    files += [workdir / "reports" / "sglu" / f"{name}.csv" for name in ("table3", "fig3a", "fig3b", "fig3c", "fig3d",
                                                                             "claims")]
    files += [workdir / "reports" / "cdfl" / f"{name}.csv" for name in ("table1", "table2", "table3", "table4",
                                                                             "sweep_damping", "sweep_sigma", "client",
                                                                             "convex", "figure1")]
    files += [workdir / "reports" / "r2d" / f"{name}.csv" for name in ("accounting", "fig1c", "figure1", "table5",
                                                                            "tables8_9", "retrain_noised", "claims")]
    files += [workdir / "reports" / "rrdu" / f"{name}.csv" for name in ("table3", "table14", "table15", "table16",
                                                                             "table17", "figure1", "claims",
                                                                             "table3_semantics")]
    files += [workdir / "reports" / "common_ground" / f"{name}.csv" for name in ("centralized", "centralized_mlp",
                                                                                     "client", "sample", "originals",
                                                                                     "r2d_calibration")]
    return {str(f.relative_to(workdir)): f.read_bytes() for f in files}


@pytest.fixture(scope="module")
def two_runs(tiny_run, tmp_path_factory):
    """The session's tiny run (conftest) and a second, independent one of OTHER_MACHINE_TARGETS, started from
    another machine's environment (ANOTHER_MACHINE) under the same pin."""
    second = tmp_path_factory.mktemp("pipeline") / "b"
    run = run_workflow(second, ROOT / "tests" / "config" / "tiny.yaml", workflow_env({**os.environ, **ANOTHER_MACHINE}),
                       OTHER_MACHINE_TARGETS, extra=("--verbose",))
    (second / "snakemake.log").write_text(run.stdout + run.stderr)  # with the scheduler's debug lines
    assert run.returncode == 0, run.stderr[-3000:]
    return tiny_run, second


def test_end_to_end_writes_the_report(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "spine" / "index.md").read_text()
    for method in ("original", "retrain", "finetune"):
        assert f"| {method} " in report
    assert (a / "reports" / "spine" / "index.html").read_text().startswith("<!doctype html>")
    assert (a / "reports" / "spine" / "spine.png").stat().st_size > 1000
    assert (a / "artifacts" / "spine" / "pretrain" / "history" / "grads.npy").is_file()


def test_front_page_leads_to_every_report(two_runs):
    a, _ = two_runs
    front = (a / "reports" / "index.md").read_text()
    front_html = (a / "reports" / "index.html").read_text()
    for paper in ("spine", "pdudt", "sglu", "cdfl", "r2d", "rrdu"):
        assert f"]({paper}/index.md)" in front and f"href='{paper}/index.html'" in front_html
        page = (a / "reports" / paper / "index.html").read_text()
        assert page.startswith("<!doctype html>") and "<table" in page
        assert page.count("src='data:image/png;base64,") == (a / "reports" / paper / "index.md").read_text().count("![")
    header = next(line for line in front.splitlines() if line.startswith("| paper"))
    assert [c.strip() for c in header.strip("|").split("|")] == ["paper", "within", "outside", "missing",
                                                                  "no paper value", "uninformative", "not testable",
                                                                  "headline claim", "holds here"]


def test_end_to_end_runs_sglu(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "sglu" / "index.md").read_text()
    for heading in ("Table 3", "Figure 3a", "Figure 3b", "Figure 3c", "Figure 3d"):
        assert f"## {heading}" in report
    for dataset in ("synthetic", "mnist"):  # mnist: Table 3's accounting from the paper's n
        assert (a / "results" / "sglu" / dataset / "accounting.json").is_file()
    assert json.loads((a / "results" / "sglu" / "mnist" / "accounting.json").read_text())["n"] == 11264
    run = json.loads((a / "results" / "sglu" / "synthetic" / "fig3a.json").read_text())
    assert {r["method"] for r in run["rows"]} == {"sglu", "lu", "d2d"}
    assert all(0 <= r["mean"] <= 1 and r["trials"] == 2 for r in run["rows"])
    cells = json.loads((a / "results" / "sglu" / "synthetic" / "fig3c.json").read_text())["rows"]
    assert len(cells) == 2 * 2 * 2  # b x sigma x projection
    subset = json.loads((a / "results" / "sglu" / "mnist" / "fig3a.json").read_text())  # the runs: on the subset
    assert subset["data"] == "mnist_5k" and subset["n"] == 800 and subset["rows"]
    assert json.loads((a / "results" / "sglu" / "mnist" / "accounting_subset.json").read_text())["n"] == 800
    assert "mnist (real MNIST, 5,000-digit subset)" in report


def test_end_to_end_runs_cdfl(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "cdfl" / "index.md").read_text()
    for heading in ("Table I", "Table II", "Table III", "Table IV", "Missing", "Choices where the paper is silent"):
        assert f"## {heading}" in report
    cell = json.loads((a / "results" / "cdfl" / "synthetic" / "iid_ring_s0.json").read_text())
    assert set(cell["granularities"]) == {"sample", "class"} and cell["rounds"] == 3
    assert "not in cdfl.datasets" in (a / "reports" / "cdfl" / "table1.csv").read_text()


def test_end_to_end_runs_r2d(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "r2d" / "index.md").read_text()
    for heading in ("Sigma at the paper's constants", "Figure 1", "Table 5", "Tables 8-9", "Tables 2 and 7",
                    "The paper's claims", "Choices where the paper is silent", "Data sets not run"):
        assert f"## {heading}" in report
    run = json.loads((a / "results" / "r2d" / "fmnist_users" / "s0.json").read_text())
    assert [r["K_ep"] for r in run["rewinds"]][-1] == run["learning"]["E_sel"] and run["stand_in"]
    assert {c["epsilon"] for c in run["cells"]} == {1, 40}
    assert len(list((a / "artifacts" / "r2d" / "fmnist_users" / "s0").glob("*.safetensors"))) == 5  # epochs 0..4
    base = json.loads((a / "results" / "r2d" / "fmnist_users" / "baselines.json").read_text())
    assert {"hf", "cns"} <= base.keys() and base["cns"]["Delta"] > 0
    import pandas as pd

    accounting = pd.read_csv(a / "reports" / "r2d" / "accounting.csv")
    assert len(accounting) == 126 and (accounting.status == "within").all()
    assert "missing: " in (a / "reports" / "r2d" / "tables8_9.csv").read_text()  # eICU is not on disk


def test_end_to_end_runs_rrdu(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "rrdu" / "index.md").read_text()
    for heading in ("Table 3", "Table 14", "Table 15", "Table 16", "Table 17", "Figure 1", "claims, one by one",
                    "Cost", "Missing", "Choices where the paper is silent"):
        assert heading in report
    seed = json.loads((a / "results" / "rrdu" / "synthetic" / "seed0.json").read_text())
    assert seed["original"]["hops"] == 3  # Table 3: each p over the tiny config's 2 unlearning streams
    runs = [(r["p"], r["stream"], r["u_visits"]) for r in seed["table3"]]
    assert runs == [(0.0, 0, 0), (0.0, 1, 0), (1.0, 0, 4), (1.0, 1, 4)]  # p = 0 never visits u, p = 1 every hop
    fresh = seed["table3_semantics"]  # Table 3 again under adam_fresh, the same routing: the same visits
    assert [(r["semantics"], r["p"], r["stream"], r["u_visits"]) for r in fresh] == [("adam_fresh", *r) for r in runs]
    assert "under the other optimizer semantics" in report
    ablations = json.loads((a / "results" / "rrdu" / "synthetic" / "ablations.json").read_text())
    assert set(ablations["sweeps"]) == {"rho", "L", "epsilon", "delta"}
    assert set(ablations["baselines"]) == {"finetune", "ddp", "dpsgd"} and "3" in ablations["scratch"]["marks"]
    assert "not in rrdu.datasets" in (a / "reports" / "rrdu" / "table3.csv").read_text()
    assert (a / "reports" / "rrdu" / "figure1.png").stat().st_size > 1000


def test_end_to_end_runs_the_common_ground(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "common_ground" / "index.md").read_text()
    assert "## Centralized removal, convex model" in report and "## Centralized removal, MLP" in report
    common = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())["common"]
    mlp = json.loads((a / "results" / "common_ground" / "centralized_mlp.json").read_text())
    assert {m["method"] for m in mlp["methods"].values()} == set(common["mlp"]["methods"])  # every configured one
    rows = {"r2d K/T=0.25", "r2d K/T=0.5", "r2d K/T=0.75", "hf", "cns"}  # each with its positive controls
    uncertified = {"neggrad_plus", "salun"}  # the field's baselines: no claim, no controls
    assert rows | {f"{r}@{k}x" for r in rows for k in (2, 4)} | uncertified <= set(mlp["methods"])
    assert "## R2D's calibration on the MLP, taken apart" in report and set(mlp["r2d_calibration"]["rows"]) == {
        "r2d K/T=0.25", "r2d K/T=0.5", "r2d K/T=0.75"}
    result = json.loads((a / "results" / "common_ground" / "centralized.json").read_text())
    assert {m["method"] for m in result["methods"].values()} == set(common["centralized"]["methods"])
    rows = {"sglu", "lu", "d2d", "r2d K/T=0.1", "r2d K/T=0.5", "r2d K/T=0.9", "hf", "cns"}  # K/T = 1: no noise
    assert rows | {"r2d K/T=1"} | {f"{r}@{k}x" for r in rows for k in (2, 4)} | uncertified <= set(result["methods"])
    for table in ("centralized", "centralized_mlp"):  # their rows on both tables, each saying it claims nothing
        rows = pd.read_csv(a / "reports" / "common_ground" / f"{table}.csv").set_index("method")
        assert rows.status[["NegGrad+", "SalUn"]].str.startswith("no certificate").all(), table
    front = (a / "reports" / "index.md").read_text()
    assert "## Common ground" in front and "common_ground/utility_cost.png" in front  # its section, figure and tables
    assert "**Decentralized client removal**" in front and "**Centralized removal, MLP**" in front
    configured = common["decentralized"]
    for setting in ("client", "sample"):  # every configured method of the setting, both tiny seeds
        for seed in (0, 1):
            result = json.loads((a / "results" / "common_ground" / f"{setting}_s{seed}.json").read_text())
            assert set(result["methods"]) == set(configured[setting]["methods"])
    assert "does not apply: RR-DU" in (a / "reports" / "common_ground" / "sample.csv").read_text()
    assert "## Decentralized client removal" in report and "## Summary" in report
    assert (a / "reports" / "common_ground" / "utility_cost.png").stat().st_size > 1000


def test_end_to_end_runs_pdudt(two_runs):
    a, _ = two_runs
    report = (a / "reports" / "pdudt" / "index.md").read_text()
    for heading in ("Table 2", "Table 3", "Figure 1", "Figure 2", "Subsequent learning"):
        assert f"## {heading}" in report
    for method in ("original", "retrain", "perturbed_retrain", "pdudt", "pdudt_es", "noise_only", "fedrecovery",
                   "fedrecovery_original", "fats", "hdus"):
        result = json.loads((a / "results" / "pdudt_synthetic" / f"{method}.json").read_text())
        one = ("original", "fedrecovery_original", "retrain", "fats", "hdus")
        assert len(result["checkpoints"]["A"]) == (1 if method in one else 2)
        assert ("B" in result["checkpoints"]) == (method not in ("fedrecovery", "fedrecovery_original", "fats",
                                                                  "hdus"))
        assert ("all_clients" in result) == (method == "original")
        # checkpoint A in its own job (issue 37): the whole result holds it unchanged
        alone = json.loads((a / "results" / "pdudt_synthetic" / "checkpoint_a" / f"{method}.json").read_text())
        assert set(alone["checkpoints"]) == {"A"} and alone["checkpoints"]["A"] == result["checkpoints"]["A"]
    timing = json.loads((a / "timings" / "pdudt_synthetic" / "table2.json").read_text())
    assert {"retrain", "pdudt", "pdudt_es", "fedrecovery", "fats", "hdus"} <= timing["methods"].keys()
    gaps = json.loads((a / "results" / "pdudt_synthetic" / "gaps.json").read_text())["methods"]
    assert gaps["pdudt"]["averaged_model_gap"] >= 0 and gaps["noise_only"]["averaged_model_gap"] > 0
    assert "## What the correction contributes" in report and "| Origin (all n clients) " in report
    # issue 37: under the default model mixing PDUDT's replay is named a heuristic, in the tables and the figures' data
    assert "PDUDT (heuristic replay under D-PSGD)" in report and "PDUDT as printed" not in report
    for table in ("table2", "table3"):  # the label names the replay that ran, Table 2 included (issue 56)
        assert "PDUDT (heuristic replay under D-PSGD)" in (a / "reports" / "pdudt" / f"{table}.csv").read_text()
    assert {"pdudt", "pdudt_es", "noise_only", "pdudt_sum"} <= gaps.keys()
    assert gaps["pdudt_sum"]["correction_over_gap"] > 0 and gaps["pdudt"]["correction_over_gap"] > 0
    for name in ("figure1", "figure2", "subsequent"):
        assert (a / "reports" / "pdudt" / f"{name}.png").stat().st_size > 1000
    # MNIST's rows on the 5,000-digit subset (issue 38), 60 digits a client (tiny's pdudt.by_dataset)
    mnist = json.loads((a / "results" / "pdudt_mnist" / "pdudt.json").read_text())
    assert mnist["data"] == "mnist_5k" and "mnist (real MNIST, 5,000-digit subset)" in report
    split = load_tensors(str(a / "data" / "splits" / "pdudt_mnist.safetensors"))
    assert sum(len(v) for k, v in split.items() if k.endswith(".indices")) == 4 * 60


def test_rerun_gives_byte_identical_results(two_runs):
    """Byte-identical, though the second run's environment asked for other instruction sets and thread counts: the
    pinned code paths hold in every job of its chains, and no result depends on what the pin leaves alone."""
    a, b = two_runs
    # the pin reached the jobs: the provenance job records it in the first run; for the second, the same module in
    # the environment its Snakemake passed on to its jobs
    subprocess.run([sys.executable, "-m", "unlearning.provenance", "--out", str(b / "provenance.json")], check=True,
                   env=workflow_env({**os.environ, **ANOTHER_MACHINE}))
    for path in (a / "reports" / "provenance.json", b / "provenance.json"):
        cpu = json.loads(path.read_text())["cpu"]
        assert cpu["aten_capability"] == "DEFAULT" and cpu["code_path_variables"]["MKL_CBWR"] == "COMPATIBLE", cpu
    first = deterministic_files(a)
    second = {str(f.relative_to(b)): f.read_bytes() for d in ("results", "artifacts")
              for f in sorted((b / d).rglob("*")) if f.is_file()}
    second["reports/spine/metrics.csv"] = (b / "reports" / "spine" / "metrics.csv").read_bytes()
    assert {"results/spine/retrain.json", "results/spine/finetune.json", "artifacts/spine/pretrain/history/grads.npy",
            "artifacts/spine/unlearn/finetune/models.safetensors", "results/rrdu/synthetic/seed0.json",
            "results/cdfl/synthetic/iid_ring_s0.json"} <= second.keys()
    assert second.keys() <= first.keys(), sorted(second.keys() - first.keys())
    for name in second:
        assert first[name] == second[name], f"{name} differs between two runs"


def test_a_local_run_selects_jobs_when_a_job_ends_not_every_second(two_runs):
    """common.smk's `drop_job_rate_limit`: without it, Snakemake's default job-rate limit re-ran the job selection
    every second in a growing number of chains while a job waited for a core (hundreds of selections here, each
    stat-ing every ready job's inputs). A selection follows the start and each finished job."""
    log = (two_runs[1] / "snakemake.log").read_text()
    jobs = int(re.search(r"^total\s+(\d+)$", log, re.MULTILINE).group(1))
    selections = log.count("Ready jobs")
    assert jobs >= 10 and selections <= jobs + 2, (selections, jobs)


def test_second_invocation_has_nothing_to_do(two_runs):
    """The tiny run's own command again (in its copy of the checkout, running that copy's package)."""
    a, _ = two_runs
    run = subprocess.run([SNAKEMAKE, "--cores", "1", "-n"], cwd=a, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(a / "src")})
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_tiny_config_follows_params_yaml():
    sys.path.insert(0, str(ROOT / "tests" / "config"))
    import yaml
    from make_tiny import tiny_config

    committed = yaml.safe_load((ROOT / "tests" / "config" / "tiny.yaml").read_text())
    assert committed == tiny_config(), "params.yaml changed: run `.venv/bin/python tests/config/make_tiny.py`"
