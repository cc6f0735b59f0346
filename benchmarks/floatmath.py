"""Cost of two per-step checks and roots the training loops call on every model: the IEEE float32 square root
(unlearning.floatmath.sqrt: Adam's, on RR-DU's FLNet of 1,663,562 parameters) through float64 against numpy's
(the same bits, tests/test_floatmath.py), and the finiteness check of a model stack (train/dsgd.py's all_finite,
once per round) against isfinite's mask.

    .venv/bin/python benchmarks/floatmath.py [--out benchmarks/results/floatmath_cpu.json] [--threads 1]
"""

from __future__ import annotations

import argparse
import datetime
import platform

import numpy as np
import torch
from engine import cpu_model  # benchmarks/engine.py
from pool import median_ms  # benchmarks/pool.py

from unlearning.files import write_json
from unlearning.train.dsgd import all_finite

SQRT = {"Adam's second moment, FLNet (RR-DU)": 1_663_562, "a 100,000-parameter model": 100_000}
STACKS = {"20 clients x 100,000 parameters": (20, 100_000), "10 clients x 7,850 (logistic regression)": (10, 7_850)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (a quick job's: 1)")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen, rows = torch.Generator().manual_seed(0), {}
    for what, n in SQRT.items():
        v = torch.rand(n, generator=gen) * 1e-4
        old = median_ms(lambda v=v: v.double().sqrt().float(), args.reps)
        new = median_ms(lambda v=v: torch.from_numpy(np.sqrt(v.numpy())), args.reps)
        rows[f"sqrt: {what}"] = {"numel": n, "float64_route_ms": round(old, 4), "numpy_ms": round(new, 4),
                                 "speedup": round(old / new, 2)}
    for what, shape in STACKS.items():
        t = torch.randn(*shape, generator=gen)
        old = median_ms(lambda t=t: bool(torch.isfinite(t).all()), args.reps)
        new = median_ms(lambda t=t: all_finite(t), args.reps)
        rows[f"finite: {what}"] = {"shape": list(shape), "isfinite_all_ms": round(old, 4),
                                   "all_finite_ms": round(new, 4), "speedup": round(old / new, 2)}
    for what, row in rows.items():
        print(f"{what:<50} {row['speedup']:6.1f}x")
    meta = {"measured": "median of --reps calls, one process, nothing else running",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "device_name": cpu_model(), "threads": torch.get_num_threads(), "reps": args.reps}
    if args.out:
        write_json(args.out, {"meta": meta, "cases": rows})


if __name__ == "__main__":
    main()
