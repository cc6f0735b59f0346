"""The SGLU experiment's steps (specs/sglu.md): binary features, the accounting tables, Figures 3a and 3c.

- `step_features`: one class pair of a dataset as unit-norm features (spec 4.1).
- `step_accounting`: Table 3, the Figure 3a baselines' sigmas, Figure 3b's and 3d's K per request under all
  three accounting variants, D2D and LU. Pure arithmetic on (n, d, constants): MNIST and CIFAR-10 run from
  the paper's n without their data; a dataset on disk uses its own n (and its data for D2D/LU's L).
- `step_fig3a`: one removal at a budget epsilon: SGLU (K = 1 epoch at Table 3's sigma) and its retraining,
  LU (K = 1 step), D2D (I steps, output noise); all trials and epsilons of a batch size in one run.
- `step_fig3c`: 100 sequential removals at epsilon = 0.01 for each sigma and b, K_s from the accounting,
  and retraining on D_100; all trials, sigmas and projection settings of a batch size in one run.

Trials are rows of one weight matrix (train/noisy_sgd.py). Rows are laid out trial-major, so that the
`partitions` groups (one per trial by default) split them into equal consecutive blocks.
"""

from __future__ import annotations

import functools
import logging
import math
import time

import torch

from ...config import ParamsError, section_config
from ...data.binary import binary_features
from ...experiment import pick_device
from ...files import load_metadata, load_tensors, read_json, save_tensors, write_json
from ...privacy import sglu as acc
from ...privacy import sglu_baselines as base
from ...resolved import config_record
from ...seeding import generator
from ...train import noisy_sgd as sgd

log = logging.getLogger("unlearning")

PAPER_N = {"mnist": (11264, 784), "cifar10": (9728, 512)}  # spec 4.1: truncated n and d, for data-free accounting


def config(params: dict) -> dict:
    return section_config(params, "sglu")


def batch_size(b: int | str, n: int) -> int:
    return n if b == "full" else int(b)


# ------------------------------------------------------------------------------------------------ features


def step_features(params: dict, dataset: str, processed: str, out: str) -> None:
    cfg = config(params)
    device = pick_device(params["device"])
    tensors, meta = binary_features(load_tensors(processed), dataset, tuple(cfg["pairs"][dataset]),
                                    cfg["extractors"][dataset], cfg["truncate_to"], device=device)
    meta["data"] = load_metadata(processed).get("dataset", dataset)  # "mnist_5k" where the subset serves MNIST
    save_tensors(out, tensors, meta)
    log.info("%s: n = %d (of %d), d = %d, test %d (%s features%s)", dataset, meta["n"], meta["n_full"], meta["d"],
             meta["n_test"], cfg["extractors"][dataset], f" on {device}" if meta["extractor"] == "resnet18" else "")


# ------------------------------------------------------------------------------------------------ accounting


def baseline_constants(cfg: dict, dataset: str, n: int, d: int,
                       x: torch.Tensor | None) -> tuple[base.BaselineConstants, str]:
    """D2D/LU constants (spec 4.6). With data: m = lambda, L = lambda_max(X'X/n)/4 + lambda ("data", as the
    published runs) or 1/4 + lambda ("shared"). Without data (MNIST, CIFAR offline): spec 4.6's tables."""
    kind = cfg["baselines"]["constants"]
    if x is None:
        k = base.published_baseline_constants(dataset) if kind == "data" else base.sglu_baseline_constants(dataset)
        return k, f"{kind}: spec 4.6 ({'published runs' if kind == 'data' else 'SGLU constants'})"
    lam = cfg["lam_per_n"] * n
    if kind == "data":
        top = float(torch.linalg.eigvalsh((x.double().T @ x.double()) / n)[-1])
        L = top / 4 + lam
    else:
        L = 0.25 + lam
    return base.BaselineConstants(n=n, L=L, m=lam, d=d, delta=1 / n, M=cfg["clip"]), f"{kind}: from the data"


def _constants(cfg: dict, n: int, b: int | str) -> acc.Constants:
    return acc.logistic_constants(n, batch_size(b, n), cfg["lam_per_n"], cfg["clip"], cfg["radius"])


WIDE_BRACKET = (acc.SIGMA_BRACKET[0], 1e6)  # where Algorithm 4's bracket holds no sigma: how far off it is


