"""Where a workflow run's time goes: its jobs' Snakemake benchmarks (`logs/benchmarks/**.tsv`) summed per part.

README command 1 (`snakemake --cores all` at scale quick) has a target of 8 minutes on 2 cores (issue 40), and the
test suite re-runs the quick scale under the portable code paths (tests/regression/README.md). This reads a finished
run's directory and writes, per part (the first folder under logs/benchmarks: pdudt, cdfl, rrdu, ...), its jobs and
the sum of their wall seconds, the largest jobs, and the run's own wall time when given. Job seconds are wall time
(Snakemake's `s` column): each quick job runs one torch thread, so on an otherwise idle machine they are its CPU
seconds; the CPU column is sampled and misses a job's last seconds, so it is not used.

    .venv/bin/python benchmarks/workflow.py RUN_DIR [--wall SECONDS] [--label TEXT] [--out benchmarks/results/X.json]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
from pathlib import Path

from unlearning.files import write_json

TARGET_S = 480  # README command 1 on 2 cores (issue 40)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--wall", type=float, help="the run's own wall seconds (e.g. from `time`)")
    ap.add_argument("--label", default="", help="what ran: command, scale, code paths, commit")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    result = summary(a.run_dir, a.wall, a.label)
    for part, e in result["parts"].items():
        print(f"{part:15s} {e['jobs']:4d} jobs {e['job_seconds']:8.1f} s")
    print(f"{'total':15s} {result['jobs']:4d} jobs {result['job_seconds']:8.1f} s; wall {a.wall} s "
          f"(target {TARGET_S} s)")
    if a.out:
        write_json(a.out, result)


if __name__ == "__main__":
    main()
