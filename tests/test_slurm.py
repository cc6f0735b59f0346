"""The tiny workflow through a real Slurm (workflow/profiles/slurm), results byte-identical to a local run.

One chain of the tiny graph (TARGETS: the spine's retraining, evaluated: the data, a training with its history and
checkpoints, an unlearning and its evaluation, 6 jobs) runs inside Slurm, grouped into one Slurm job (Snakemake's
`--groups`): inside a group Snakemake runs one job step at a time, each with a Snakemake start-up (about 7 s) and
its job's own interpreter (a cluster job has no warm one), so the whole tiny DAG (64 jobs) took 10 minutes and one
chain per paper (about 20 jobs) about 4, which the test suite's budget cannot hold (issue 54); a separate Slurm job per
rule job costs more. What the test proves needs one chain: the submission through the profile, the grouping, the
resources the profile asks for (sacct lists every job COMPLETED), the byte equality with a local run, and
(test_a_restarted_cluster_holds_no_jobs_of_its_last_run) a restarted cluster's empty queue. Until 2026-12-04 the
chain went on to the spine's report (10 jobs: the other method, the two other evaluations and the report, whose
pages the byte comparison never read), 140 s of the suite's 20 minutes. A real cluster runs the jobs
one Slurm job each, as the profile declares. The local run it is compared with is the session's tiny run (conftest's
`tiny_run`, the whole DAG).

Where no cluster is up, the test starts the single-node one of scripts/slurm_local.sh (root; apt-get installs
Slurm the first time) and stops it afterwards; a cluster it found running is left running. Elsewhere it is
skipped with the reason (`pytest -rs` prints it). Deselect with `-m "not slurm"`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, workflow_env

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")
SCRIPT = ROOT / "scripts" / "slurm_local.sh"
PROFILE = ROOT / "workflow" / "profiles" / "slurm"
TIMEOUT_S = int(os.environ.get("SLURM_TEST_TIMEOUT", "1200"))  # the run on Slurm
LOCAL_RULES = {"all", "data", "experiments"}  # target rules, run by Snakemake itself
TARGETS = ("results/spine/retrain.json",)


def local_slurm(command: str, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=timeout)


def cannot_start_reason() -> str | None:
    """Why scripts/slurm_local.sh cannot bring a cluster up here, or None when it can."""
    if os.geteuid() != 0:
        return "starting a local Slurm needs root (scripts/slurm_local.sh runs munged, slurmctld and slurmd)"
    if not all(shutil.which(t) for t in ("slurmctld", "slurmd", "sbatch", "munged")) and not shutil.which("apt-get"):
        return "Slurm is not installed and apt-get is not available to install it"
    conf = Path("/etc/slurm/slurm.conf")
    if conf.exists() and not conf.is_symlink():
        return f"{conf} belongs to another Slurm cluster; scripts/slurm_local.sh leaves it alone"
    return None


STARTED_HERE: list[bool] = []  # set by slurm_env: whether this module started the cluster (so it may restart it)


@pytest.fixture(scope="module")
def slurm_env():
    """The environment for Slurm commands; brings the local cluster up when none is, and stops only that."""
    was_up = local_slurm("status").returncode == 0
    STARTED_HERE[:] = [not was_up]
    if not was_up:
        if reason := cannot_start_reason():
            pytest.skip(reason)
        started = local_slurm("start", timeout=900)  # apt-get install the first time
        if started.returncode != 0:
            message = (started.stdout + started.stderr).strip()
            if "apt-get" in message:
                pytest.skip(f"could not install Slurm: {message}")
            pytest.fail(f"scripts/slurm_local.sh did not start the cluster: {message}")
    env = workflow_env()  # the pinned code paths, as the local run that the Slurm run is compared with
    env.update(line.removeprefix("export ").split("=", 1) for line in local_slurm("env").stdout.splitlines())
    yield env
    if not was_up:
        local_slurm("stop")


def start_workflow(workdir: Path, extra: list[str], env: dict) -> subprocess.Popen:
    workdir.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "config" / "tiny.yaml", workdir / "params.yaml")
    log = open(workdir / "snakemake.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([SNAKEMAKE, "-d", str(workdir), "-s", str(ROOT / "Snakefile"), *extra], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_run(proc: subprocess.Popen) -> None:
    """SIGINT: Snakemake stops, and its Slurm executor cancels the jobs it submitted; SIGKILL if it hangs."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def job_stats(log: str) -> set[str]:
    """The rules in the "Job stats" table Snakemake prints before it starts."""
    table = re.search(r"^Job stats:\njob\s+count\n-+\s+-+\n((?:\w+\s+\d+\n)+)", log, re.MULTILINE)
    return {line.split()[0] for line in table.group(1).splitlines()} - {"total"}


def deterministic_files(workdir: Path) -> dict[str, bytes]:
    """Every file under results/ and artifacts/ (models, histories, checkpoints, costs, metrics)."""
    files = [f for d in ("results", "artifacts") for f in sorted((workdir / d).rglob("*")) if f.is_file()]
    return {str(f.relative_to(workdir)): f.read_bytes() for f in files}