def accounting(cfg: dict, dataset: str, n: int, d: int, x: torch.Tensor | None, strict: bool = True) -> dict:
    """Every data-free number of the section: Table 3, Figure 3a's baseline sigmas, Figures 3b and 3d.

    strict: a Table 3 or Figure 3a cell that no sigma in Algorithm 4's bracket certifies is a params error. Else (the
    runs' accounting on a subset of the paper's data) the cell gets sigma None, the least sigma beyond the bracket and
    its reason, and Figure 3a does not run it."""
    delta = 1 / n
    out: dict = {"dataset": dataset, "n": n, "d": d, "delta": delta, "variant": cfg["accounting"]}
    top = acc.SIGMA_BRACKET[1]

    @functools.cache
    def sigma_row(b: int | str, eps: float, T: int) -> dict:
        k = _constants(cfg, n, b)
        sigma = acc.sigma_for_budget(k, eps, delta, 1, T)
        if strict or sigma < top - 1e-6:
            return {"b": b, "epsilon": eps, "T": T, "sigma": sigma}
        least = acc.sigma_for_budget(k, eps, delta, 1, T, bracket=WIDE_BRACKET)
        bound = ">= " if least >= WIDE_BRACKET[1] - 1 else ""  # beyond the wide bracket too
        return {"b": b, "epsilon": eps, "T": T, "sigma": None, "least_sigma": least,
                "untestable": f"no sigma <= {top:g} certifies one epoch (least sigma {bound}{least:.4g}; n = {n}, "
                              f"lambda = {k.m:.3g}, {n // k.b} step(s) an epoch at b = {b}, T = {T})"}

    out["table3"] = [sigma_row(b, eps, acc.burn_in(_constants(cfg, n, b)))  # the paper's Table 2 burn-in
                     for b in cfg["table3"]["batch_sizes"] for eps in cfg["table3"]["epsilons"]]
    out["fig3a_sglu"] = [sigma_row(b, eps, cfg["burn_in"][str(b)])  # the runs' own burn-in: what certifies them
                         for b in cfg["fig3a"]["batch_sizes"] for eps in cfg["fig3a"]["epsilons"]]
    bk, source = baseline_constants(cfg, dataset, n, d, x)
    out["baselines"] = {"n": bk.n, "L": bk.L, "m": bk.m, "d": bk.d, "delta": bk.delta, "source": source}
    out["fig3a"] = {
        "lu": [{"epsilon": e, "sigma": base.lu_sigma_for_budget(bk, e)} for e in cfg["table3"]["epsilons"]],
        "d2d": [{"steps": i, "epsilon": e, "sigma": base.d2d_sigma_internal(bk, e, i)}
                for i in cfg["fig3a"]["d2d_steps"] for e in cfg["table3"]["epsilons"]],
    }
    f3b = cfg["fig3b"]
    out["fig3b"] = {
        "requests": f3b["requests"],
        "sglu": {v: {str(b): acc.sequential_k(_constants(cfg, n, b), f3b["sigma"], f3b["epsilon"], delta,
                                              f3b["requests"], v)
                     for b in f3b["batch_sizes"]} for v in acc.VARIANTS},
        "d2d": base.d2d_sequential_steps(bk, f3b["epsilon"], f3b["requests"]),
        "lu": {str(S): base.lu_sequential_k(bk, f3b["sigma"], f3b["epsilon"], math.ceil(f3b["requests"] / S), S)
               for S in f3b["lu_group_sizes"]},
    }
    f3d = cfg["fig3d"]
    out["fig3d"] = {v: {str(b): {str(s): acc.sequential_k(_constants(cfg, n, b), s, f3d["epsilon"], delta,
                                                         f3d["requests"], v)
                                 for s in f3d["sigmas"]} for b in f3d["batch_sizes"]} for v in acc.VARIANTS}
    for row in out["table3"] + out["fig3a_sglu"]:
        if row["sigma"] is not None and row["sigma"] >= top - 1e-6:
            raise ParamsError(f"sglu: no sigma <= {acc.SIGMA_BRACKET[1]:g} certifies epsilon {row['epsilon']} with one "
                              f"epoch at b = {row['b']}, T = {row['T']}, n = {n} (Algorithm 4's bracket); valid: a "
                              "larger sglu.lam_per_n, burn_in or n")
    return out


