"""Common ground, centralized setting on the convex model (issue 16): each configured method removes one canary at
one budget, beside retraining by the same mechanism, and an auditor turns how well the canary tells the two apart
into an epsilon lower bound.

The task is SGLU's (specs/sglu.md 4.1-4.3): L2-regularised logistic regression on unit-norm binary features of
`common.centralized.dataset` (the `sglu` section's pair, extractor and constants), optionally cut to the first
`train_size` points. The canary is the last training point with its label flipped (a mislabelled sample, the
auditing literature's strongest simple canary); removing it means replacing it by SGLU's random replacement point
(the replace-one adjacency SGLU, LU, D2D and R2D certify) or deleting it (HF's and CNS's adjacency).

The methods are those of `common.centralized.methods`, each a `run(bench)` declared with
`@register_central(name, model="convex")` in its module of unlearning/methods/ (sglu.py, lu.py, d2d.py, r2d.py,
r2d_baselines.py, neggrad_plus.py, salun.py; methods/__init__.py). A runner reads the task from the `Bench` below
and hands it its outputs: `publish` for a method that adds N(0, sigma^2 I) around two noiseless outputs (its
positive controls follow), `noisy_chains` for a noisy-GD chain (SGLU, LU), `record` for `trials` rows a side it
drew itself.

The audit (held_out_audit; the report bounds it): Clopper-Pearson's (privacy/audit.py) on the canary's logistic
loss under a run's model (low = the canary was learned, like the unlearned side), its threshold chosen on the first
half of the runs and its counts from the second; and the Gaussian statistics of all runs (privacy/gdp_audit.py) of
the canary's margin (black-box) and, where a method noises two noiseless outputs, of the runs projected on the
direction between them (white-box, which judges such a Gaussian pair).

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
from ...files import load_metadata, load_tensors
from ...privacy import audit, gdp_audit
from ...privacy import sglu as acc
from ...privacy import sglu_baselines as base
from ...resolved import config_record
from ...seeding import generator
from ...train import noisy_sgd as sgd
from ...train.autodiff import grad
from ...train.dsgd import all_finite, make_loss
from ...train.flat import FlatSpec
from . import config

log = logging.getLogger("unlearning")

L_LOGISTIC, G_LOGISTIC = 0.25, 1.0  # smoothness and gradient bound of the logistic loss on unit-norm features


class LogisticAsTwoClasses(torch.nn.Module):
    """w in R^d with logits [0, w.x]: cross-entropy on labels (y + 1) / 2 is the logistic loss of y in {-1, +1}."""

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.w = torch.nn.Parameter(w.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x @ self.w
        return torch.stack([torch.zeros_like(z), z], dim=1)


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
                   log_odds: tuple[torch.Tensor, torch.Tensor] | None = None,
                   white_box: tuple[torch.Tensor, torch.Tensor] | None = None) -> dict:
    """The audit's statistics (the report bounds from them at the table's corrected level): Clopper-Pearson's
    threshold on the canary's loss that maximises the bound on the first half of the runs, and its false positives
    and negatives on the second half (audit.epsilon_lower_bound); the black-box score's Gaussian statistics over all
    runs (privacy/gdp_audit.py), the canary's log-odds `log_odds` (unlearned, retrained: from the logits in float64,
    or a linear model's margins), where the caller passes them; and, where it passes them too, the
    white-box score's (the released parameters projected on the direction between the two noiseless outputs)."""
    p, q = (-unlearned).cpu().double(), (-retrained).cpu().double()  # higher = more like the unlearned side
    half = len(p) // 2
    cut, _ = audit.best_threshold(p[:half].tolist(), q[:half].tolist(), delta, confidence)
    fp, fn = int((q[half:] >= cut).sum()), int((p[half:] < cut).sum())
    bound = audit.epsilon_lower_bound(fp, fn, len(p) - half, delta, confidence)
    finite = lambda v: v if math.isfinite(v) else None  # noqa: E731  (an interval without an upper end)

    def fitted(pair) -> dict:
        try:
            return gdp_audit.fit(*(np.asarray(torch.as_tensor(o).cpu().double()) for o in pair)).as_dict()
        except ValueError as e:
            return {"missing": str(e)}

    scores = {name: fitted(pair) for name, pair in (("gdp", log_odds), ("white_box", white_box)) if pair is not None}
    return {"epsilon_lower": finite(bound.epsilon_lower), "epsilon_point": finite(bound.epsilon_point),
            "epsilon_upper": finite(bound.epsilon_upper), "false_positives": fp, "false_negatives": fn,
            "runs_per_side": len(p) - half, "threshold_runs_per_side": half, "confidence": confidence,
            **scores}


