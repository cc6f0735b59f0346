"""Common ground, centralized setting on an MLP (issue 16): the convex setting's canary task (centralized.py) with
R2D's smooth MLP (SmeLU activations, two outputs; Mu & Klabjan 2025, Section 4), and the methods of
`common.mlp.methods`, each a `run(bench)` declared with `@register_central(name, model="mlp")` in its module of
unlearning/methods/ (methods/__init__.py): R2D (r2d.py), HF and CNS (r2d_baselines.py), NegGrad+ and SalUn. Removal
deletes the canary. A method of `common.centralized.methods` with no MLP runner is listed as not applicable, with the
reason its declaration gives (SGLU, LU and D2D certify (strongly) convex losses only).

The setting's original is R2D's training (minibatch SGD at lr0 gamma^epoch, a checkpoint after every epoch; all
`epochs` kept, the task has no validation split), with its L and G estimated at theta_T as R2D does (Appendix D):
the bench trains it once, when a method first asks (`trained`); CNS's Delta uses its L and G.

Every certified learner here is deterministic, so each such method's runs are its noiseless unlearned and
retrained models plus independent output noise per run (`publish`); the audit and the test accuracy evaluate every
run (trials batched by vmap). Each such row is audited again as a positive control at each of
`common.centralized.controls` times the claimed epsilon: the same two noiseless models with the noise whose exact
epsilon for that pair is the multiple (audit.exact_sigma).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from ...experiment import pick_device
from ...history import CheckpointStore
from ...methods import r2d
from ...models import SmeluMLP
from ...privacy import audit
from ...resolved import config_record
from ...seeding import derive_seed, generator
from ...train import checkpointed_sgd as cs
from ...train.flat import FlatSpec
from . import config, r2d_calibration
from .centralized import CanaryTask, _summary, canary_data, control_key, held_out_audit, white_box

log = logging.getLogger("unlearning")

def per_run(model: torch.nn.Module, spec: FlatSpec, thetas: torch.Tensor, x: torch.Tensor, labels: torch.Tensor,
            chunk: int = 100) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each run's (row's) cross-entropy, correctness and log-odds of the true label on (x, labels): [runs, len(x)]
    each; the log-odds from the logits in float64, z_y - logsumexp of the others (no softmax to saturate)."""
    def one(flat):
        logits = functional_call(model, spec.unflatten(flat), (x,))
        z = logits.double()
        true = z.gather(1, labels[:, None])[:, 0]
        others = z.scatter(1, labels[:, None], -torch.inf).logsumexp(1)
        return F.cross_entropy(logits, labels, reduction="none"), (logits.argmax(1) == labels).float(), true - others

    parts = [vmap(one)(thetas[i:i + chunk]) for i in range(0, len(thetas), chunk)]
    return tuple(torch.cat([p[k] for p in parts]) for k in range(3))


@dataclass
class Trained:
    """R2D's training on D: its checkpoints, schedule, epochs E and steps per epoch S, L, G, the last step size
    eta, and the retrained model (all E epochs re-run on D', flat [1, P])."""

    store: CheckpointStore
    sched: cs.Schedule
    E: int
    S: int
    L: float
    G: float
    eta: float
    retrained: torch.Tensor
    theta: torch.Tensor  # the trained model on D (flat, [1, P])


