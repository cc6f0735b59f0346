"""Where a workflow run's time goes: its jobs' Snakemake benchmarks (`logs/benchmarks/**.tsv`) summed per part.

README command 1 (`snakemake --cores all` at scale quick) has a target of 15 minutes on 2 cores with the bootstrap
(issue 54; issue 40's 8 minutes for the graph alone could not be met), and the test suite re-runs the quick scale on
the machine's own code paths (tests/regression/README.md). This reads a finished
run's directory and writes, per part (the first folder under logs/benchmarks: pdudt, cdfl, rrdu, ...), its jobs and
the sum of their wall seconds, the largest jobs, and the run's own wall time when given. Job seconds are wall time
(Snakemake's `s` column): each quick job runs one torch thread, so on an otherwise idle machine they are its CPU
seconds; the CPU column is sampled and misses a job's last seconds, so it is not used.

With `--schedule`, it also asks how much any job order could save: it reads the run's job graph from Snakemake's
dry run (`snakemake -n -F` in RUN_DIR), and replays the measured jobs on `--cores` cores by list scheduling (a free
core takes the first ready job): in Snakemake's order for equal priorities (largest input first) and longest
remaining chain first (the classic critical-path order). Next to the bound max(job seconds / cores, critical path),
it says what a rule priority could gain at most.

    .venv/bin/python benchmarks/workflow.py RUN_DIR [--wall SECONDS] [--label TEXT] [--schedule] [--cores 2]
        [--out benchmarks/results/X.json]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import heapq
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from unlearning.files import write_json

TARGET_S = 720  # README command 1's graph on 2 cores: 15 minutes with the bootstrap's about 3 (issue 54)


def jobs(run_dir: Path) -> dict[str, float]:
    """Job (its benchmark file, relative to logs/benchmarks) -> wall seconds."""
    root = run_dir / "logs" / "benchmarks"
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: missing; give the directory a workflow ran in (it writes logs/benchmarks)")
    out = {}
    for path in sorted(root.rglob("*.tsv")):
        rows = list(csv.DictReader(path.open(), delimiter="\t"))
        if rows:
            out[str(path.relative_to(root).with_suffix(""))] = float(rows[-1]["s"])
    return out


def part_of(job: str) -> str:
    """The paper (or spine, or the shared data steps) a job belongs to: its benchmark's first folder, or for the
    steps the spine and PDUDT share (split, pretrain, unlearn, evaluate) the experiment it ran for."""
    head, _, rest = job.partition("/")
    if not rest:
        return "reports" if head in ("report", "index", "provenance") else head
    if head in ("split", "pretrain", "unlearn", "evaluate"):
        return "pdudt" if rest.startswith("pdudt") else rest.split("/")[0].split("_")[0]
    return {"prepare": "data", "features": "data"}.get(head, head)


def summary(run_dir: Path, wall: float | None, label: str) -> dict:
    times = jobs(run_dir)
    parts: dict[str, dict] = {}
    for job, s in times.items():
        part = part_of(job)
        entry = parts.setdefault(part, {"jobs": 0, "job_seconds": 0.0})
        entry["jobs"] += 1
        entry["job_seconds"] = round(entry["job_seconds"] + s, 1)
    total = round(sum(times.values()), 1)
    return {"meta": {"label": label, "run_dir": str(run_dir), "date": datetime.date.today().isoformat(),
                     "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
                     "target_s": TARGET_S},
            "wall_s": wall, "jobs": len(times), "job_seconds": total,
            "parts": dict(sorted(parts.items(), key=lambda kv: -kv[1]["job_seconds"])),
            "largest": dict(sorted(times.items(), key=lambda kv: -kv[1])[:15])}


def dry_run_jobs(text: str) -> list[dict]:
    """The jobs of a Snakemake dry run's output (`snakemake -n -p`): rule, inputs, outputs and benchmark file."""
    out: list[dict] = []
    for line in text.splitlines():
        if m := re.match(r"(?:local)?rule (\S+):$", line.strip()):
            out.append({"rule": m.group(1), "input": [], "output": [], "benchmark": None})
        elif out and (m := re.match(r"\s+(input|output|benchmark): (.*)$", line)):
            key, value = m.groups()
            out[-1][key] = value.strip() if key == "benchmark" else [v.strip() for v in value.split(",")]
    return out


