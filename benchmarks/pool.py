"""Cost of 2x2 max-pooling where no gradient is taken (evaluation, attack scores): ATen's NCHW max_pool2d
against models.MaxPool2x2's three elementwise maxima of strided views (the same bits, tests/test_models.py),
on the activations of FLNet (RR-DU's evaluation batches) and of the FedAvg CNN.

    .venv/bin/python benchmarks/pool.py [--out benchmarks/results/pool_cpu.json] [--threads 1]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import torch
from engine import cpu_model  # benchmarks/engine.py

from unlearning.files import write_json
from unlearning.models import MaxPool2x2

# (what, activation shape): FLNet's two pooled activations on an evaluation batch of 300 images, and the CNN's
SHAPES = {"flnet pool 1, 300 images": (300, 32, 28, 28), "flnet pool 2, 300 images": (300, 64, 14, 14),
          "cnn pool 1, 256 images": (256, 32, 24, 24), "cnn pool 2, 256 images": (256, 64, 8, 8)}


def median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * sorted(times)[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (a quick job's: 1)")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pool, rows = MaxPool2x2(), {}
    with torch.no_grad():
        for what, shape in SHAPES.items():
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).relu()
            aten, ours = (median_ms(lambda x=x: torch.max_pool2d(x, 2), args.reps),
                          median_ms(lambda x=x: pool(x), args.reps))
            rows[what] = {"shape": list(shape), "aten_ms": round(aten, 3), "strided_maximum_ms": round(ours, 3),
                          "speedup": round(aten / ours, 2)}
            print(f"{what:<28} ATen {aten:7.2f} ms  strided maximum {ours:6.2f} ms  {aten / ours:5.1f}x")
    meta = {"measured": "2x2 max-pooling without gradient, median of --reps calls",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "python": platform.python_version(), "device_name": cpu_model(),
            "threads": torch.get_num_threads(), "reps": args.reps}
    if args.out:
        write_json(args.out, {"meta": meta, "shapes": rows})


if __name__ == "__main__":
    main()
