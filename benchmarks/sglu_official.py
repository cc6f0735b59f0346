"""SGLU's noisy SGD, this project's against the official code's, on one device (issue 71, item 3).

The workload is Figure 3a's learning run: `trials` independent chains of noisy SGD (no projection, as every
official run) on the SGLU features (`sglu-features`: two classes, unit-norm rows, labels +-1), at batch b, for
`epochs` epochs at one sigma, with the paper's constants (lam = 1e-6 n, eta = 1/L, M = 1; Chien et al. 2024,
Algorithm 1). Two implementations run it:

  ours      unlearning.train.noisy_sgd.epochs: every chain in one [trials, d] stack (each its own partition)
  official  sgd.stochastic_gradient_descent_algorithm of Graph-COM/SGD_unlearning (commit 7c934b6c or later;
            the spec's reference, read from a clone given by --official, not copied here: it has no licence):
            one chain per call, as its main_sgd.py runs its trials (burn_in = epochs - 1, len_list = 1)

The official loop takes as long per chain whatever the number of chains, so it runs `--official-trials` chains and
its time for `trials` is that per-chain time times `trials` (labelled as extrapolated). Both report the chains'
mean test accuracy: the same algorithm, so the means agree within the chains' spread (printed, not asserted).

    .venv/bin/python benchmarks/sglu_official.py --official ../SGD_unlearning \
        --features data/sglu/fashion_mnist.safetensors --device cpu --out benchmarks/results/sglu_official_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from engine import sync  # benchmarks/engine.py, beside this script

from unlearning.__main__ import keep_freed_memory
from unlearning.files import load_metadata, load_tensors, write_json
from unlearning.privacy.sglu import logistic_constants
from unlearning.provenance import device_info
from unlearning.train import noisy_sgd as sgd


def official_module(path: Path):
    """The official repository's sgd.py as a module (it imports numpy, tqdm, torch and opacus)."""
    source = path / "sgd.py"
    if not source.is_file():
        raise SystemExit(f"--official {path}: no sgd.py there; valid: a clone of Graph-COM/SGD_unlearning")
    spec = importlib.util.spec_from_file_location("sglu_official_sgd", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ours(x, y, xt, yt, k, sigma: float, trials: int, epochs: int, seed: int, device: torch.device) -> dict:
    gen = torch.Generator().manual_seed(seed)
    s = torch.full((trials,), sigma, device=device)
    step = sgd.Step(k.step, k.m, k.M, None)
    order = sgd.partitions(trials, len(x), k.b, gen, device)
    w0 = sgd.initial(trials, x.shape[1], s, k.m, gen)
    noise = sgd.noise_generator(gen, device)
    sync(device)
    start = time.perf_counter()
    w = sgd.epochs(w0, x, y, order, s, epochs, step, noise, k.b)
    sync(device)
    seconds = time.perf_counter() - start
    acc = sgd.accuracy(w, xt, yt).double()
    return {"trials": trials, "seconds": seconds, "accuracy_mean": float(acc.mean()), "accuracy_std": float(acc.std())}


def official(module, x, y, xt, yt, k, sigma: float, trials: int, epochs: int, seed: int,
             device: torch.device) -> dict:
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    accs, seconds = [], []
    for _ in range(trials):
        idx = rng.permutation(len(x))  # its main_sgd.py: one shuffled index list per trial
        sync(device)
        start = time.perf_counter()
        w = module.stochastic_gradient_descent_algorithm(
            None, x.shape[1], x, y, k.m, sigma, device, burn_in=epochs - 1, len_list=1, step=k.step, M=k.M,
            m=k.m, projection=0, batch_size=k.b, batch_idx=idx, num_class=2)
        sync(device)
        seconds.append(time.perf_counter() - start)
        accs.append(float(sgd.accuracy(torch.as_tensor(w[-1], device=device)[None], xt, yt)[0]))
    return {"trials": trials, "seconds": sum(seconds), "seconds_per_trial": statistics.median(seconds),
            "accuracy_mean": statistics.mean(accs), "accuracy_std": statistics.stdev(accs) if trials > 1 else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", type=Path, required=True, help="a clone of Graph-COM/SGD_unlearning")
    ap.add_argument("--features", default="data/sglu/fashion_mnist.safetensors", help="sglu-features' output")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=20, help="Table 2's burn-in at b = 128")
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--official-trials", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for name in ("batch", "epochs", "trials", "official_trials"):
        if getattr(a, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(a, name)}: valid: a whole number >= 1")
    if not a.sigma > 0:
        raise SystemExit(f"--sigma {a.sigma}: valid: a number > 0")
    if not Path(a.features).is_file():
        raise SystemExit(f"--features {a.features}: not found; valid: sglu-features' output, e.g. "
                         "`snakemake data/sglu/fashion_mnist.safetensors`")
    module = official_module(a.official)
    keep_freed_memory()  # as every compute step of the pipeline (both implementations run under it)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    t = {k: v.to(device) for k, v in load_tensors(a.features).items()}
    x, y, xt, yt = t["x_train"], t["y_train"].float(), t["x_test"], t["y_test"].float()
    k = logistic_constants(len(x), a.batch)
    mine = ours(x, y, xt, yt, k, a.sigma, a.trials, a.epochs, 0, device)
    theirs = official(module, x, y, xt, yt, k, a.sigma, a.official_trials, a.epochs, 0, device)
    theirs["seconds_for_trials_extrapolated"] = theirs["seconds_per_trial"] * a.trials
    result = {
        "what": "SGLU's noisy SGD, Figure 3a's learning run: this project's vectorised chains against the official "
                "per-chain loop, same data, constants and device",
        "date": datetime.date.today().isoformat(), "device": str(device),
        "device_name": device_info(device)["name"], "threads": torch.get_num_threads(), "torch": torch.__version__,
        "data": load_metadata(a.features).get("data"), "n": len(x), "d": x.shape[1], "batch": k.b,
        "epochs": a.epochs, "sigma": a.sigma, "ours": mine, "official": theirs,
        "official_over_ours": theirs["seconds_for_trials_extrapolated"] / mine["seconds"],
    }
    write_json(a.out, result)
    print(f"ours: {a.trials} chains in {mine['seconds']:.2f} s (accuracy {mine['accuracy_mean']:.4f}); official: "
          f"{theirs['seconds_per_trial']:.2f} s a chain, {theirs['seconds_for_trials_extrapolated']:.1f} s for "
          f"{a.trials} (accuracy {theirs['accuracy_mean']:.4f} over {a.official_trials}); official / ours = "
          f"{result['official_over_ours']:.1f}")


if __name__ == "__main__":
    main()
