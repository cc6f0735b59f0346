"""Cost of the local optimizers: one D-SGD round with sgd, momentum and adam, vmap vs loop, on the MLP.

One round = 10 clients each take `--steps` local steps (minibatches of `--batch` Fashion-MNIST-shaped
inputs) with the chosen optimizer, then the network mixes the stacked parameters with a ring's
Metropolis-Hastings matrix (model mixing). sgd runs the engine's plain path (local_pseudo_gradients),
momentum and adam its optimizer path (local_updates, per-client state carried from round to round).
Methods are interleaved within each repetition so background load hits them alike; the table says, per
optimizer, which strategy is faster and what each optimizer costs over sgd.

    .venv/bin/python benchmarks/optimizers.py [--out benchmarks/results/optimizers_cpu.json] [--threads 2]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
from pathlib import Path

import networkx as nx
import torch
from engine import cpu_model, load_inputs, summarize, sync, time_methods  # benchmarks/engine.py

from unlearning.files import write_json
from unlearning.models import build_model
from unlearning.topology import metropolis_hastings
from unlearning.train.autodiff import grad
from unlearning.train.dsgd import ClientData, local_pseudo_gradients, local_updates, make_loss, mix
from unlearning.train.flat import FlatSpec
from unlearning.train.optim import OPTIMIZERS, LocalOptimizer

CLIENTS, SHAPE, LR = 10, (1, 28, 28), 0.01


def round_fns(x, y, w, steps: int, batch: int, l2: float, device: torch.device) -> tuple[dict, int]:
    """One closure per (optimizer, strategy) that runs one round and keeps its optimizer state."""
    torch.manual_seed(0)
    model = build_model("mlp", SHAPE, 10, mlp_hidden=128).to(device)
    spec = FlatSpec.of(model)
    theta = spec.flatten(model).repeat(CLIENTS, 1)
    grad_fn = grad(make_loss(model, spec))
    per_client = steps * batch
    shards = [torch.arange(c * per_client, (c + 1) * per_client) for c in range(CLIENTS)]
    data = ClientData(x, y, shards, [torch.ones(per_client, dtype=torch.bool)] * CLIENTS)
    gen = torch.Generator().manual_seed(1)
    idx = torch.stack([s[torch.randperm(per_client, generator=gen)] for s in shards]).view(CLIENTS, steps, batch)
    weight = torch.ones(CLIENTS, steps, batch)
    w = w.to(theta)

    def make(kind: str, strategy: str):
        opt = LocalOptimizer(kind, l2=l2)
        state = [opt.init(theta)]

        def run():
            if opt.plain:
                pseudo = local_pseudo_gradients(theta, data, idx, weight, LR, grad_fn, strategy)
            else:
                pseudo, state[0] = local_updates(theta, state[0], data, idx, weight, LR, grad_fn, strategy, opt)
            return mix(theta, pseudo, w, LR, "model")
        return run

    return {f"{k}/{s}": make(k, s) for k in OPTIMIZERS for s in ("vmap", "loop")}, spec.dim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    if args.reps < 5:
        ap.error("--reps must be at least 5")

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)  # as the engine runs (experiment.load_setup)
    device = torch.device(args.device)
    load_before = os.getloadavg()
    x, y, source = load_inputs(device)
    need = CLIENTS * args.steps * args.batch
    if len(x) < need:
        ap.error(f"--steps x --batch x {CLIENTS} clients = {need} samples; the inputs hold {len(x)}")
    fns, dim = round_fns(x, y, metropolis_hastings(nx.cycle_graph(CLIENTS)), args.steps, args.batch, args.l2, device)
    stats = {m: summarize(t) for m, t in time_methods(fns, device, args.warmup, args.reps).items()}
    med = {m: s["round_s_median"] for m, s in stats.items()}
    verdict = {}
    for kind in OPTIMIZERS:
        v, lp = med[f"{kind}/vmap"], med[f"{kind}/loop"]
        verdict[kind] = {"faster": "vmap" if v < lp else "loop", "vmap_over_loop": v / lp,
                         "over_sgd_vmap": v / med["sgd/vmap"], "over_sgd_loop": lp / med["sgd/loop"]}
    meta = {
        "measured": f"one D-SGD round on the MLP: {CLIENTS} clients x {args.steps} local steps of {args.batch} "
                    "samples with each local optimizer + ring MH model mixing",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__, "python": platform.python_version(), "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model(),
        "threads": torch.get_num_threads(), "inputs": source, "parameters": dim, "l2": args.l2, "lr": LR,
        "warmup": args.warmup, "reps": args.reps,
        "loadavg_1_5_15min": {"before": load_before, "after": os.getloadavg()},  # other processes' load
    }
    sync(device)
    if args.out:
        write_json(args.out, {"meta": meta, "methods": stats, "verdict": verdict})
    print(f"{meta['device_name']} | torch {meta['torch']} | {meta['threads']} threads | inputs: {source} | "
          f"MLP {dim} parameters | {meta['measured']}")
    print(f"{'optimizer':<9} {'vmap ms':>9} {'loop ms':>9} {'faster':>7} {'vmap/loop':>10} {'x sgd (vmap)':>13}")
    for kind, v in verdict.items():
        print(f"{kind:<9} {1e3 * med[kind + '/vmap']:>9.1f} {1e3 * med[kind + '/loop']:>9.1f} {v['faster']:>7} "
              f"{v['vmap_over_loop']:>10.2f} {v['over_sgd_vmap']:>13.2f}")


if __name__ == "__main__":
    main()