class MlpBench(CanaryTask):
    """The MLP task's bench: the names of centralized.Bench's (its docstring), `trained()` (the setting's original,
    above), and what R2D's runner uses besides: `net`, `spec`, `keep` (the rows of D'), `calibrate`."""

    def __init__(self, params: dict, features: str, tmp: str):
        cfg = config(params)
        self.central, self.cfg, budget = cfg["centralized"], cfg["mlp"], cfg["budget"]
        self.eps, self.delta, self.trials, self.seed = (budget["epsilon"], budget["delta"], self.cfg["trials"],
                                                        params["seed"])
        self.device = pick_device(params["device"])
        data = canary_data(features, self.cfg["train_size"], self.device, self.seed, key="common.mlp.train_size")
        self.x, self.labels = data["x"], ((data["y"] + 1) / 2).long()
        self.xt, self.yt = data["xt"], ((data["yt"] + 1) / 2).long()
        self.n, self.d, self.canary = data["n"], data["d"], data["n"] - 1
        self.keep = torch.arange(self.n, device=self.device) != self.canary
        self.widths = (self.d, *self.cfg["widths"], 2)
        self.net = self.model_fn()
        self.spec = FlatSpec.of(self.net)
        self.tmp = tmp
        self._trained: Trained | None = None
        self.result = {"setting": "centralized_mlp", "dataset": self.central["dataset"], "n": self.n, "d": self.d,
                       "widths": list(self.widths), "parameters": self.spec.dim, "trials": self.trials,
                       "epsilon": self.eps, "delta": self.delta, "controls": list(self.central["controls"] or []),
                       "methods": {}, "labels": {}, "does_not_apply": {}, "config": config_record(params)}
        self.seconds: dict[str, float] = {}

    def model_fn(self) -> torch.nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(self.seed, "common", "mlp", "init"))
            return SmeluMLP(self.widths, self.cfg["beta"]).to(self.device)

    def trained(self) -> Trained:
        """R2D's training run, its L and G, and its retraining on D' (once; the first caller pays)."""
        if self._trained is None:
            rc = self.cfg["r2d"]
            sched = cs.Schedule(rc["lr0"], rc["gamma"], rc["batch_size"],
                                derive_seed(self.seed, "common", "mlp", "shuffle"))
            E, S = rc["epochs"], sched.steps_per_epoch(self.n)
            start = time.perf_counter()
            run = cs.train(self.net, self.x, self.labels, self.x, self.labels, sched, E, self.tmp, min_selected=E)
            self.seconds["r2d learn"] = time.perf_counter() - start
            theta = self.spec.flatten(self.net).clone()[None]
            est = rc["estimate"]
            L = cs.estimate_smoothness(self.net, self.x, self.labels, est["batch"], est["samples"], est["std"],
                                       derive_seed(self.seed, "common", "mlp", "smoothness"))
            G, eta = run.G, sched.lr(E - 1)
            self.result["r2d_constants"] = {"L": L, "G": G, "eta": eta, "epochs": E, "steps_per_epoch": S}
            store = CheckpointStore(self.tmp)
            start = time.perf_counter()
            retrained = self.spec.flatten(r2d.rewind(self.net, store, self.x[self.keep], self.labels[self.keep],
                                                     sched, E, E)).clone()[None]
            self.seconds["r2d retrain"] = time.perf_counter() - start
            self._trained = Trained(store, sched, E, S, L, G, eta, retrained, theta)
        return self._trained

    def smoothness(self) -> tuple[float, float]:
        t = self.trained()
        return t.L, t.G

    def original(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The setting's original (R2D's training on D) and its retraining on D' (flat, [1, P] each)."""
        t = self.trained()
        return t.theta, t.retrained

    def deterministic(self, key: str, method: str, unlearned: torch.Tensor, retrained: torch.Tensor,
                      unlearning_grads: int, **extra) -> None:
        """The row of a method without a certificate and without noise, beside R2D's retraining on D': each side is
        one model ([1, P]), so all `trials` runs of a side are the same and the audit can only tell whether the
        canary separates the two."""
        t, n, c = self.trained(), self.n, self.canary
        self.seconds[f"{key} retrain"] = self.seconds["r2d retrain"]
        sides = {"original": t.theta, "unlearned": unlearned, "retrained": retrained}
        stats = {s: per_run(self.net, self.spec, w, self.x[c:c + 1], self.labels[c:c + 1]) for s, w in sides.items()}
        self.record(key, method, 0.0, None, unlearned.expand(self.trials, -1), retrained.expand(self.trials, -1),
                    {"learning": t.E * n, "unlearning": unlearning_grads, "retraining": t.E * (n - 1)},
                    noiseless_gap=float((unlearned - retrained).norm()),
                    canary_loss={s: float(v[0][0, 0]) for s, v in stats.items()},
                    original_canary_accuracy=float(stats["original"][1][0, 0]), **extra)

    def calibrate(self, published: dict) -> None:
        """R2D's published rows' calibration (r2d_calibration.py)."""
        t = self.trained()
        start = time.perf_counter()
        self.result["r2d_calibration"] = r2d_calibration.attribution(
            self.model_fn, t.store, self.x, self.labels, self.canary, t.sched, t.E, published, t.L, t.G, self.eps,
            self.delta)
        self.seconds["r2d calibration"] = time.perf_counter() - start

    def record(self, key: str, method: str, sigma: float, claimed: float | None, unlearned: torch.Tensor,
               retrained: torch.Tensor, grads: dict, noiseless: tuple[torch.Tensor, torch.Tensor] | None = None,
               **extra) -> None:
        """A row from `trials` runs a side (flat models, [trials, P] each): test and canary accuracy and the
        audit (its white-box score on `noiseless`, centralized.Bench.record)."""
        runs = {"unlearned": unlearned, "retrained": retrained}
        canary_loss = {s: per_run(self.net, self.spec, w, self.x[self.canary:], self.labels[self.canary:])
                       for s, w in runs.items()}
        test = {s: per_run(self.net, self.spec, w, self.xt, self.yt)[1].mean(1) for s, w in runs.items()}
        self.result["methods"][key] = {
            "method": method, "sigma": sigma, "claimed_epsilon": claimed, "adjacency": "deletion",
            "gradient_evaluations": grads, **extra,
            "test_accuracy": {s: _summary(t) for s, t in test.items()},
            "canary_accuracy": {s: float(v[1].mean()) for s, v in canary_loss.items()},
            "audit": held_out_audit(canary_loss["unlearned"][0][:, 0], canary_loss["retrained"][0][:, 0],
                                    self.delta, self.central["audit_confidence"],
                                    (canary_loss["unlearned"][2][:, 0], canary_loss["retrained"][2][:, 0]),
                                    white_box(noiseless, unlearned, retrained))}
        a = self.result["methods"][key]["audit"]
        log.info("mlp %s: sigma %.4g (gap %s); audit epsilon >= %s (FP %d, FN %d of %d)", key, sigma,
                 extra.get("noiseless_gap"), a["epsilon_lower"], a["false_positives"], a["false_negatives"],
                 a["runs_per_side"])

    def _noised(self, key: str, method: str, sigma: float, unlearned: torch.Tensor, retrained: torch.Tensor,
                grads: dict, **extra) -> None:
        noise = torch.randn(2, self.trials, self.spec.dim,
                            generator=generator(self.seed, "common", "mlp", key, "output")).to(self.device)
        self.record(key, method, sigma, self.eps, unlearned + sigma * noise[0], retrained + sigma * noise[1], grads,
                    (unlearned, retrained), noiseless_gap=float((unlearned - retrained).norm()), **extra)

    def publish(self, key: str, method: str, sigma: float, unlearned: torch.Tensor, retrained: torch.Tensor,
                grads: dict, **extra) -> None:
        """The row of a method publishing its noiseless output ([1, P]) plus N(0, sigma^2 I), beside retraining's
        plus the same, then its positive controls (none where the two noiseless models coincide)."""
        self._noised(key, method, sigma, unlearned, retrained, grads, **extra)
        gap = float((unlearned - retrained).norm())
        for multiple in self.result["controls"] if gap > 0 else []:
            control = {"multiple": multiple, "epsilon": multiple * self.eps, "basis": "exact for this pair"}
            self._noised(control_key(key, multiple), method, audit.exact_sigma(multiple * self.eps, gap, self.delta),
                         unlearned, retrained, grads, **extra, control=control)
