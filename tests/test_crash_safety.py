"""Crash safety: SIGKILL the tiny workflow at seeded random moments, re-run it, and compare with an
uninterrupted run byte for byte; no half-written artifact may survive.

Three kinds of kill, each trial one of them:
- `job`: the running `python -m unlearning <step>` processes (Snakemake survives, sees the failure and
  removes the job's outputs);
- `snakemake`: the Snakemake process alone (its jobs run on as orphans and finish; Snakemake's
  incomplete marker, then `--rerun-incomplete`, must redo them; the stale lock needs `--unlock`);
- `session`: Snakemake and every job at once, as a machine crash would (minus the page cache).

After a kill the run is repeated as a user would: `snakemake --unlock` where Snakemake itself died, then
the documented local command `snakemake --profile workflow/profiles/default` (which sets
`rerun-incomplete`). The moments are drawn from a seeded generator: wait for a trigger (a pretrain
history being written, any temporary file appearing, or a job having run some time), then a drawn delay.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, workflow_env

SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")
PROFILE = ROOT / "workflow" / "profiles" / "default"
MODULES = ("unlearning", "unlearning.warm")  # a job's command, and its client's (unlearning/warm.py)
# Each job in its own interpreter: forked from the run's warm one (unlearning/warm.py) a tiny job ends within a
# second of its start, before most drawn moments below. Its kills are tests/test_warm.py's (a killed client leaves
# no job, signals reach the job, the server ends with Snakemake); here the crashed run's bytes are also compared
# with the session's tiny run, whose jobs were forked.
ENV = {**workflow_env(), "UNLEARNING_WARM": "0"}
SEED = 20261123
# The spine's report (prepare, features, split, pretrain with its memory-mapped history and per-round
# checkpoints, unlearn, evaluate, report) and one PDUDT chain that reads a history (pretrain, variants,
# continue, attack, evaluate): every kind of writer in 19 jobs. The whole DAG's determinism is
# tests/test_pipeline.py's. (Until 2026-11-29 the first target was reports/index.md, which had become the front
# page over every paper: 112 jobs, a quarter of the test suite's time, for no kind of writer more.)
TARGETS = ("reports/spine/index.md", "results/pdudt_synthetic/pdudt.json")
# (trigger, kill kind): each kind at least twice; two kills while a pretrain writes its history, the others a
# drawn time after a job of the named step started, so that the kills spread over the DAG (most land in
# its imports or compute, some in its writes; if that job has ended by then, whatever job runs is killed).
# The trials follow the steps' order in the run: a trial whose step has already finished has nothing to kill (in the
# old order, evaluate and report after PDUDT's steps, the last two never fired: 5 hits of 7, the least the test
# takes; in this order 7 of 7 on two runs, 2026-11-29).
PLAN = (("pretrain", "job"), ("pretrain", "session"), ("unlearn", "snakemake"), ("evaluate", "job"),
        ("report", "snakemake"), ("pdudt-variants", "job"), ("pdudt-continue", "session"))
RUN_TIMEOUT_S = 600  # one Snakemake invocation, generous for a loaded machine
COMPARED_DIRS = ("data", "artifacts", "results")
SNAKEMAKE_MARKER = ".snakemake_timestamp"  # Snakemake's empty marker in a directory output
WALL_TIME_FILES = ("timing.csv", "table2.csv", "cost.csv")  # reports/*: wall times, not deterministic


def snakemake(workdir: Path, *extra: str) -> list[str]:
    return [SNAKEMAKE, "--profile", str(PROFILE), "--cores", "2", "-d", str(workdir), "-s",
            str(ROOT / "Snakefile"), *extra]


# --- processes, from /proc (Linux) ---

def _parent_map() -> dict[int, int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def descendants(pid: int) -> list[int]:
    parents, found, frontier = _parent_map(), [], [pid]
    while frontier:
        children = [p for p, pp in parents.items() if pp in frontier]
        found += children
        frontier = children
    return found


def argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def job_step(args: list[str]) -> str | None:
    """The step of a `python -m unlearning [--params P] [--threads N] <step> ...` command line, or of the client
    that runs it forked from the run's warm interpreter (`-m unlearning.warm`, whose killing kills the job), else
    None. The warm server and the processes it forks carry its own command line (`unlearning.warm serve`)."""
    module = next((i for i, a in enumerate(args[1:], 1) if args[i - 1] == "-m" and a in MODULES), None)
    if module is None:
        return None
    rest = args[module + 1:]
    while rest and rest[0].startswith("--"):
        rest = rest[2:]
    return rest[0] if rest and rest[0] != "serve" else None


def running_jobs(snakemake_pid: int) -> dict[int, str]:
    """pid -> step of every job process under Snakemake (not the shell that wraps it)."""
    jobs = {pid: job_step(argv(pid)) for pid in descendants(snakemake_pid)}
    return {pid: step for pid, step in jobs.items() if step}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- files ---

def temp_files(workdir: Path) -> list[str]:
    """Every temporary file outside Snakemake's own metadata."""
    found = []
    for root, dirs, files in os.walk(workdir):
        dirs[:] = [d for d in dirs if d != ".snakemake"]
        found += [os.path.relpath(os.path.join(root, f), workdir) for f in files if f.endswith(".tmp")]
    return sorted(found)