def step_accounting(params: dict, dataset: str, features: str | None, out: str) -> None:
    """The accounting at the paper's n (no features: MNIST, CIFAR-10) or at the features' n. Features of a subset
    serving the column (their `data` is not the column's: the MNIST subset) give the runs' accounting: a cell that
    no sigma certifies is recorded as such (`accounting(strict=False)`), as it says what the subset can test."""
    cfg = config(params)
    data = dataset
    if features:
        meta, tensors = load_metadata(features), load_tensors(features)
        n, d, x, data = meta["n"], meta["d"], tensors["x_train"], meta.get("data", dataset)
    elif dataset in PAPER_N:
        (n, d), x = PAPER_N[dataset], None
    else:
        raise FileNotFoundError(f"sglu accounting for {dataset}: give --features (its n is not in the paper)")
    started = time.perf_counter()
    result = accounting(cfg, dataset, n, d, x, strict=data == dataset)
    result["data"] = data
    result["n_source"] = "features" if features else "paper (spec 4.1)"
    write_json(out, {**result, "config": config_record(params)})
    log.info("%s accounting in %.1f s (on the CPU: scipy root finding and float64 arithmetic)", dataset,
             time.perf_counter() - started)


# ------------------------------------------------------------------------------------------------ data runs


def _load(features: str, device: torch.device) -> tuple[dict[str, torch.Tensor], dict]:
    return {k: v.to(device) for k, v in load_tensors(features).items()}, load_metadata(features)


def _summary(acc_rows: torch.Tensor) -> dict:
    return {"mean": float(acc_rows.mean()), "std": float(acc_rows.std(unbiased=False)), "trials": len(acc_rows)}


def _groups(cfg: dict, trials: int | None = None) -> int:
    trials = trials or cfg["trials"]
    return trials if cfg["partitions"] is None else min(cfg["partitions"], trials)


