"""Throughput of one round of decentralized SGD: vmap vs a per-client loop vs the compute bound.

One round = 10 clients each take one local SGD step (forward + backward + update) on their own
256-sample minibatch of Fashion-MNIST-shaped inputs (1x28x28), then the network mixes the stacked
parameters with a 10x10 Metropolis-Hastings matrix. Three ways are timed, as samples per second
(2560 samples / round time):

  vmap           the engine's vectorized path: local_pseudo_gradients(..., "vmap") + mix
  loop           the same call with strategy "loop" (one client after another) + mix
  compute_bound  one model gathers the same 2560 samples and does one forward + backward + update
                 on them as one batch: the best any strategy can do on this device

`resolve_strategy("auto", ...)` chooses between vmap and loop; the acceptance for it is that the
chosen (default) strategy takes at most 1.3x the compute-bound time and is never slower than the
loop. Methods are interleaved within each repetition so background load hits them alike.

    .venv/bin/python benchmarks/engine.py --out benchmarks/results/engine_cpu.json [--threads 2]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import networkx as nx
import torch

from unlearning.files import load_tensors, write_json
from unlearning.models import build_model
from unlearning.topology import metropolis_hastings
from unlearning.train.autodiff import grad
from unlearning.train.dsgd import ClientData, local_pseudo_gradients, make_loss, mix, resolve_strategy
from unlearning.train.flat import FlatSpec

CLIENTS, BATCH, SHAPE, CLASSES = 10, 256, (1, 28, 28), 10
SAMPLES = CLIENTS * BATCH
LR = 0.05
MODELS = ("cnn", "cnn_small", "mlp")
FEATURES = Path("data/features/fashion_mnist.safetensors")


def load_inputs(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Real Fashion-MNIST training features if present, else random tensors of the same shape."""
    if FEATURES.is_file():
        feats = load_tensors(FEATURES)
        return feats["x_train"].to(device), feats["y_train"].to(device), "fashion_mnist"
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, *SHAPE, generator=gen)
    y = torch.randint(0, CLASSES, (SAMPLES,), generator=gen)
    return x.to(device), y.to(device), "random"


def client_data(x: torch.Tensor, y: torch.Tensor) -> tuple[ClientData, torch.Tensor, torch.Tensor]:
    """Equal contiguous shards per client, and one round's minibatch indices [10,1,256] and weights."""
    shards = torch.arange(len(x)).chunk(CLIENTS)
    data = ClientData(x, y, list(shards), [torch.ones(len(s), dtype=torch.bool) for s in shards])
    gen = torch.Generator().manual_seed(1)
    idx = torch.stack([s[torch.randperm(len(s), generator=gen)[:BATCH]] for s in shards]).unsqueeze(1)
    return data, idx, torch.ones(CLIENTS, 1, BATCH)


def round_fns(name: str, x, y, w: torch.Tensor, device: torch.device) -> tuple[dict, int]:
    """Closures, one per method, that each run one round; and the model's parameter count."""
    torch.manual_seed(0)
    model = build_model(name, SHAPE, CLASSES, mlp_hidden=128).to(device)
    spec = FlatSpec.of(model)
    theta = spec.flatten(model).repeat(CLIENTS, 1)
    grad_fn = grad(make_loss(model, spec))
    data, idx, weight = client_data(x, y)
    rows = idx.reshape(-1).to(device)
    wb = weight.reshape(-1).to(device)
    w = w.to(theta)

    def engine(strategy):
        def run():
            pseudo = local_pseudo_gradients(theta, data, idx, weight, LR, grad_fn, strategy)
            return mix(theta, pseudo, w, LR, "model")
        return run

    def compute_bound():  # gathers its minibatch from the dataset too, as every engine round does
        xb, yb = x.index_select(0, rows), y.index_select(0, rows)
        return theta[0] - LR * grad_fn(theta[0], xb, yb, wb)

    return {"vmap": engine("vmap"), "loop": engine("loop"), "compute_bound": compute_bound}, spec.dim


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_methods(fns: dict, device: torch.device, warmup: int, reps: int) -> dict[str, list[float]]:
    """Seconds per round for each method; methods alternate within every repetition."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    sync(device)
    times = {m: [] for m in fns}
    for _ in range(reps):
        for m, fn in fns.items():
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times[m].append(time.perf_counter() - start)
    return times


def summarize(times: list[float]) -> dict:
    q1, med, q3 = statistics.quantiles(times, n=4, method="inclusive")
    rates = [SAMPLES / t for t in times]
    r1, rmed, r3 = statistics.quantiles(rates, n=4, method="inclusive")
    return {"samples_per_s_median": rmed, "samples_per_s_iqr": r3 - r1,
            "round_s_median": med, "round_s_iqr": q3 - q1, "round_s_min": min(times), "round_s": times}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--graph", choices=("ring", "complete"), default="ring")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    if args.reps < 15:
        ap.error("--reps must be at least 15")

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)  # as the engine runs (experiment.load_setup)
    device = torch.device(args.device)
    load_before = os.getloadavg()
    x, y, source = load_inputs(device)
    graph = nx.cycle_graph(CLIENTS) if args.graph == "ring" else nx.complete_graph(CLIENTS)
    w = metropolis_hastings(graph)

    results = {}
    for name in MODELS:
        fns, dim = round_fns(name, x, y, w, device)
        stats = {m: summarize(t) for m, t in time_methods(fns, device, args.warmup, args.reps).items()}
        default = resolve_strategy("auto", name, device)
        t = {m: s["round_s_median"] for m, s in stats.items()}
        ratio = t["compute_bound"] / t[default]
        results[name] = {
            "parameters": dim, "methods": stats, "default": default,
            "compute_bound_over_default": ratio,
            "default_over_compute_bound": 1 / ratio,
            "loop_over_default": t["loop"] / t[default],
            "vmap_over_loop": t["vmap"] / t["loop"],
            "acceptance": {"within_1.3x_of_compute_bound": t[default] <= 1.3 * t["compute_bound"],
                           "not_slower_than_loop": t[default] <= t["loop"]},
        }

    meta = {
        "measured": "one D-SGD round: 10 clients x 1 local SGD step on 256 samples + MH mixing",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__, "python": platform.python_version(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model(),
        "cpu_model": cpu_model(), "threads": torch.get_num_threads(),
        "inputs": source, "clients": CLIENTS, "batch_per_client": BATCH, "samples_per_round": SAMPLES,
        "graph": args.graph, "mixing": "model", "lr": LR, "warmup": args.warmup, "reps": args.reps,
        "deterministic_algorithms": True,
        "loadavg_1_5_15min": {"before": load_before, "after": os.getloadavg()},  # other processes' load
    }
    write_json(args.out, {"meta": meta, "results": results})
    print_table(meta, results)


def print_table(meta: dict, results: dict) -> None:
    print(f"{meta['device_name']} | torch {meta['torch']} | {meta['threads']} threads | inputs: {meta['inputs']}")
    print(f"{'model':<5} {'method':<14} {'samples/s':>10} {'IQR':>8} {'round ms':>9}")
    for name, r in results.items():
        for m, s in r["methods"].items():
            tag = " (default)" if m == r["default"] else ""
            print(f"{name:<5} {m:<14} {s['samples_per_s_median']:>10.0f} {s['samples_per_s_iqr']:>8.0f} "
                  f"{1e3 * s['round_s_median']:>9.1f}{tag}")
        ok = all(r["acceptance"].values())
        print(f"{name:<5} default={r['default']}: compute_bound/default = {r['compute_bound_over_default']:.2f}, "
              f"loop/default = {r['loop_over_default']:.2f} -> {'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()