def white_box(noiseless: tuple[torch.Tensor, torch.Tensor] | None, *runs: torch.Tensor) -> tuple | None:
    """The white-box score of each side's runs ([runs, P] each): projected on the unit direction from the noiseless
    retrained output to the noiseless unlearned one (`noiseless`, [1, P] each), in float64. For a mechanism adding
    N(0, sigma^2 I) around them it is the best test between the two sides, N(0, sigma^2) against N(gap, sigma^2)
    exactly. None without noiseless outputs or where they coincide (nothing to project on)."""
    if noiseless is None:
        return None
    v = (noiseless[0] - noiseless[1]).double()[0]
    if not v.norm() > 0:
        return None
    return tuple((w.double() - noiseless[1].double()) @ (v / v.norm()) for w in runs)


def retain_forget_descent(model: torch.nn.Module, theta: torch.Tensor, x: torch.Tensor, labels: torch.Tensor,
                          canary: int, steps: int, lr: float, w_retain: float, w_forget: float,
                          forget_label: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                          what: str = "descent") -> torch.Tensor:
    """`steps` full-batch gradient steps of size `lr` from `theta` ([1, P]) on w_retain * CE(D') + w_forget *
    CE(canary, forget_label) (D' = every row but the canary's; forget_label: its own by default), each step on the
    coordinates of `mask` only (all by default). A non-finite model stops it at once, naming the step."""
    spec = FlatSpec.of(model)
    loss = make_loss(model, spec)
    keep = torch.ones(len(labels), device=x.device)
    keep[canary] = 0.0
    xf, yf = x[canary:canary + 1], labels[canary:canary + 1] if forget_label is None else forget_label.view(1)
    one = torch.ones(1, device=x.device)
    step_grad = grad(lambda th: w_retain * loss(th, x, labels, keep) + w_forget * loss(th, xf, yf, one))
    th = theta[0].clone()
    for step in range(steps):
        g = step_grad(th)
        th = th - lr * (g if mask is None else g * mask)
        if not all_finite(th):
            raise FloatingPointError(f"{what}: the model is not finite after step {step + 1} of {steps} (lr {lr:g})")
    return th[None]


def _summary(rows: torch.Tensor) -> dict:
    return {"mean": float(rows.mean()), "std": float(rows.std(unbiased=False))}


def control_key(key: str, multiple: float) -> str:
    """The result key of `key`'s positive control at `multiple` times the claimed epsilon."""
    return f"{key}@{multiple:g}x"


class CanaryTask:
    """What both benches (Bench here, mlp.MlpBench) do alike, on their own `model_fn`, `x`, `labels`, `canary` and
    `result`."""

    def descend(self, theta: torch.Tensor, steps: int, lr: float, w_retain: float, w_forget: float,
                forget_label: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                what: str = "descent") -> torch.Tensor:
        """retain_forget_descent on this task's model and data."""
        return retain_forget_descent(self.model_fn(), theta, self.x, self.labels, self.canary, steps, lr, w_retain,
                                     w_forget, forget_label, mask, what)

    def missing(self, method: str, why: str) -> None:
        """`method`'s row as missing, with the reason (its own estimator diverging is its result)."""
        self.result["methods"][method] = {"method": method, "missing": why}
        log.warning("%s", why)