def step_fig3a(params: dict, dataset: str, features: str, accounting_file: str, out: str, timing: str) -> None:
    """Figure 3a: unlearn index n-1 once, at each epsilon's sigma (Table 3 / LU / D2D), and retrain SGLU. An SGLU
    cell that no sigma certifies (the accounting's `untestable`, on a subset) is not run: it is listed instead."""
    cfg, f3a = config(params), config(params)["fig3a"]
    device = pick_device(params["device"])
    data, meta = _load(features, device)
    x, y, xt, yt = data["x_train"], data["y_train"], data["x_test"], data["y_test"]
    n, d, trials = meta["n"], meta["d"], cfg["trials"]
    account = read_json(accounting_file)
    eps = f3a["epsilons"]
    rx, ry = sgd.replacements(1, d, generator(params["seed"], "sglu", dataset, "replacement"))
    x1, y1 = sgd.replaced(x, y, [n - 1], rx, ry)
    rows: list[dict] = []
    untestable: list[dict] = []
    seconds: dict[str, float] = {}  # wall times go to the timing file, so that results stay byte-identical

    def record(method: str, b, key: str, accs: torch.Tensor, sigmas: list[float], eps: list[float] = eps,
               **extra) -> None:
        per_eps = accs.view(trials, len(eps))
        for j, e in enumerate(eps):
            rows.append({"method": method, "b": b, "epsilon": e, "sigma": sigmas[j], "model": key,
                         **_summary(per_eps[:, j]), **extra})

    for b in f3a["batch_sizes"]:
        table = {r["epsilon"]: r for r in account["fig3a_sglu"] if r["b"] == b}
        untestable += [{"method": "sglu", "b": b, "epsilon": e, "least_sigma": table[e]["least_sigma"],
                        "reason": table[e]["untestable"]} for e in eps if table[e]["sigma"] is None]
        run_eps = [e for e in eps if table[e]["sigma"] is not None]
        if not run_eps:
            continue
        sigmas = [table[e]["sigma"] for e in run_eps]
        k = _constants(cfg, n, b)
        T = cfg["burn_in"][str(b)]
        step = sgd.Step(k.step, k.m, cfg["clip"], cfg["radius"] if f3a["projection"] else None)
        gen = generator(params["seed"], "sglu", dataset, "fig3a", str(b))
        noise = sgd.noise_generator(gen, device)
        sigma = torch.tensor(sigmas).repeat(trials).to(device)
        order = sgd.partitions(_groups(cfg), n, k.b, gen, device)
        started = time.perf_counter()
        w = sgd.epochs(sgd.initial(len(sigma), d, sigma, k.m, gen), x, y, order, sigma, T, step, noise, k.b)
        learned = time.perf_counter()
        unlearned = sgd.epochs(w, x1, y1, order, sigma, 1, step, noise, k.b)
        unlearn_s = time.perf_counter() - learned
        retrained = sgd.epochs(sgd.initial(len(sigma), d, sigma, k.m, gen), x1, y1, order, sigma, T, step, noise, k.b)
        record("sglu", b, "unlearned", sgd.accuracy(unlearned, xt, yt), sigmas, run_eps, K=1, T=T)
        record("sglu", b, "retrained", sgd.accuracy(retrained, xt, yt), sigmas, run_eps, T=T)
        seconds[f"sglu b={b} learn"] = learned - started
        seconds[f"sglu b={b} unlearn"] = unlearn_s
        seconds[f"sglu b={b} retrain"] = time.perf_counter() - learned - unlearn_s
        log.info("fig3a SGLU b=%s: %d rows on %s, learn %.1f s, unlearn %.2f s", b, len(sigma), device,
                 learned - started, unlearn_s)

    bk = base.BaselineConstants(**{k: account["baselines"][k] for k in ("n", "L", "m", "d", "delta")}, M=cfg["clip"])
    lu_sigmas = [{r["epsilon"]: r["sigma"] for r in account["fig3a"]["lu"]}[e] for e in eps]
    sigma = torch.tensor(lu_sigmas).repeat(trials).to(device)
    gen = generator(params["seed"], "sglu", dataset, "fig3a", "lu")
    noise = sgd.noise_generator(gen, device)
    step = sgd.Step(bk.step, bk.m, cfg["clip"], None)  # neither baseline projects (spec 4.4)
    started = time.perf_counter()
    w = sgd.epochs(sgd.initial(len(sigma), d, sigma, bk.m, gen), x, y, None, sigma,
                   cfg["baselines"]["lu_burn_in"], step, noise)
    learned = time.perf_counter()
    unlearned = sgd.epochs(w, x1, y1, None, sigma, 1, step, noise)
    seconds["lu learn"], seconds["lu unlearn"] = learned - started, time.perf_counter() - learned
    record("lu", "full", "unlearned", sgd.accuracy(unlearned, xt, yt), lu_sigmas, K=1, T=cfg["baselines"]["lu_burn_in"])

    gen = generator(params["seed"], "sglu", dataset, "fig3a", "d2d")
    step = sgd.Step(bk.eta_d2d, bk.m, cfg["clip"], None)
    started = time.perf_counter()
    clean = sgd.gradient_descent(torch.randn(1, d, generator=gen).to(device), x, y, cfg["baselines"]["d2d_burn_in"],
                                 step)
    learned = time.perf_counter()
    for steps in f3a["d2d_steps"]:
        table = {(r["steps"], r["epsilon"]): r["sigma"] for r in account["fig3a"]["d2d"]}
        d2d_sigmas = [table[(steps, e)] for e in eps]
        w = sgd.gradient_descent(clean, x1, y1, steps, step)
        sigma = torch.tensor(d2d_sigmas).repeat(trials).to(device)
        published = w + sigma[:, None] * torch.randn(len(sigma), d, generator=gen).to(device)
        record("d2d", "full", f"I={steps}", sgd.accuracy(published, xt, yt), d2d_sigmas, K=steps,
               T=cfg["baselines"]["d2d_burn_in"])
    seconds["d2d learn"] = learned - started
    chance = float(max((yt > 0).float().mean(), (yt < 0).float().mean()))  # the majority class's share of the test set
    write_json(out, {"dataset": dataset, "data": meta.get("data", dataset), "n": n, "trials": trials, "chance": chance,
                     "partitions": _groups(cfg), "projection": f3a["projection"], "rows": rows,
                     "untestable": untestable, "config": config_record(params)})
    write_json(timing, {"rows": trials * len(eps), "seconds": seconds, "threads": torch.get_num_threads(),
                        "device": str(device)})


def _sequential(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, order, sigma: torch.Tensor, ks: torch.Tensor,
                step: sgd.Step, gen: torch.Generator, b: int) -> torch.Tensor:
    """K epochs for each row, ks [runs] (rows with fewer epochs stop early): a row subset for full batch
    (compute-bound), an activity mask for mini-batches (one shared gather per iteration)."""
    for epoch in range(int(ks.max())):
        active = ks > epoch
        if order is None:
            idx = active.nonzero().flatten()
            radius = step.R[idx] if isinstance(step.R, torch.Tensor) else step.R
            sub = sgd.Step(step.eta, step.lam, step.M, radius)
            w = w.clone()
            w[idx] = sgd.epochs(w[idx], x, y, None, sigma[idx], 1, sub, gen)
        else:
            w = sgd.epochs(w, x, y, order, sigma, 1, step, gen, b, active=active)
    return w