def one_group(env: dict, plan_dir: Path) -> list[str]:
    """`--groups` putting every rule job of the tiny workflow into one Slurm job. Its rules are listed on the tiny
    config (in `plan_dir`): some rules are written out per experiment (PDUDT's), so the list depends on the config."""
    plan_dir.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "config" / "tiny.yaml", plan_dir / "params.yaml")
    listed = subprocess.run([SNAKEMAKE, "--list-rules", "-s", str(ROOT / "Snakefile"), "-d", str(plan_dir)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    rules = [r for r in listed.stdout.split() if r not in LOCAL_RULES]
    return ["--groups", *(f"{r}=tiny" for r in rules), "--group-components", "tiny=1000"]


def queue(env: dict) -> str:
    return subprocess.run(["squeue", "-h", "-o", "%i %T %r"], capture_output=True, text=True, env=env,
                          timeout=60).stdout.strip()


def test_a_restarted_cluster_holds_no_jobs_of_its_last_run(slurm_env):
    """`slurm_local.sh start` after a stop begins with an empty queue. Without it a job of the previous controller,
    whose processes a reboot or a killed session took, stayed "running" with the node's CPUs, and the tiny run's
    job pended behind it until the timeout (CI, 2026-11-25)."""
    if not STARTED_HERE[0]:
        pytest.skip("the cluster was up before these tests; they restart only a cluster they started")
    sbatch = ["sbatch", "--parsable", "--cpus-per-task=1", "--output=/dev/null", "--wrap", "exec sleep 297"]
    job = subprocess.run(sbatch, capture_output=True, text=True, env=slurm_env, timeout=60)
    assert job.returncode == 0, job.stderr
    running, deadline = f"{job.stdout.strip()} RUNNING", time.monotonic() + 60
    try:
        while running not in (queued := queue(slurm_env)) and time.monotonic() < deadline:
            time.sleep(1)
        assert running in queued, queued
        assert local_slurm("stop").returncode == 0
        started = local_slurm("start", timeout=300)
        assert started.returncode == 0, started.stdout + started.stderr
        assert queue(slurm_env) == ""
    finally:
        subprocess.run(["pkill", "-x", "-f", "sleep 297"], timeout=30)  # the job's process outlives its controller


def test_tiny_workflow_on_slurm_matches_a_local_run(slurm_env, tiny_run, tmp_path):
    """The local run is the session's tiny run (conftest's `tiny_run`, `snakemake --cores 2`)."""
    start = time.monotonic()
    grouped = one_group(slurm_env, tmp_path / "plan")
    cluster = start_workflow(tmp_path / "slurm", ["--profile", str(PROFILE), *grouped, "--slurm-keep-successful-logs",
                                                  "--slurm-logdir", str(tmp_path / "slurm" / "slurm_logs"),
                                                  "--slurm-init-seconds-before-status-checks", "5", *TARGETS],
                             slurm_env)
    try:
        code = cluster.wait(timeout=max(1.0, TIMEOUT_S - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        waiting = queue(slurm_env) or "empty"
        stop_run(cluster)
        pytest.fail(f"the tiny run on Slurm did not finish within {TIMEOUT_S} s (SLURM_TEST_TIMEOUT); the queue "
                    f"(job, state, reason): {waiting}")
    logs = {"slurm": (tmp_path / "slurm" / "snakemake.log").read_text(),
            "local": (tiny_run / "snakemake.log").read_text()}
    assert code == 0, f"exit code {code}:\n{logs['slurm'][-3000:]}"

    # Every rule job went through Slurm, in the one group job, and completed there: the job completion log,
    # read by sacct, lists it under the run's job name.
    submitted = set(re.findall(r"submitted with SLURM jobid (\d+)", logs["slurm"]))
    jobs = int(re.search(r"^total\s+(\d+)$", logs["slurm"], re.MULTILINE).group(1))
    assert len(submitted) == 1 and jobs >= 6
    inside = "\n".join(p.read_text() for p in (tmp_path / "slurm" / "slurm_logs").rglob("*.log"))
    rules = re.compile(r"^(?:local)?rule (\w+):$", re.MULTILINE)
    planned = job_stats(logs["slurm"]) - LOCAL_RULES  # the rules of the jobs the run planned
    assert {"prepare_dataset", "features", "split", "pretrain", "unlearn", "evaluate"} <= planned
    assert planned <= set(rules.findall(inside)) <= set(rules.findall(logs["local"])), inside[-3000:]
    run_id = re.search(r"SLURM run ID: (\S+)", logs["slurm"]).group(1)
    sacct = subprocess.run(["sacct", "--completion", "--noheader", "--parsable2",
                            "--format=JobID,JobName,Partition,AllocCPUS,Timelimit,State,ExitCode,Elapsed"],
                           capture_output=True, text=True, env=slurm_env, timeout=60)
    assert sacct.returncode == 0, sacct.stderr
    rows = [line.split("|") for line in sacct.stdout.splitlines() if line.split("|")[1] == run_id]
    print("\n".join("|".join(r) for r in rows))
    assert {r[0] for r in rows} == submitted
    assert {(r[5], r[6]) for r in rows} == {("COMPLETED", "0:0")}

    a, b = deterministic_files(tiny_run), deterministic_files(tmp_path / "slurm")
    assert len(b) > 10 and {"results/spine/retrain.json", "artifacts/spine/pretrain/history/grads.npy",
                            "artifacts/spine/unlearn/retrain/models.safetensors"} <= b.keys()
    assert b.keys() <= a.keys(), sorted(b.keys() - a.keys())
    differing = [name for name in b if a[name] != b[name]]
    assert not differing, f"{len(differing)} of {len(b)} files differ between the local and the Slurm run: {differing}"
