"""Common ground, centralized setting on the convex model (issue 16): each certified method removes one canary at
one budget, beside retraining by the same mechanism, and an auditor turns how well the canary tells the two apart
into an epsilon lower bound.

The task is SGLU's (specs/sglu.md 4.1-4.3): L2-regularised logistic regression on unit-norm binary features of
`common.centralized.dataset` (the `sglu` section's pair, extractor and constants), optionally cut to the first
`train_size` points. The canary is the last training point with its label flipped (a mislabelled sample, the
auditing literature's strongest simple canary); removing it means replacing it by SGLU's random replacement point
(the replace-one adjacency every method here certifies). Per method, `trials` independent runs on each side:

- SGLU (Algorithm 1): projected noisy full-batch GD for `burn_in` epochs on D, then K = 1 epoch on D'; beside it
  the same chain for `burn_in` epochs on D'. sigma: Algorithm 4 at the budget (privacy/sglu.py).
- LU (Chien et al. 2024a): noisy full-batch GD without projection, `lu_burn_in` steps on D, then 1 step on D';
  retraining: `lu_burn_in` steps on D'. sigma: lu_sigma_for_budget (privacy/sglu_baselines.py).
- D2D (Neel et al. 2021): noiseless GD, `d2d_burn_in` steps on D then `d2d_steps` on D', published with Gaussian
  output noise; retraining: the same GD on D' plus the same noise. sigma: Theorem L.1 (d2d_sigma_internal).
- R2D (Mu & Klabjan 2025): noiseless GD for T = `r2d_burn_in` steps at R2D's own step size eta = `r2d_eta_L_T` /
  (L T) (its eICU run has eta L T = 3.6), keeping the model of step T - K; unlearning rewinds there and re-runs K
  steps on D', then adds Gaussian noise; retraining: T steps on D' plus the same noise; one row per rewind fraction
  K / T of `r2d_rewinds`. sigma: Theorem 3.1 with m = 1 (privacy/r2d_noise.py, analytic mechanism). Its bound is
  for deleting m of n points; the replacement here changes each step's mean gradient by at most the 2 G m / n it
  bounds, so it applies as is.
- HF and CNS (R2D's certified baselines; baselines.py): deterministic learners certifying deletion, so removal there
  deletes the canary; the output noise is per run.

The audit (privacy/audit.py): score = the canary's logistic loss under a run's model (low = the canary was
learned, like the unlearned side); the threshold is chosen on the first half of the runs and the false positive
and negative counts come from the second half, so the bound's confidence is honest.

Trials are rows of one weight matrix (train/noisy_sgd.py); every stream is seeded from (seed, "common", ...).
"""

from __future__ import annotations

import logging
import math
import time

import torch

from ...config import section_config
from ...experiment import pick_device
from ...files import load_metadata, load_tensors, write_json
from ...privacy import audit, r2d_noise
from ...privacy import sglu as acc
from ...privacy import sglu_baselines as base
from ...resolved import config_record
from ...seeding import generator
from ...train import noisy_sgd as sgd
from . import config

log = logging.getLogger("unlearning")

METHODS = ("sglu", "lu", "d2d", "r2d", "hf", "cns")


def canary_data(features: str, train_size: int | None, device, seed: int,
                key: str = "common.centralized.train_size") -> dict:
    """SGLU's features, or a seeded random `train_size` of them (the file is sorted by class), with D (the canary:
    the last point, label flipped) and D' (the canary replaced by SGLU's random replacement point)."""
    data, meta = {k: v.to(device) for k, v in load_tensors(features).items()}, load_metadata(features)
    n = meta["n"] if train_size is None else train_size
    if n > meta["n"]:
        raise ValueError(f"{key} = {n}: {features} holds {meta['n']} training points; "
                         f"valid: at most {meta['n']}")
    keep = (torch.arange(n) if train_size is None else
            torch.randperm(meta["n"], generator=generator(seed, "common", "centralized", "subset"))[:n])
    x, y = data["x_train"][keep.to(device)].clone(), data["y_train"][keep.to(device)].clone()
    y[n - 1] = -y[n - 1]  # the canary: a mislabelled copy of the last point
    rx, ry = sgd.replacements(1, x.shape[1], generator(seed, "common", "centralized", "replacement"))
    x1, y1 = sgd.replaced(x, y, [n - 1], rx, ry)
    return {"x": x, "y": y, "x1": x1, "y1": y1, "xt": data["x_test"], "yt": data["y_test"], "n": n,
            "d": x.shape[1], "canary": (x[n - 1], y[n - 1])}


