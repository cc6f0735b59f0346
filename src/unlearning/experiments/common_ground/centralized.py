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

import numpy as np
import torch

from ...config import section_config
from ...experiment import pick_device
from ...files import load_metadata, load_tensors, write_json
from ...privacy import audit, gdp_audit, r2d_noise
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


def canary_margin(w: torch.Tensor, canary: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Each row's margin y_c w.x_c on the canary: the log-odds of its label, the score the GDP audit fits (linear in
    w, so Gaussian around a Gaussian mechanism's outputs; canary_loss is softplus(-margin))."""
    x_c, y_c = canary
    return y_c * (w @ x_c)


def canary_accuracy(w: torch.Tensor, canary: tuple[torch.Tensor, torch.Tensor]) -> float:
    """The share of runs whose model predicts the canary's (flipped) label: how often it was memorised."""
    x_c, y_c = canary
    return float((y_c * (w @ x_c) > 0).float().mean())


def held_out_audit(unlearned: torch.Tensor, retrained: torch.Tensor, delta: float, confidence: float,
                   log_odds: tuple[torch.Tensor, torch.Tensor] | None = None) -> dict:
    """The audit's bound: the threshold on the canary's loss that maximises the bound on the first half of the
    runs, then the bound from its false positives and negatives on the second half (audit.epsilon_lower_bound);
    beside it the Gaussian fit of the canary's log-odds that the parametric (GDP) audit bounds from (the report
    corrects both for the table's rows): `log_odds` (unlearned, retrained) where the caller has them exactly (a
    linear model's margins), else computed from the losses (inexact where a float32 loss rounds to 0)."""
    p, q = (-unlearned).cpu().double(), (-retrained).cpu().double()  # higher = more like the unlearned side
    half = len(p) // 2
    cut, _ = audit.best_threshold(p[:half].tolist(), q[:half].tolist(), delta, confidence)
    fp, fn = int((q[half:] >= cut).sum()), int((p[half:] < cut).sum())
    bound = audit.epsilon_lower_bound(fp, fn, len(p) - half, delta, confidence)
    finite = lambda v: v if math.isfinite(v) else None  # noqa: E731  (an interval without an upper end)
    try:  # the parametric audit's fit, on the log-odds (the same order as the losses; privacy/gdp_audit.py)
        odds = (log_odds if log_odds is not None else
                (gdp_audit.log_odds(unlearned.cpu().double()), gdp_audit.log_odds(retrained.cpu().double())))
        gdp = gdp_audit.fit(*(np.asarray(torch.as_tensor(o).cpu().double()) for o in odds))
        fitted = gdp.as_dict()
    except ValueError as e:
        fitted = {"missing": str(e)}
    return {"epsilon_lower": finite(bound.epsilon_lower), "epsilon_point": finite(bound.epsilon_point),
            "epsilon_upper": finite(bound.epsilon_upper), "false_positives": fp, "false_negatives": fn,
            "runs_per_side": len(p) - half, "threshold_runs_per_side": half, "confidence": confidence,
            "gdp": fitted}


def _summary(rows: torch.Tensor) -> dict:
    return {"mean": float(rows.mean()), "std": float(rows.std(unbiased=False))}


def control_key(key: str, multiple: float) -> str:
    """The result key of `key`'s positive control at `multiple` times the claimed epsilon."""
    return f"{key}@{multiple:g}x"


class Bench:
    """What every method's run shares: the canary data, the trial count, the budget, the positive controls'
    multiples of the claim, and the result and timing being written; `record` audits one method's two sides,
    `exact_controls` adds the positive controls of a method that noises two fixed outputs."""

    def __init__(self, params: dict, features: str):
        cfg, self.sglu = config(params), section_config(params, "sglu")
        self.c, budget, self.seed = cfg["centralized"], cfg["budget"], params["seed"]
        self.eps, self.delta, self.trials = budget["epsilon"], budget["delta"], self.c["trials"]
        self.device = pick_device(params["device"])
        self.data = canary_data(features, self.c["train_size"], self.device, self.seed)
        self.n, self.d = self.data["n"], self.data["d"]
        sglu, n = self.sglu, self.n
        self.k = acc.logistic_constants(n, n, sglu["lam_per_n"], sglu["clip"], sglu["radius"])
        lam = sglu["lam_per_n"] * n
        self.bk = base.BaselineConstants(n=n, L=0.25 + lam, m=lam, d=self.d, delta=self.delta, M=sglu["clip"])
        self.multiples = list(self.c["controls"] or [])
        self.result = {"setting": "centralized", "dataset": self.c["dataset"], "n": n, "d": self.d,
                       "trials": self.trials, "epsilon": self.eps, "delta": self.delta,
                       "controls": self.multiples, "methods": {}, "config": config_record(params)}
        self.seconds: dict[str, float] = {}

    def clock(self, name: str, fn, *args):
        start = time.perf_counter()
        w = fn(*args)
        self.seconds[name] = time.perf_counter() - start
        return w

    def output_noise(self, *key: str) -> torch.Tensor:
        """[2, trials, d] standard normal: one draw per run for the unlearned side, one for the retrained side."""
        gen = generator(self.seed, "common", *key)
        return torch.randn(2, self.trials, self.d, generator=gen).to(self.device)

    def record(self, key: str, method: str, sigma: float, claimed: float, unlearned: torch.Tensor,
               retrained: torch.Tensor, grads: dict, **extra) -> None:
        data, sides = self.data, (("unlearned", unlearned), ("retrained", retrained))
        self.result["methods"][key] = {
            "method": method, "sigma": sigma, "claimed_epsilon": claimed, "gradient_evaluations": grads, **extra,
            "test_accuracy": {side: _summary(sgd.accuracy(w, data["xt"], data["yt"])) for side, w in sides},
            "canary_accuracy": {side: canary_accuracy(w, data["canary"]) for side, w in sides},
            "audit": held_out_audit(*(canary_loss(w, data["canary"]) for _, w in sides), self.delta,
                                    self.c["audit_confidence"],
                                    tuple(canary_margin(w, data["canary"]) for _, w in sides))}
        a = self.result["methods"][key]["audit"]
        log.info("%s: sigma %.4g; audit epsilon >= %s (point %s; FP %d, FN %d of %d) against the claimed %.4g",
                 key, sigma, a["epsilon_lower"], a["epsilon_point"], a["false_positives"], a["false_negatives"],
                 a["runs_per_side"], claimed)

    def exact_controls(self, key: str, method: str, unlearned: torch.Tensor, retrained: torch.Tensor, grads: dict,
                       **extra) -> None:
        """`key`'s positive controls: its noiseless outputs (one row each) with the noise whose exact epsilon for
        this pair (audit.exact_sigma at their measured gap) is each multiple of the claim; the claim tested stays
        the budget. None where the outputs coincide (no noise then has any epsilon above 0)."""
        gap = float((unlearned - retrained).norm())
        if gap == 0:
            return
        for multiple in self.multiples:
            ck, epsilon = control_key(key, multiple), multiple * self.eps
            sigma = audit.exact_sigma(epsilon, gap, self.delta)
            noise = self.output_noise(ck, "output")
            self.record(ck, method, sigma, self.eps, unlearned + sigma * noise[0], retrained + sigma * noise[1], grads,
                        **extra, noiseless_gap=gap,
                        control={"multiple": multiple, "epsilon": epsilon, "basis": "exact for this pair"})


def run_noisy(b: Bench, method: str, sigma_for, step: sgd.Step, m: float, T: int) -> None:
    """SGLU and LU: T noisy full-batch epochs on D then one on D', against T on D' (one row per run), at the sigma
    `sigma_for(epsilon)` its certificate gives the budget, then as positive controls at the sigma it gives each
    multiple of the budget (the accountant's epsilon: the chains' exact epsilon has no closed form)."""
    x, y, x1, y1 = (b.data[key] for key in ("x", "y", "x1", "y1"))
    for multiple in [None, *b.multiples]:
        key = method if multiple is None else control_key(method, multiple)
        value = sigma_for(b.eps if multiple is None else multiple * b.eps)
        control = {} if multiple is None else {
            "control": {"multiple": multiple, "epsilon": multiple * b.eps, "basis": "its accountant"}}
        sigma = torch.full((b.trials,), value, device=b.device)
        gen = generator(b.seed, "common", "centralized", key)
        noise = sgd.noise_generator(gen, b.device)
        w = b.clock(f"{key} learn", sgd.epochs, sgd.initial(b.trials, b.d, sigma, m, gen), x, y, None, sigma, T, step,
                    noise)
        unlearned = b.clock(f"{key} unlearn", sgd.epochs, w, x1, y1, None, sigma, 1, step, noise)
        retrained = b.clock(f"{key} retrain", sgd.epochs, sgd.initial(b.trials, b.d, sigma, m, gen), x1, y1, None,
                            sigma, T, step, noise)
        b.record(key, method, value, b.eps, unlearned, retrained,
                 {"learning": T * b.n, "unlearning": b.n, "retraining": T * b.n}, **control)


def run_sglu(b: Bench) -> None:
    """SGLU (Algorithm 1), sigma from Algorithm 4 at the budget."""
    k, T = b.k, b.c["burn_in"]
    run_noisy(b, "sglu", lambda eps: acc.sigma_for_budget(k, eps, b.delta, 1, T),
              sgd.Step(k.step, k.m, b.sglu["clip"], b.sglu["radius"]), k.m, T)


def run_lu(b: Bench) -> None:
    """LU (Chien et al. 2024a): SGLU's chain without projection (SGLU spec 4.4)."""
    bk = b.bk
    run_noisy(b, "lu", lambda eps: base.lu_sigma_for_budget(bk, eps), sgd.Step(bk.step, bk.m, b.sglu["clip"], None),
              bk.m, b.c["lu_burn_in"])


def run_d2d(b: Bench) -> None:
    """D2D (Neel et al. 2021): noiseless GD, then output perturbation; the noiseless runs are shared, the noise is
    per run."""
    bk, T, steps, n = b.bk, b.c["d2d_burn_in"], b.c["d2d_steps"], b.n
    step = sgd.Step(bk.eta_d2d, bk.m, b.sglu["clip"], None)
    start = torch.randn(1, b.d, generator=generator(b.seed, "common", "centralized", "d2d")).to(b.device)
    clean = b.clock("d2d learn", sgd.gradient_descent, start, b.data["x"], b.data["y"], T, step)
    moved = b.clock("d2d unlearn", sgd.gradient_descent, clean, b.data["x1"], b.data["y1"], steps, step)
    again = b.clock("d2d retrain", sgd.gradient_descent, start, b.data["x1"], b.data["y1"], T, step)
    sigma, grads = base.d2d_sigma_internal(bk, b.eps, steps), {"learning": T * n, "unlearning": steps * n,
                                                                 "retraining": T * n}
    noise = b.output_noise("d2d", "output")
    b.record("d2d", "d2d", sigma, b.eps, moved + sigma * noise[0], again + sigma * noise[1], grads,
             noiseless_gap=float((moved - again).norm()))
    b.exact_controls("d2d", "d2d", moved, again, grads)


def run_r2d(b: Bench) -> None:
    """R2D (Mu & Klabjan 2025) at each rewind fraction K / T of `r2d_rewinds`, sigma from Theorem 3.1 with m = 1."""
    bk, T, n, clip = b.bk, b.c["r2d_burn_in"], b.n, b.sglu["clip"]
    eta = b.c["r2d_eta_L_T"] / (bk.L * T)
    step = sgd.Step(eta, bk.m, clip, None)
    start = torch.randn(1, b.d, generator=generator(b.seed, "common", "centralized", "r2d")).to(b.device)
    again = b.clock("r2d retrain", sgd.gradient_descent, start, b.data["x1"], b.data["y1"], T, step)
    for fraction in b.c["r2d_rewinds"]:
        K = max(1, round(fraction * T))
        key = f"r2d K/T={fraction:g}"
        rewound = b.clock(f"{key} learn", sgd.gradient_descent, start, b.data["x"], b.data["y"], T - K, step)
        moved = b.clock(f"{key} unlearn", sgd.gradient_descent, rewound, b.data["x1"], b.data["y1"], K, step)
        certified = r2d_noise.sigma(b.eps, b.delta, K, T, eta, bk.L, clip, 1, n)
        noise = b.output_noise(key, "output")
        grads = {"learning": T * n, "unlearning": K * n, "retraining": T * n}
        extra = {"rewind": K / T, "K": K, "T": T, "eta": eta,
                 "sensitivity": r2d_noise.sensitivity(K, T, eta, bk.L, clip, 1, n)}
        b.record(key, "r2d", certified, b.eps, moved + certified * noise[0], again + certified * noise[1], grads,
                 noiseless_gap=float((moved - again).norm()), **extra)  # what the noise must hide, beside its bound
        b.exact_controls(key, "r2d", moved, again, grads, **extra)


def run_baseline(b: Bench, method: str) -> None:
    """HF or CNS (baselines.py): deterministic learners certifying deletion, so removal there deletes the canary;
    the output noise is per run. A diverged estimator is the method's result: a missing row with the reason."""
    from ...methods.r2d_baselines import Diverged
    from . import baselines

    x, y, d, device = b.data["x"], b.data["y"], b.d, b.device
    model_fn = lambda: baselines.LogisticAsTwoClasses(torch.zeros(d, device=device))  # noqa: E731
    labels, constants = ((y + 1) / 2).long(), (baselines.L_LOGISTIC, baselines.G_LOGISTIC)
    try:
        r = b.clock(f"{method} learn, unlearn, retrain", getattr(baselines, method), model_fn, x, labels, b.n - 1,
                    b.c[method], b.eps, b.delta, b.seed, *(constants if method == "cns" else ()))
    except Diverged as err:
        b.result["methods"][method] = {"method": method, "missing": f"{method.upper()} diverged: {err}"}
        log.warning("%s", b.result["methods"][method]["missing"])
        return
    noise = b.output_noise(method, "output")
    extra = {k: v for k, v in r.items() if k not in ("unlearned", "retrained", "sigma", "grads")}
    b.record(method, method, r["sigma"], b.eps, r["unlearned"] + r["sigma"] * noise[0],
             r["retrained"] + r["sigma"] * noise[1], r["grads"], adjacency="deletion",
             noiseless_gap=float((r["unlearned"] - r["retrained"]).norm()), **extra)
    b.exact_controls(method, method, r["unlearned"], r["retrained"], r["grads"], adjacency="deletion", **extra)


RUNS = {"sglu": run_sglu, "lu": run_lu, "d2d": run_d2d, "r2d": run_r2d,
        "hf": lambda b: run_baseline(b, "hf"), "cns": lambda b: run_baseline(b, "cns")}


def step_centralized(params: dict, features: str, out: str, timing: str) -> None:
    """Every method of common.centralized.methods on the canary, `trials` runs a side, and its audit; each again as
    a positive control at each of `controls` times the claimed epsilon (its noise set so that the pair's exact
    epsilon, or SGLU's and LU's accountant's, is that multiple): where the audit's bound exceeds the claim there,
    it has shown the power to fault a certificate at this run count."""
    b = Bench(params, features)
    for method in METHODS:  # the fixed order keeps the seconds' and methods' order as before
        if method in b.c["methods"]:
            RUNS[method](b)
    write_json(out, b.result)
    write_json(timing, {"seconds": b.seconds, "threads": torch.get_num_threads(), "device": str(b.device)})
