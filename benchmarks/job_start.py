"""What a job's start costs: one job of each rule of a finished run, re-run alone and timed, with its imports.

Most of a tiny or quick job is the interpreter's start: Python, torch (1.5-2 s), the modules a step imports, and,
where the step batches gradients with torch.func's vmap of grad, `torch._dynamo` (its first call imports it: about
1.2 s; one model's gradient goes through train/autodiff.py, which does not).
This re-runs, in RUN_DIR (a directory a workflow finished in: its outputs are rewritten with the same bytes), the
first job of each rule from Snakemake's dry run, one at a time on an otherwise idle machine: `--repeats` times for
its median wall time, then once under `python -X importtime` (its log) for what its heavy imports cost. Beside them,
the floor: `python -c "import torch"` alone. Comparing two trees' runs of the same rules gives a change's effect per
job (the workflow's own benchmarks, two jobs sharing two cores, vary by a second or two a job). The jobs run here in
their own interpreters, as a cluster's do; a local workflow run forks them from its warm one (unlearning/warm.py).

    .venv/bin/python benchmarks/job_start.py RUN_DIR [--rules a,b] [--repeats 3] [--label TEXT] [--out X.json]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from unlearning.files import write_json
from unlearning.provenance import cpu_model

HEAVY = {"torch": "torch", "torch._dynamo.aot_compile": "torch._dynamo", "scipy.stats": "scipy.stats",
         "scipy.optimize": "scipy.optimize", "sklearn": "sklearn", "pandas": "pandas", "matplotlib.pyplot": "pyplot",
         "seaborn": "seaborn", "networkx": "networkx", "opacus.accountants": "opacus"}
CPUINFO = Path("/proc/cpuinfo")
IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$")


def shell_commands(run_dir: Path, snakemake: str) -> dict[str, str]:
    """rule -> the shell command of its first job in a forced dry run of RUN_DIR's workflow."""
    out = subprocess.run([snakemake, "-n", "-F", "-p", "--cores", "2"], cwd=run_dir, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{run_dir}: snakemake's dry run failed: {out.stderr[-500:]}")
    commands, rule = {}, None
    for line in out.stdout.splitlines():
        if m := re.match(r"(?:local)?rule (\w+):", line):
            rule = m.group(1)
        elif line.startswith("Shell command: ") and rule and rule not in commands:
            commands[rule] = line.removeprefix("Shell command: ")
    return commands


def timed(command: str, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(["bash", "-c", command], cwd=cwd, env=env, check=True)
    return time.perf_counter() - start


def imports(command: str, cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """The cumulative import seconds of each HEAVY module the job imports (first import only), from its log."""
    log = re.search(r"> (\S+) 2>&1$", command)
    subprocess.run(["bash", "-c", command], cwd=cwd, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, check=True)
    found: dict[str, float] = {}
    if log:
        for line in (cwd / log.group(1)).read_text(errors="replace").splitlines():
            if (m := IMPORT_LINE.match(line)) and m.group(2) in HEAVY:
                found.setdefault(HEAVY[m.group(2)], int(m.group(1)) / 1e6)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--rules", help="comma-separated rules (default: every rule with a shell command)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    run_dir = args.run_dir.resolve()
    snakemake = str(Path(sys.executable).parent / "snakemake")
    commands = shell_commands(run_dir, snakemake)
    wanted = args.rules.split(",") if args.rules else sorted(commands)
    unknown = sorted(set(wanted) - set(commands))
    if unknown:
        raise SystemExit(f"--rules: {', '.join(unknown)} not in the run's graph; valid: {', '.join(sorted(commands))}")
    env = {**os.environ, "PYTHONPATH": str(run_dir / "src")}
    floor = statistics.median(timed(f"{sys.executable} -c 'import torch'", run_dir, env) for _ in range(args.repeats))
    rows = {}
    for rule in wanted:
        walls = [timed(commands[rule], run_dir, env) for _ in range(args.repeats)]
        rows[rule] = {"median_s": round(statistics.median(walls), 3), "imports_s": {
            k: round(v, 3) for k, v in imports(commands[rule], run_dir, env).items()}}
        print(f"{rule:36s} {rows[rule]['median_s']:6.2f} s  " + ", ".join(
            f"{k} {v:.2f}" for k, v in rows[rule]["imports_s"].items()), flush=True)
    print(f"floor (python -c 'import torch'): {floor:.2f} s; mean over the rules "
          f"{statistics.fmean(r['median_s'] for r in rows.values()):.2f} s")
    if args.out:
        machine = cpu_model(CPUINFO.read_text() if CPUINFO.is_file() else "")
        write_json(args.out, {"label": args.label, "machine": machine, "cpu_count": os.cpu_count(),
                              "repeats": args.repeats, "torch_import_floor_s": round(floor, 3), "jobs": rows,
                              "note": "imports_s: cumulative seconds under -X importtime (its own overhead included), "
                                      "one run; median_s: the job's wall time without it"})


if __name__ == "__main__":
    main()
