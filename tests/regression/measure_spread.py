"""Measure how much the golden numbers move across torch versions and seeds, and derive their tolerances.

    # one quick-scale run (the shipped params.yaml, `seed` overridden, data.raw_root made absolute), as
    # tests/test_regression.py's quick_run fixture makes it; the venv's python runs snakemake:
    python tests/regression/measure_spread.py run --venv .venv --seed 0 --out /scratch/t2141_s0
    python tests/regression/measure_spread.py run --venv /work/venvs/torch215 --seed 0 --out /scratch/t215_s0
    # the spreads of every pinned number over those runs, per metric family, and the tolerances they give:
    python tests/regression/measure_spread.py spread /scratch/t2141_s* /scratch/t215_s* --json spread.json
    # ... written into the golden files' tolerance blocks:
    python tests/regression/measure_spread.py spread /scratch/* --write

Each run directory records the torch version and seed it was made with (run.json). The numbers are read with
the extraction functions of tests/test_regression.py, so exactly the pinned numbers are measured.
Cross-version spread: |x(version a, seed s) - x(version b, seed s)|, maximised over seeds and numbers of a family.
Seed-to-seed spread: max - min over seeds within one version. Tolerance (rule below, `derive`): the cross-version
maximum times MARGIN, rounded up to one significant digit, at least the family's resolution (one test sample
for accuracies; 0 for counts), and reported beside the smallest seed-to-seed spread so a reader sees what a
regression would have to exceed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

import test_regression as reg  # noqa: E402

MARGIN = 3.0  # tolerance = MARGIN x the largest cross-version change seen (then rounded up)
RESOLUTION = {  # the smallest meaningful step of a family: tolerances never go below it
    "accuracy": 1e-4,   # one of the 10 000 test samples
    "count": 0,         # exact
}
GOLDEN = {"spine": (reg.GOLDEN, "methods", reg.reported, "results/spine"),
          "pdudt": (reg.GOLDEN_PDUDT, "variants", reg.reported_pdudt, "results/pdudt_fashion_mnist"),
          "sglu": (reg.GOLDEN_SGLU, "numbers", reg.reported_sglu, "results/sglu")}


def run(venv: Path, seed: int, out: Path) -> None:
    """One quick-scale run under `venv` with `seed`, in `out` (resumed by snakemake if it exists)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert params["scale"] == "quick", "the golden numbers are for scale: quick"
    params["seed"] = seed
    params["data"]["raw_root"] = str(ROOT / params["data"]["raw_root"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    python = venv.absolute() / "bin" / "python"
    torch = subprocess.run([str(python), "-c", "import torch, torchvision; print(torch.__version__, "
                            "torchvision.__version__)"], capture_output=True, text=True, check=True).stdout.split()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.monotonic()
    subprocess.run([str(python), "-m", "snakemake", "--cores", "2", "-d", str(out), "-s", str(ROOT / "Snakefile")],
                   check=True, env=env)
    (out / "run.json").write_text(json.dumps({"torch": torch[0], "torchvision": torch[1], "seed": seed,
                                              "wall_seconds": round(time.monotonic() - start, 1)}, indent=2) + "\n")


def family(part: str, key: str) -> str:
    """The tolerance family of a number: its key, per-class accuracies grouped."""
    return "per_class_accuracy" if key.startswith("per_class_accuracy.") else key


def numbers(run_dir: Path) -> dict[tuple[str, str, str], float | None]:
    """Every pinned number of a run: (part, cell, key) -> value."""
    out = {}
    for part, (_, _, extract, results) in GOLDEN.items():
        for cell, values in extract(run_dir / results).items():
            out.update({(part, cell, key): v for key, v in values.items()})
    return out


def spreads(runs: list[Path]) -> tuple[dict, list[str]]:
    """Per (part, family): the largest cross-version and seed-to-seed spreads and where they occur; and the
    numbers that are defined in one run and undefined (None) in another of the same seed ("flips")."""
    meta = {r: json.loads((r / "run.json").read_text()) for r in runs}
    values = {r: numbers(r) for r in runs}
    keys = set.intersection(*(set(v) for v in values.values()))
    out, flips = {}, []

    def note(part, key, kind, spread, where):
        entry = out.setdefault((part, family(part, key)), {"cross_version": (0.0, ""), "seed": (math.inf, ""),
                                                           "seed_max": (0.0, ""), "numbers": set()})
        if kind == "seed":
            if spread < entry["seed"][0]:
                entry["seed"] = (spread, where)
            if spread > entry["seed_max"][0]:
                entry["seed_max"] = (spread, where)
        elif spread > entry[kind][0]:
            entry[kind] = (spread, where)

    for part, cell, key in sorted(keys):
        for a, b in combinations(runs, 2):
            va, vb = values[a][(part, cell, key)], values[b][(part, cell, key)]
            same_seed = meta[a]["seed"] == meta[b]["seed"]
            if (va is None) != (vb is None):
                if same_seed:
                    flips.append(f"{part}:{cell}.{key}: {va} ({a.name}) vs {vb} ({b.name})")
                continue
            if va is None or not same_seed or meta[a]["torch"] == meta[b]["torch"]:
                continue
            note(part, key, "cross_version", abs(va - vb), f"{cell} seed {meta[a]['seed']}")
        out.setdefault((part, family(part, key)), {"cross_version": (0.0, ""), "seed": (math.inf, ""),
                                                  "seed_max": (0.0, ""), "numbers": set()})["numbers"].add(cell)
        for version in sorted({m["torch"] for m in meta.values()}):
            same = [values[r][(part, cell, key)] for r in runs if meta[r]["torch"] == version]
            same = [v for v in same if v is not None]
            if len(same) >= 2:
                # the seed-to-seed spread of the family: the smallest over its numbers is what a too wide
                # tolerance would hide for the most stable number; the largest shows the typical scale
                note(part, key, "seed", max(same) - min(same), f"{cell} torch {version}")
    return out, flips


def derive(part: str, fam: str, cross: float) -> float:
    """The tolerance rule: MARGIN x the cross-version maximum, rounded up to one significant digit, never
    below the family's resolution."""
    floor = RESOLUTION["count"] if fam in ("grad_evals", "bytes_read", "forget_samples", "mia_samples", "total") \
        else RESOLUTION["accuracy"]
    if cross == 0:
        return floor
    raw = MARGIN * cross
    digit = 10 ** math.floor(math.log10(raw))
    return max(math.ceil(raw / digit - 1e-9) * digit, floor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--venv", type=Path, required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("spread")
    s.add_argument("runs", type=Path, nargs="+")
    s.add_argument("--json", type=Path)
    s.add_argument("--write", action="store_true", help="write the derived tolerances into the golden files")
    args = parser.parse_args()
    if args.command == "run":
        run(args.venv, args.seed, args.out)
        return
    table, flips = spreads(args.runs)
    meta = [json.loads((r / "run.json").read_text()) for r in args.runs]
    rows = []
    for (part, fam), e in sorted(table.items()):
        tol = derive(part, fam, e["cross_version"][0])
        seed_min = e["seed"][0] if e["seed"][0] != math.inf else None
        rows.append({"part": part, "family": fam, "numbers": len(e["numbers"]),
                     "cross_version_max": e["cross_version"][0], "cross_version_where": e["cross_version"][1],
                     "seed_spread_min": seed_min, "seed_spread_min_where": e["seed"][1],
                     "seed_spread_max": e["seed_max"][0], "tolerance": tol})
    result = {"runs": [{"dir": str(r), **m} for r, m in zip(args.runs, meta)], "margin": MARGIN,
              "families": rows, "flips": flips}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    for row in rows:
        print(f"{row['part']:6} {row['family']:32} n={row['numbers']:4} cross={row['cross_version_max']:.3g} "
              f"seed_min={row['seed_spread_min']} "
              f"seed_max={row['seed_spread_max']:.3g} tol={row['tolerance']:.3g}")
    print(f"{len(flips)} flips" + "".join(f"\n  {f}" for f in flips))
    if args.write:
        for part, (path, *_rest) in GOLDEN.items():
            golden = json.loads(path.read_text())
            golden["tolerance"] = {r["family"]: r["tolerance"] for r in rows if r["part"] == part}
            path.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