def pretrain_writing(workdir: Path) -> bool:
    return any((workdir / "artifacts").glob("*/pretrain/history/.grads.npy.tmp"))


def deterministic_files(workdir: Path) -> dict[str, bytes]:
    files = [f for d in COMPARED_DIRS for f in sorted((workdir / d).rglob("*")) if f.is_file()]
    files += [f for f in sorted((workdir / "reports").rglob("*.csv")) if f.name not in WALL_TIME_FILES]
    return {str(f.relative_to(workdir)): f.read_bytes() for f in files
            if "raw" not in f.parts and f.name != SNAKEMAKE_MARKER}


def unreadable(path: Path) -> str | None:
    """Why a written file is not whole, or None: each format is read back the way a later step reads it."""
    from safetensors.torch import load_file

    try:
        if path.suffix == ".safetensors":
            load_file(str(path))
        elif path.suffix == ".npy":
            np.load(path, allow_pickle=False)  # reads every byte the header promises
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".csv":
            if len(list(csv.reader(path.open()))) < 2:
                return "no rows"
        elif path.suffix == ".png":
            if not path.read_bytes().endswith(b"IEND\xaeB`\x82"):
                return "no PNG end chunk"
        elif path.stat().st_size == 0:
            return "empty"
    except Exception as err:  # noqa: BLE001 - any failure to read back is the finding
        return f"{type(err).__name__}: {err}"
    return None


# --- one killed run ---

@dataclass
class Trial:
    trigger: str
    kind: str
    delay_s: float
    fired: bool = False
    jobs_killed: list[str] = field(default_factory=list)  # steps running at the kill
    temp_at_kill: list[str] = field(default_factory=list)  # half-written files on disk just after it
    temp_left: list[str] = field(default_factory=list)  # those still there when every process had stopped

    @property
    def hit(self) -> bool:
        return self.fired and bool(self.jobs_killed)


def wait_for(trigger: str, workdir: Path, proc: subprocess.Popen, delay_s: float, deadline: float) -> dict:
    """Block until the trigger holds (a pretrain history being written, or a job of the named step running),
    sleep the drawn delay, and return the jobs running then; if none is, wait for the trigger again.
    {} if the run ended first."""
    while time.monotonic() < deadline and proc.poll() is None:
        if trigger == "pretrain" and not pretrain_writing(workdir):
            time.sleep(0.01)
            continue
        if trigger != "pretrain" and trigger not in running_jobs(proc.pid).values():
            time.sleep(0.02)
            continue
        time.sleep(delay_s)
        if proc.poll() is None and (jobs := running_jobs(proc.pid)):
            return jobs
    return {}