def simulate(durations: list[float], deps: list[list[int]], cores: int, key) -> float:
    """Makespan of list scheduling: whenever a core is free it takes the ready job that sorts first by `key`."""
    children: list[list[int]] = [[] for _ in durations]
    waiting = [len(d) for d in deps]
    for job, ds in enumerate(deps):
        for d in ds:
            children[d].append(job)
    ready = [j for j, w in enumerate(waiting) if w == 0]
    running: list[tuple[float, int]] = []
    now, free = 0.0, cores
    while ready or running:
        ready.sort(key=key)
        while free and ready:
            job = ready.pop(0)
            free -= 1
            heapq.heappush(running, (now + durations[job], job))
        now, job = heapq.heappop(running)
        free += 1
        for c in children[job]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)
    return now


def schedule(run_dir: Path, cores: int, dry_run: str | None = None) -> dict:
    """The measured jobs replayed on `cores` cores (module docstring); `dry_run`: the dry run's text, else run it."""
    if dry_run is None:
        snakemake = Path(sys.executable).with_name("snakemake")
        dry_run = subprocess.run([str(snakemake), "-n", "-F", "--cores", "1", "-d", str(run_dir)], cwd=run_dir,
                                 capture_output=True, text=True, check=True).stdout
    graph = dry_run_jobs(dry_run)
    times = jobs(run_dir)
    made_by = {f: j for j, job in enumerate(graph) for f in job["output"]}
    deps = [sorted({made_by[f] for f in job["input"] if made_by.get(f, j) != j}) for j, job in enumerate(graph)]
    prefix = "logs/benchmarks/"
    durations = [times.get(job["benchmark"][len(prefix):].removesuffix(".tsv"), 0.0) if job["benchmark"] else 0.0
                 for job in graph]
    sizes = [sum(os.path.getsize(run_dir / f) for f in job["input"] if (run_dir / f).is_file()) for job in graph]
    chain = [0.0] * len(graph)  # the longest path from a job's start to the run's end
    for j in reversed(topological(deps)):
        chain[j] = durations[j] + max((chain[c] for c in range(len(graph)) if j in deps[c]), default=0.0)
    total, critical = sum(durations), max(chain, default=0.0)
    return {"cores": cores, "jobs": len(graph), "job_seconds": round(total, 1), "critical_path_s": round(critical, 1),
            "bound_s": round(max(total / cores, critical), 1),
            "makespan_s": {"snakemake_order": round(simulate(durations, deps, cores, lambda j: -sizes[j]), 1),
                           "critical_path_first": round(simulate(durations, deps, cores, lambda j: -chain[j]), 1)}}


def topological(deps: list[list[int]]) -> list[int]:
    order, seen = [], set()

    def visit(j):
        if j not in seen:
            seen.add(j)
            for d in deps[j]:
                visit(d)
            order.append(j)

    for j in range(len(deps)):
        visit(j)
    return order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--wall", type=float, help="the run's own wall seconds (e.g. from `time`)")
    ap.add_argument("--label", default="", help="what ran: command, scale, code paths, commit")
    ap.add_argument("--schedule", action="store_true", help="replay the jobs on --cores cores (module docstring)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    result = summary(a.run_dir, a.wall, a.label)
    if a.schedule:
        result["schedule"] = schedule(a.run_dir, a.cores)
        print(f"replayed on {a.cores} cores: {result['schedule']}")
    for part, e in result["parts"].items():
        print(f"{part:15s} {e['jobs']:4d} jobs {e['job_seconds']:8.1f} s")
    print(f"{'total':15s} {result['jobs']:4d} jobs {result['job_seconds']:8.1f} s; wall {a.wall} s "
          f"(target {TARGET_S} s)")
    if a.out:
        write_json(a.out, result)


if __name__ == "__main__":
    main()
