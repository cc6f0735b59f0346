"""The rewind sensitivity bound (Mu & Klabjan 2025, Lemmas B.2-B.3, Theorem 3.1), measured.

On logistic regression with ||x|| <= 1 (exact per-sample G = max ||x||, L = max ||x||^2 / 4) and an adversarial
forget set Z (unit-norm points on the first axis labelled 0 where the retained data say 1), full-batch GD:

- theorem: a constant step eta = f * min{1/L, n/(2(n-m)L)} (f = 1 and 0.1); the bound must hold;
- practice: the step decays per epoch, lr0 * gamma^e, and h(K) uses the final step (as the paper's experiments
  do); the theory does not cover it, so the ratio may exceed 1. This is reported, not gated on.

Prints, per setting, ||theta'_T - theta''_K|| / (2 m G h(K) / (L n)) for each K tried.

    PYTHONPATH=src .venv/bin/python benchmarks/r2d_sensitivity.py [--out benchmarks/results/r2d_sensitivity.json]
"""

from __future__ import annotations

import argparse
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

from unlearning.files import write_json
from unlearning.history import CheckpointStore
from unlearning.methods import r2d
from unlearning.privacy import r2d_noise as rn
from unlearning.train import checkpointed_sgd as cs
from unlearning.train.flat import FlatSpec


def problem(n: int = 200, d: int = 5, m: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    X = X / X.norm(dim=1, keepdim=True) * torch.rand(n, 1, generator=g, dtype=torch.float64) ** 0.5
    X[:m] = 0
    X[:m, 0] = 1.0
    y = (X[:, 0] > -0.2).double()
    y[:m] = 0.0
    return X, y, m


def bce(out, target):
    return F.binary_cross_entropy_with_logits(out.squeeze(1), target)


def ratios(X, y, m, T, lr0, gamma, eta_in_h):
    n = len(X)
    norms = X.norm(dim=1)
    G, L = float(norms.max()), float(norms.max() ** 2 / 4)
    keep = torch.arange(m, n)
    sched = cs.Schedule(lr0=lr0, gamma=gamma, batch_size=n)

    def linear():
        torch.manual_seed(0)
        return nn.Linear(X.shape[1], 1, bias=False).double()

    with tempfile.TemporaryDirectory() as tmp:
        store = CheckpointStore(tmp)
        learned = linear()
        spec = FlatSpec.of(learned)
        cs.save_epoch(store, 0, learned, spec)
        cs.run_epochs(learned, X, y, sched, 0, T, loss_fn=bce, store=store)
        retrained = linear()
        cs.run_epochs(retrained, X[keep], y[keep], sched, 0, T, loss_fn=bce)
        target = spec.flatten(retrained)
        out = {}
        for K in sorted({0, 1, T // 8, T // 4, T // 2, 3 * T // 4, 7 * T // 8, T - 1}):
            model = r2d.rewind(linear(), store, X[keep], y[keep], sched, E_sel=T, K_ep=K, loss_fn=bce)
            gap = float((spec.flatten(model) - target).norm())
            out[K] = gap / rn.sensitivity(K, T, eta_in_h, L, G, m, n)
    return {"G": G, "L": L, "eta_in_h": eta_in_h, "lr0": lr0, "gamma": gamma, "T": T, "ratios": out,
            "worst": max(out.values())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    X, y, m = problem()
    n = len(X)
    L = float(X.norm(dim=1).max() ** 2 / 4)
    eta_max = min(1 / L, n / (2 * (n - m) * L))
    results = {}
    for T, f in ((5, 1.0), (20, 0.1), (20, 0.01)):
        results[f"theorem T={T} eta={f}*max"] = ratios(X, y, m, T, f * eta_max, 1.0, f * eta_max)
    for T, gamma in ((20, 0.9), (52, 0.9)):
        lr0 = eta_max
        results[f"practice T={T} lr0=eta_max gamma={gamma}, final eta in h"] = ratios(
            X, y, m, T, lr0, gamma, lr0 * gamma ** (T - 1))
    for name, r in results.items():
        print(f"{name}: worst {r['worst']:.4f}; " + ", ".join(f"K={k}: {v:.4f}" for k, v in r["ratios"].items()))
    if args.out:
        write_json(args.out, {k: {**v, "ratios": {str(a): b for a, b in v["ratios"].items()}}
                              for k, v in results.items()})


if __name__ == "__main__":
    main()