def step_fig3c(params: dict, dataset: str, features: str, accounting_file: str, out: str, timing: str) -> None:
    """Figure 3c: `fig3d.requests` sequential removals (index n-s at request s) at epsilon = fig3d.epsilon, with
    K_s of the chosen accounting variant; then retraining from scratch on the last dataset. A sigma whose every K_s
    is at least the learning's T is not run (listed instead): each removal would cost a retraining, so the
    comparison with retraining cannot fail (the MNIST subset's n = 512)."""
    cfg, f3c = config(params), config(params)["fig3c"]
    device = pick_device(params["device"])
    data, meta = _load(features, device)
    x, y, xt, yt = data["x_train"], data["y_train"], data["x_test"], data["y_test"]
    n, d, trials = meta["n"], meta["d"], f3c["trials"] or cfg["trials"]
    account = read_json(accounting_file)
    variant, requests = cfg["accounting"], cfg["fig3d"]["requests"]
    rx, ry = sgd.replacements(requests, d, generator(params["seed"], "sglu", dataset, "replacement"))
    rows, untestable, seconds, matrix = [], [], {}, 0
    for b in f3c["batch_sizes"]:
        k = _constants(cfg, n, b)
        T = cfg["burn_in"][str(b)]
        K = {s: account["fig3d"][variant][str(b)][str(s)] for s in f3c["sigmas"]}
        untestable += [{"b": b, "sigma": s, "epochs": sum(K[s]), "T": T,
                        "reason": f"every request needs K_s >= T ({min(K[s])}-{max(K[s])} epochs against T = {T}; "
                                  f"n = {n}, b = {b}): unlearning costs a retraining, so it cannot differ from one"}
                       for s in f3c["sigmas"] if min(K[s]) >= T]
        cells = [(s, p) for s in f3c["sigmas"] if min(K[s]) < T for p in f3c["projection"]]
        if not cells:
            continue
        sigma = torch.tensor([s for s, _ in cells]).repeat(trials).to(device)
        radius = torch.tensor([cfg["radius"] if p else math.inf for _, p in cells]).repeat(trials).to(device)
        matrix = max(matrix, len(sigma))
        step = sgd.Step(k.step, k.m, cfg["clip"], radius)
        gen = generator(params["seed"], "sglu", dataset, "fig3c", str(b))
        noise = sgd.noise_generator(gen, device)
        order = sgd.partitions(_groups(cfg, trials), n, k.b, gen, device)
        started = time.perf_counter()
        w = sgd.epochs(sgd.initial(len(sigma), d, sigma, k.m, gen), x, y, order, sigma, T, step, noise, k.b)
        xs, ys = x, y
        for s in range(1, requests + 1):
            xs, ys = sgd.replaced(xs, ys, [n - s], rx[s - 1:s], ry[s - 1:s])
            ks = torch.tensor([K[c[0]][s - 1] for c in cells]).repeat(trials).to(device)
            w = _sequential(w, xs, ys, order, sigma, ks, step, noise, k.b)
        unlearn_s = time.perf_counter() - started
        retrained = sgd.epochs(sgd.initial(len(sigma), d, sigma, k.m, gen), xs, ys, order, sigma, T, step, noise,
                               k.b)
        un = sgd.accuracy(w, xt, yt).view(trials, len(cells))
        re = sgd.accuracy(retrained, xt, yt).view(trials, len(cells))
        for j, (s, p) in enumerate(cells):
            rows.append({"b": b, "sigma": s, "projection": p, "epochs": sum(K[s]), "T": T,
                         "unlearned": _summary(un[:, j]), "retrained": _summary(re[:, j])})
        seconds[f"b={b}"] = time.perf_counter() - started
        log.info("fig3c b=%s: %d rows on %s, learn + %d requests in %.1f s", b, len(sigma), device, requests,
                 unlearn_s)
    write_json(out, {"dataset": dataset, "data": meta.get("data", dataset), "n": n, "trials": trials,
                     "partitions": _groups(cfg, trials), "variant": variant, "requests": requests, "rows": rows,
                     "untestable": untestable, "config": config_record(params)})
    write_json(timing, {"rows": matrix, "seconds": seconds, "threads": torch.get_num_threads(),
                        "device": str(device)})