def wait_gone(pids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"processes {pids} still running {timeout_s}s after the kill"
        time.sleep(0.05)


def killed_run(workdir: Path, trial: Trial) -> None:
    """Start the re-run command, kill it at the trial's moment, and leave the directory as the kill left it."""
    log = (workdir.parent / f"{workdir.name}.log").open("a")
    proc = subprocess.Popen(snakemake(workdir, *TARGETS), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env=ENV)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    jobs = wait_for(trial.trigger, workdir, proc, trial.delay_s, deadline)
    trial.fired = bool(jobs)
    trial.jobs_killed = sorted(jobs.values())
    if trial.fired and trial.kind == "job":
        for pid in jobs:
            os.kill(pid, signal.SIGKILL)
    elif trial.fired and trial.kind == "snakemake":
        orphans = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        trial.temp_at_kill = temp_files(workdir)
        wait_gone(orphans, RUN_TIMEOUT_S)  # the orphaned jobs run to their end, as they would
    elif trial.fired and trial.kind == "session":
        os.killpg(proc.pid, signal.SIGKILL)
    if trial.kind != "snakemake":
        trial.temp_at_kill = temp_files(workdir)
    proc.wait(timeout=max(1, deadline - time.monotonic()))
    trial.temp_left = temp_files(workdir)
    log.close()
    if trial.fired and trial.kind in ("snakemake", "session"):  # Snakemake's lock survived it
        unlock = subprocess.run(snakemake(workdir, "--unlock"), capture_output=True, text=True)
        assert unlock.returncode == 0, unlock.stderr[-2000:]


def complete_run(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(snakemake(workdir, *TARGETS), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env=ENV)


@pytest.mark.slow
def test_killed_runs_rebuild_byte_identical_results(tiny_run, tmp_path):
    """The uninterrupted reference is the session's tiny run (conftest's `tiny_run`: the whole workflow, a
    superset of TARGETS' jobs)."""
    rng = random.Random(SEED)
    trials = [Trial(trigger, kind, round(rng.uniform(0.0, 0.3) if trigger == "pretrain" else rng.uniform(0.2, 2.0), 3))
              for trigger, kind in PLAN]
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copy(ROOT / "tests" / "config" / "tiny.yaml", crashed / "params.yaml")
    start = time.monotonic()

    for trial in trials:
        killed_run(crashed, trial)
    final = complete_run(crashed)
    summary = "\n".join(f"{t.trigger:8s} {t.kind:9s} +{t.delay_s:.3f}s fired={t.fired} jobs={t.jobs_killed} "
                        f"temp files at kill={t.temp_at_kill} left={t.temp_left}" for t in trials)
    print(f"\n{len(trials)} kill trials in {time.monotonic() - start:.0f}s (seed {SEED}):\n{summary}")
    assert final.returncode == 0, final.stderr[-3000:]
    hits = [t for t in trials if t.hit]
    assert len(hits) >= 5, f"only {len(hits)} kills landed on a running job:\n{summary}"
    assert {t.kind for t in hits} == {"job", "snakemake", "session"}, summary
    assert any("pretrain" in t.jobs_killed for t in hits), f"no kill landed during a pretrain:\n{summary}"

    # nothing half-written: no temporary file, every file reads back whole, Snakemake marks nothing incomplete
    assert temp_files(crashed) == []
    broken = {str(f.relative_to(crashed)): why for d in ("data", "artifacts", "results", "reports", "timings")
              for f in (crashed / d).rglob("*")
              if f.is_file() and f.name != SNAKEMAKE_MARKER and (why := unreadable(f))}
    assert broken == {}
    incomplete = crashed / ".snakemake" / "incomplete"
    assert not incomplete.exists() or not any(incomplete.iterdir())
    dry = subprocess.run([SNAKEMAKE, "--cores", "1", "-n", "-d", str(crashed), "-s", str(ROOT / "Snakefile"),
                          *TARGETS], capture_output=True, text=True)  # no --rerun-incomplete here
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stderr[-2000:]

    # the same bytes as the uninterrupted run (the dry run above shows nothing of TARGETS is missing)
    expected, got = deterministic_files(tiny_run), deterministic_files(crashed)
    assert {"artifacts/spine/pretrain/history/grads.npy",
            "artifacts/spine/pretrain/checkpoints/round_00003.safetensors",
            "artifacts/pdudt_synthetic/pretrain/history/grads.npy", "results/pdudt_synthetic/pdudt.json",
            "results/spine/retrain.json", "reports/spine/metrics.csv"} <= got.keys()
    assert got.keys() <= expected.keys(), sorted(got.keys() - expected.keys())
    assert [name for name in got if got[name] != expected[name]] == []


# --- the defects the killed runs showed, each fixed at its root ---

KILLED_WRITER = """
import os, signal, sys
from unlearning.files import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    tmp.write_text("half")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_write_leaves_only_a_temporary_that_the_next_write_removes(tmp_path):
    from unlearning.files import write_json

    target = tmp_path / "results" / "method.json"
    write_json(tmp_path / "results" / "other.json", {"kept": True})
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)])
    assert killed.returncode == -signal.SIGKILL
    assert not target.exists() and len(temp_files(tmp_path)) == 1  # the temporary, never the result
    write_json(target, {"done": True})
    assert json.loads(target.read_text()) == {"done": True}
    assert temp_files(tmp_path) == [] and (tmp_path / "results" / "other.json").is_file()


def test_a_history_being_rewritten_does_not_look_done(tmp_path):
    import torch

    from unlearning.history import History, HistoryWriter

    first = HistoryWriter(tmp_path / "h", 1, [0, 1], 3)
    first.append(0, torch.ones(2, 3), {"W": torch.eye(2)})
    first.close()
    HistoryWriter(tmp_path / "h", 2, [0, 1], 3)  # a second run starts, then is killed before close()
    with pytest.raises(FileNotFoundError, match="meta.json missing"):
        History(tmp_path / "h")