class Bench(CanaryTask):
    """What every method's run shares: the canary data, the trial count, the budget, the positive controls'
    multiples of the claim, and the result and timing being written; `record` audits one method's two sides,
    `exact_controls` adds the positive controls of a method that noises two fixed outputs.

    The same names as the MLP's bench (mlp.py), so that a runner can serve both: `cfg` (this table's params block)
    and `central` (common.centralized: HF's and CNS's settings), `eps`, `delta`, `seed`, `trials`, `device`, `n`,
    `x` and `labels` (class indices 0/1), `canary` (its row), `model_fn()` (the initial model as a module),
    `smoothness()` (L, G of the loss), `original()` (the noiseless original and its retraining without the canary,
    for a method without its own training), `descend` (full-batch steps on retained and forget terms), `clock`,
    `publish`, `deterministic`, `record`, `missing`. Convex only: `data` (x, y in {-1, +1}, D' as x1, y1, the test
    set), SGLU's constants `sglu`, `k`, `bk`, `noisy_chains`, `gradient_descent`."""

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
        self.cfg = self.central = self.c
        self.x, self.labels, self.canary = self.data["x"], ((self.data["y"] + 1) / 2).long(), n - 1
        self.result = {"setting": "centralized", "dataset": self.c["dataset"], "n": n, "d": self.d,
                       "trials": self.trials, "epsilon": self.eps, "delta": self.delta,
                       "controls": self.multiples, "methods": {}, "labels": {}, "config": config_record(params)}
        self.seconds: dict[str, float] = {}
        self._original: tuple[torch.Tensor, torch.Tensor] | None = None

    def model_fn(self) -> torch.nn.Module:
        return LogisticAsTwoClasses(torch.zeros(self.d, device=self.device))

    def smoothness(self) -> tuple[float, float]:
        return L_LOGISTIC, G_LOGISTIC

    def gradient_descent(self, start: torch.Tensor, on: str, steps: int, eta: float) -> torch.Tensor:
        """Noiseless full-batch GD on the task's regularised logistic loss (clipped as SGLU's, no projection) from
        `start` ([1, d]), `steps` steps of size `eta`, on D (`on="D"`) or on D' (the canary replaced, `on="D'"`)."""
        x, y = (self.data["x"], self.data["y"]) if on == "D" else (self.data["x1"], self.data["y1"])
        return sgd.gradient_descent(start, x, y, steps, sgd.Step(eta, self.bk.m, self.sglu["clip"], None))

    def original(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The task's noiseless original for a method without its own training: full-batch GD for `d2d_burn_in`
        steps at D2D's step size (the regularised logistic loss) from a seeded start, on D and, for retraining, on
        D without the canary (deletion) — flat [1, d] each; trained once, its seconds under "original"."""
        if self._original is None:
            bk, T = self.bk, self.c["d2d_burn_in"]
            step = sgd.Step(bk.eta_d2d, bk.m, self.sglu["clip"], None)
            start = torch.randn(1, self.d, generator=generator(self.seed, "common", "centralized", "original"))
            keep = torch.arange(self.n, device=self.device) != self.canary
            learned = self.clock("original learn", sgd.gradient_descent, start.to(self.device), self.data["x"],
                                 self.data["y"], T, step)
            again = self.clock("original retrain", sgd.gradient_descent, start.to(self.device),
                               self.data["x"][keep], self.data["y"][keep], T, step)
            self._original = (learned, again)
        return self._original

    def deterministic(self, key: str, method: str, unlearned: torch.Tensor, retrained: torch.Tensor,
                      unlearning_grads: int, **extra) -> None:
        """The row of a method without a certificate and without noise, beside the original's retraining: each
        side is one model ([1, d]), so all `trials` runs of a side are the same and the audit can only tell whether
        the canary separates the two."""
        n, T = self.n, self.c["d2d_burn_in"]
        self.seconds[f"{key} retrain"] = self.seconds["original retrain"]
        sides = {"original": self.original()[0], "unlearned": unlearned, "retrained": retrained}
        self.record(key, method, 0.0, None, unlearned.expand(self.trials, -1), retrained.expand(self.trials, -1),
                    {"learning": T * n, "unlearning": unlearning_grads, "retraining": T * (n - 1)},
                    noiseless_gap=float((unlearned - retrained).norm()),
                    canary_loss={s: float(canary_loss(w, self.data["canary"])[0]) for s, w in sides.items()},
                    original_canary_accuracy=canary_accuracy(sides["original"], self.data["canary"]), **extra)

    def publish(self, key: str, method: str, sigma: float, unlearned: torch.Tensor, retrained: torch.Tensor,
                grads: dict, **extra) -> None:
        """The row of a method publishing its noiseless output plus N(0, sigma^2 I), beside retraining's plus the
        same: `trials` independent noises a side around the two outputs ([1, d] each), then its positive
        controls."""
        noise = self.output_noise(key, "output")
        self.record(key, method, sigma, self.eps, unlearned + sigma * noise[0], retrained + sigma * noise[1], grads,
                    (unlearned, retrained), noiseless_gap=float((unlearned - retrained).norm()), **extra)
        self.exact_controls(key, method, unlearned, retrained, grads, **extra)

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
               retrained: torch.Tensor, grads: dict, noiseless: tuple[torch.Tensor, torch.Tensor] | None = None,
               **extra) -> None:
        """A row from `trials` runs a side ([trials, d] each); `noiseless` (unlearned, retrained outputs, [1, d]
        each) where the runs are them plus Gaussian noise: the white-box score projects on their difference."""
        data, sides = self.data, (("unlearned", unlearned), ("retrained", retrained))
        self.result["methods"][key] = {
            "method": method, "sigma": sigma, "claimed_epsilon": claimed, "gradient_evaluations": grads, **extra,
            "test_accuracy": {side: _summary(sgd.accuracy(w, data["xt"], data["yt"])) for side, w in sides},
            "canary_accuracy": {side: canary_accuracy(w, data["canary"]) for side, w in sides},
            "audit": held_out_audit(*(canary_loss(w, data["canary"]) for _, w in sides), self.delta,
                                    self.c["audit_confidence"],
                                    tuple(canary_margin(w, data["canary"]).double() for _, w in sides),
                                    white_box(noiseless, unlearned, retrained))}
        a = self.result["methods"][key]["audit"]
        log.info("%s: sigma %.4g; audit epsilon >= %s (point %s; FP %d, FN %d of %d) against the claimed %s",
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
                        (unlearned, retrained), **extra, noiseless_gap=gap,
                        control={"multiple": multiple, "epsilon": epsilon, "basis": "exact for this pair"})

    def noisy_chains(self, method: str, sigma_for, step: sgd.Step, m: float, T: int) -> None:
        """SGLU and LU: T noisy full-batch epochs on D then one on D', against T on D' (one row per run), at the
        sigma `sigma_for(epsilon)` its certificate gives the budget, then as positive controls at the sigma it gives
        each multiple of the budget (the accountant's epsilon: the chains' exact epsilon has no closed form)."""
        x, y, x1, y1 = (self.data[key] for key in ("x", "y", "x1", "y1"))
        for multiple in [None, *self.multiples]:
            key = method if multiple is None else control_key(method, multiple)
            value = sigma_for(self.eps if multiple is None else multiple * self.eps)
            control = {} if multiple is None else {
                "control": {"multiple": multiple, "epsilon": multiple * self.eps, "basis": "its accountant"}}
            sigma = torch.full((self.trials,), value, device=self.device)
            gen = generator(self.seed, "common", "centralized", key)
            noise = sgd.noise_generator(gen, self.device)
            w = self.clock(f"{key} learn", sgd.epochs, sgd.initial(self.trials, self.d, sigma, m, gen), x, y, None,
                           sigma, T, step, noise)
            unlearned = self.clock(f"{key} unlearn", sgd.epochs, w, x1, y1, None, sigma, 1, step, noise)
            retrained = self.clock(f"{key} retrain", sgd.epochs, sgd.initial(self.trials, self.d, sigma, m, gen), x1,
                                   y1, None, sigma, T, step, noise)
            self.record(key, method, value, self.eps, unlearned, retrained,
                        {"learning": T * self.n, "unlearning": self.n, "retraining": T * self.n}, **control)