def canary_loss(w: torch.Tensor, canary: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Each row's logistic loss on the canary (x_c, y_c): log(1 + exp(-y_c w.x_c))."""
    x_c, y_c = canary
    return torch.nn.functional.softplus(-y_c * (w @ x_c))


def canary_accuracy(w: torch.Tensor, canary: tuple[torch.Tensor, torch.Tensor]) -> float:
    """The share of runs whose model predicts the canary's (flipped) label: how often it was memorised."""
    x_c, y_c = canary
    return float((y_c * (w @ x_c) > 0).float().mean())


def held_out_audit(unlearned: torch.Tensor, retrained: torch.Tensor, delta: float, confidence: float) -> dict:
    """The audit's bound: the threshold on the canary's loss that maximises the bound on the first half of the
    runs, then the bound from its false positives and negatives on the second half (audit.epsilon_lower_bound)."""
    p, q = (-unlearned).cpu().double(), (-retrained).cpu().double()  # higher = more like the unlearned side
    half = len(p) // 2
    cut, _ = audit.best_threshold(p[:half].tolist(), q[:half].tolist(), delta, confidence)
    fp, fn = int((q[half:] >= cut).sum()), int((p[half:] < cut).sum())
    bound = audit.epsilon_lower_bound(fp, fn, len(p) - half, delta, confidence)
    finite = lambda v: v if math.isfinite(v) else None  # noqa: E731  (an interval without an upper end)
    return {"epsilon_lower": finite(bound.epsilon_lower), "epsilon_point": finite(bound.epsilon_point),
            "epsilon_upper": finite(bound.epsilon_upper), "false_positives": fp, "false_negatives": fn,
            "runs_per_side": len(p) - half, "threshold_runs_per_side": half, "confidence": confidence}


def _summary(rows: torch.Tensor) -> dict:
    return {"mean": float(rows.mean()), "std": float(rows.std(unbiased=False))}


def d2d_epsilon(k: base.BaselineConstants, sigma: float, steps: int) -> float:
    """The epsilon D2D's Theorem L.1 certifies at noise `sigma` (d2d_sigma_internal solved for epsilon)."""
    g, log_inv = k.gamma**steps, math.log(1 / k.delta)
    gap = 4 * math.sqrt(2) * k.M * g / (k.m * k.n * (1 - g) * sigma)
    return (gap + math.sqrt(log_inv)) ** 2 - log_inv


def step_centralized(params: dict, features: str, out: str, timing: str) -> None:
    """Every method of common.centralized.methods on the canary, `trials` runs a side, and its audit; each also at
    `control_noise` times its certified sigma (a control: the audit must see the canary there), with the epsilon
    its own certificate claims for that sigma."""
    cfg, sglu = config(params), section_config(params, "sglu")
    c, budget = cfg["centralized"], cfg["budget"]
    eps, delta, trials = budget["epsilon"], budget["delta"], c["trials"]
    device = pick_device(params["device"])
    data = canary_data(features, c["train_size"], device, params["seed"])
    x, y, x1, y1, n, d = data["x"], data["y"], data["x1"], data["y1"], data["n"], data["d"]
    k = acc.logistic_constants(n, n, sglu["lam_per_n"], sglu["clip"], sglu["radius"])
    lam = sglu["lam_per_n"] * n
    bk = base.BaselineConstants(n=n, L=0.25 + lam, m=lam, d=d, delta=delta, M=sglu["clip"])
    result = {"setting": "centralized", "dataset": c["dataset"], "n": n, "d": d, "trials": trials,
              "epsilon": eps, "delta": delta, "control_noise": c["control_noise"], "methods": {},
              "config": config_record(params)}
    seconds: dict[str, float] = {}
    scales = [1.0] if c["control_noise"] is None else [1.0, c["control_noise"]]

    def record(key: str, method: str, sigma: float, claimed: float, unlearned: torch.Tensor,
               retrained: torch.Tensor, grads: dict, **extra) -> None:
        result["methods"][key] = {
            "method": method, "sigma": sigma, "claimed_epsilon": claimed, "gradient_evaluations": grads, **extra,
            "test_accuracy": {side: _summary(sgd.accuracy(w, data["xt"], data["yt"]))
                              for side, w in (("unlearned", unlearned), ("retrained", retrained))},
            "canary_accuracy": {side: canary_accuracy(w, data["canary"])
                                for side, w in (("unlearned", unlearned), ("retrained", retrained))},
            "audit": held_out_audit(canary_loss(unlearned, data["canary"]), canary_loss(retrained, data["canary"]),
                                    delta, c["audit_confidence"])}
        a = result["methods"][key]["audit"]
        log.info("%s: sigma %.4g; audit epsilon >= %s (point %s; FP %d, FN %d of %d) against the claimed %.4g",
                 key, sigma, a["epsilon_lower"], a["epsilon_point"], a["false_positives"], a["false_negatives"],
                 a["runs_per_side"], claimed)

    def clock(name: str, fn, *args):
        start = time.perf_counter()
        w = fn(*args)
        seconds[name] = time.perf_counter() - start
        return w

    def noisy(method: str, certified: float, claim, step: sgd.Step, m: float, T: int) -> None:
        """SGLU and LU: T noisy full-batch epochs on D then one on D', against T on D' (one row per run)."""
        for scale in scales:
            key = method if scale == 1.0 else f"{method}@{scale:g}"
            value = certified * scale
            sigma = torch.full((trials,), value, device=device)
            gen = generator(params["seed"], "common", "centralized", key)
            noise = sgd.noise_generator(gen, device)
            w = clock(f"{key} learn", sgd.epochs, sgd.initial(trials, d, sigma, m, gen), x, y, None, sigma, T, step,
                      noise)
            unlearned = clock(f"{key} unlearn", sgd.epochs, w, x1, y1, None, sigma, 1, step, noise)
            retrained = clock(f"{key} retrain", sgd.epochs, sgd.initial(trials, d, sigma, m, gen), x1, y1, None,
                              sigma, T, step, noise)
            record(key, method, value, eps if scale == 1.0 else claim(value), unlearned, retrained,
                   {"learning": T * n, "unlearning": n, "retraining": T * n})

    if "sglu" in c["methods"]:
        T = c["burn_in"]
        noisy("sglu", acc.sigma_for_budget(k, eps, delta, 1, T), lambda s: acc.certificate_epsilon(k, s, 1, delta, T),
              sgd.Step(k.step, k.m, sglu["clip"], sglu["radius"]), k.m, T)
    if "lu" in c["methods"]:  # LU does not project (SGLU spec 4.4)
        noisy("lu", base.lu_sigma_for_budget(bk, eps), lambda s: base.lu_epsilon(bk, s, 1),
              sgd.Step(bk.step, bk.m, sglu["clip"], None), bk.m, c["lu_burn_in"])
    if "d2d" in c["methods"]:
        T, steps = c["d2d_burn_in"], c["d2d_steps"]
        step = sgd.Step(bk.eta_d2d, bk.m, sglu["clip"], None)
        gen = generator(params["seed"], "common", "centralized", "d2d")
        start = torch.randn(1, d, generator=gen).to(device)
        clean = clock("d2d learn", sgd.gradient_descent, start, x, y, T, step)
        moved = clock("d2d unlearn", sgd.gradient_descent, clean, x1, y1, steps, step)
        again = clock("d2d retrain", sgd.gradient_descent, start, x1, y1, T, step)
        certified = base.d2d_sigma_internal(bk, eps, steps)
        for scale in scales:  # output perturbation: the noiseless runs are shared, the noise is per run
            key, value = ("d2d" if scale == 1.0 else f"d2d@{scale:g}"), certified * scale
            noise = torch.randn(2, trials, d, generator=generator(params["seed"], "common", key, "output")).to(device)
            record(key, "d2d", value, eps if scale == 1.0 else d2d_epsilon(bk, value, steps), moved + value * noise[0],
                   again + value * noise[1], {"learning": T * n, "unlearning": steps * n, "retraining": T * n})
    if "r2d" in c["methods"]:
        T = c["r2d_burn_in"]
        eta = c["r2d_eta_L_T"] / (bk.L * T)
        step = sgd.Step(eta, bk.m, sglu["clip"], None)
        gen = generator(params["seed"], "common", "centralized", "r2d")
        start = torch.randn(1, d, generator=gen).to(device)
        again = clock("r2d retrain", sgd.gradient_descent, start, x1, y1, T, step)
        for fraction in c["r2d_rewinds"]:
            K = max(1, round(fraction * T))
            key = f"r2d K/T={fraction:g}"
            rewound = clock(f"{key} learn", sgd.gradient_descent, start, x, y, T - K, step)  # the kept checkpoint
            moved = clock(f"{key} unlearn", sgd.gradient_descent, rewound, x1, y1, K, step)
            certified = r2d_noise.sigma(eps, delta, K, T, eta, bk.L, sglu["clip"], 1, n)
            noise = torch.randn(2, trials, d, generator=generator(params["seed"], "common", key, "output")).to(device)
            record(key, "r2d", certified, eps, moved + certified * noise[0], again + certified * noise[1],
                   {"learning": T * n, "unlearning": K * n, "retraining": T * n}, rewind=K / T, K=K, T=T, eta=eta,
                   sensitivity=r2d_noise.sensitivity(K, T, eta, bk.L, sglu["clip"], 1, n),
                   noiseless_gap=float((moved - again).norm()))  # what the noise must hide, beside its bound
    for method in ("hf", "cns"):
        if method not in c["methods"]:
            continue
        from ...methods.r2d_baselines import Diverged
        from . import baselines

        model_fn = lambda: baselines.LogisticAsTwoClasses(torch.zeros(d, device=device))  # noqa: E731
        labels, constants = ((y + 1) / 2).long(), (baselines.L_LOGISTIC, baselines.G_LOGISTIC)
        try:
            r = clock(f"{method} learn, unlearn, retrain", getattr(baselines, method), model_fn, x, labels, n - 1,
                      c[method], eps, delta, params["seed"], *(constants if method == "cns" else ()))
        except Diverged as err:  # the method's own estimator failing is its result: a missing row, with the reason
            result["methods"][method] = {"method": method, "missing": f"{method.upper()} diverged: {err}"}
            log.warning("%s", result["methods"][method]["missing"])
            continue
        noise = torch.randn(2, trials, d, generator=generator(params["seed"], "common", method, "output")).to(device)
        extra = {k: v for k, v in r.items() if k not in ("unlearned", "retrained", "sigma", "grads")}
        record(method, method, r["sigma"], eps, r["unlearned"] + r["sigma"] * noise[0],
               r["retrained"] + r["sigma"] * noise[1], r["grads"], adjacency="deletion",
               noiseless_gap=float((r["unlearned"] - r["retrained"]).norm()), **extra)
    write_json(out, result)
    write_json(timing, {"seconds": seconds, "threads": torch.get_num_threads(), "device": str(device)})
