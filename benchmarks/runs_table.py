"""docs/running.md's table of measured runs, from benchmarks/results/runs.json (one row per fresh-clone run of a
README command): `python benchmarks/runs_table.py` prints it; tests/test_readme.py checks the page holds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "results" / "runs.json"


def minutes(seconds: float | None) -> str:
    return "" if seconds is None else f"{int(seconds) // 60} min {int(seconds) % 60:02d} s"


def table(path: Path = RUNS) -> str:
    """The Markdown table, command 1's runs then command 2's, each in the order measured."""
    runs = json.loads(path.read_text())["runs"]
    head = ["command", "date", "commit", "machine", "wall time", "of it bootstrap", "job-seconds (jobs)", "tests",
            "note"]
    lines = ["| " + " | ".join(head) + " |", "|---:|---|---|---|---:|---:|---:|---|---|"]
    for r in sorted(runs, key=lambda r: r["command"]):
        jobs = "" if r["job_seconds"] is None else f"{r['job_seconds']:,.0f} ({r['jobs']})"
        lines.append(f"| {r['command']} | {r['date']} | {r['commit']} | {r['machine']} | {minutes(r['wall_s'])} | "
                     f"{minutes(r['bootstrap_s'])} | {jobs} | {r['tests'] or ''} | {r['note']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
