"""Common ground, centralized setting on an MLP (issue 16): the convex setting's canary task (centralized.py) with
R2D's smooth MLP (SmeLU activations, two outputs; Mu & Klabjan 2025, Section 4), and the methods whose certificates
allow a non-convex model. Removal deletes the canary (every method here certifies deletion).

- R2D: R2D's own training (minibatch SGD at lr0 gamma^epoch, a checkpoint after every epoch; all `epochs` kept, the
  task has no validation split), its L and G estimated at theta_T as R2D does (Appendix D); unlearning rewinds K_ep
  epochs and re-runs them on D'; retraining re-runs all of them. sigma: Theorem 3.1 with K = K_ep S and
  T = (E - 1) S (privacy/r2d_noise.epoch_steps), m = 1; one row per rewind fraction.
- HF, CNS (baselines.py) at the convex setting's `hf` and `cns` settings; CNS's Delta with R2D's L and G.
- SGLU, LU, D2D certify (strongly) convex losses only: listed as not applicable.

Every learner here is deterministic, so each method's runs are its noiseless unlearned and retrained models plus
independent output noise per run; the audit and the test accuracy evaluate every run (trials batched by vmap). Each
row is audited again as a positive control at each of `common.centralized.controls` times the claimed epsilon: the
same two noiseless models with the noise whose exact epsilon for that pair is the multiple (audit.exact_sigma).
"""

from __future__ import annotations

import logging
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from ...experiment import pick_device
from ...files import write_json
from ...history import CheckpointStore
from ...methods import r2d
from ...models import SmeluMLP
from ...privacy import audit, r2d_noise
from ...resolved import config_record
from ...seeding import derive_seed, generator
from ...train import checkpointed_sgd as cs
from ...train.flat import FlatSpec
from . import baselines, config, r2d_calibration
from .centralized import _summary, canary_data, control_key, held_out_audit

log = logging.getLogger("unlearning")

METHODS = ("r2d", "hf", "cns")
DOES_NOT_APPLY = {m: "its certificate assumes a (strongly) convex loss; an MLP's is not" for m in ("sglu", "lu", "d2d")}


def per_run(model: torch.nn.Module, spec: FlatSpec, thetas: torch.Tensor, x: torch.Tensor, labels: torch.Tensor,
            chunk: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """Each run's (row's) cross-entropy and correctness on (x, labels): [runs, len(x)] each."""
    def one(flat):
        logits = functional_call(model, spec.unflatten(flat), (x,))
        return F.cross_entropy(logits, labels, reduction="none"), (logits.argmax(1) == labels).float()

    parts = [vmap(one)(thetas[i:i + chunk]) for i in range(0, len(thetas), chunk)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def step_mlp(params: dict, features: str, out: str, timing: str) -> None:
    """R2D at every rewind fraction, HF and CNS on the MLP, `trials` runs a side each, and their audits."""
    cfg = config(params)
    c, m, budget = cfg["centralized"], cfg["mlp"], cfg["budget"]
    eps, delta, trials, seed = budget["epsilon"], budget["delta"], m["trials"], params["seed"]
    device = pick_device(params["device"])
    data = canary_data(features, m["train_size"], device, seed, key="common.mlp.train_size")
    x, labels = data["x"], ((data["y"] + 1) / 2).long()
    xt, yt = data["xt"], ((data["yt"] + 1) / 2).long()
    n, d, canary = data["n"], data["d"], data["n"] - 1
    keep = torch.arange(n, device=device) != canary
    widths = (d, *m["widths"], 2)

    def model_fn() -> torch.nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "common", "mlp", "init"))
            return SmeluMLP(widths, m["beta"]).to(device)

    net = model_fn()
    spec = FlatSpec.of(net)
    result = {"setting": "centralized_mlp", "dataset": c["dataset"], "n": n, "d": d, "widths": list(widths),
              "parameters": spec.dim, "trials": trials, "epsilon": eps, "delta": delta,
              "controls": list(c["controls"] or []), "methods": {},
              "does_not_apply": DOES_NOT_APPLY, "config": config_record(params)}
    seconds: dict[str, float] = {}

    def record(key: str, method: str, sigma: float, unlearned: torch.Tensor, retrained: torch.Tensor, grads: dict,
               **extra) -> None:
        noise = torch.randn(2, trials, spec.dim, generator=generator(seed, "common", "mlp", key, "output")).to(device)
        runs = {"unlearned": unlearned + sigma * noise[0], "retrained": retrained + sigma * noise[1]}
        canary_loss = {s: per_run(net, spec, w, x[canary:], labels[canary:]) for s, w in runs.items()}
        test = {s: per_run(net, spec, w, xt, yt)[1].mean(1) for s, w in runs.items()}
        result["methods"][key] = {
            "method": method, "sigma": sigma, "claimed_epsilon": eps, "adjacency": "deletion",
            "gradient_evaluations": grads, "noiseless_gap": float((unlearned - retrained).norm()), **extra,
            "test_accuracy": {s: _summary(t) for s, t in test.items()},
            "canary_accuracy": {s: float(v[1].mean()) for s, v in canary_loss.items()},
            "audit": held_out_audit(canary_loss["unlearned"][0][:, 0], canary_loss["retrained"][0][:, 0], delta,
                                    c["audit_confidence"])}
        a = result["methods"][key]["audit"]
        log.info("mlp %s: sigma %.4g (gap %.4g); audit epsilon >= %s (FP %d, FN %d of %d)", key, sigma,
                 result["methods"][key]["noiseless_gap"], a["epsilon_lower"], a["false_positives"],
                 a["false_negatives"], a["runs_per_side"])

    def record_with_controls(key: str, method: str, sigma: float, unlearned: torch.Tensor, retrained: torch.Tensor,
                             grads: dict, **extra) -> None:
        """`record`, then the row's positive controls (none where the two noiseless models coincide)."""
        record(key, method, sigma, unlearned, retrained, grads, **extra)
        gap = float((unlearned - retrained).norm())
        for multiple in result["controls"] if gap > 0 else []:
            control = {"multiple": multiple, "epsilon": multiple * eps, "basis": "exact for this pair"}
            record(control_key(key, multiple), method, audit.exact_sigma(multiple * eps, gap, delta), unlearned,
                   retrained, grads, **extra, control=control)

    # R2D's training: also the source of L and G (CNS's Delta uses them too)
    rc = m["r2d"]
    sched = cs.Schedule(rc["lr0"], rc["gamma"], rc["batch_size"], derive_seed(seed, "common", "mlp", "shuffle"))
    E, S = rc["epochs"], sched.steps_per_epoch(n)
    with tempfile.TemporaryDirectory(prefix="common-mlp-") as tmp:
        start = time.perf_counter()
        trained = cs.train(net, x, labels, x, labels, sched, E, tmp, min_selected=E)
        seconds["r2d learn"] = time.perf_counter() - start
        est = rc["estimate"]
        L = cs.estimate_smoothness(net, x, labels, est["batch"], est["samples"], est["std"],
                                   derive_seed(seed, "common", "mlp", "smoothness"))
        G, eta = trained.G, sched.lr(E - 1)
        result["r2d_constants"] = {"L": L, "G": G, "eta": eta, "epochs": E, "steps_per_epoch": S}
        store = CheckpointStore(tmp)
        start = time.perf_counter()
        retrained = spec.flatten(r2d.rewind(net, store, x[keep], labels[keep], sched, E, E)).clone()[None]
        seconds["r2d retrain"] = time.perf_counter() - start
        if "r2d" in m["methods"]:
            published = {}
            for fraction in rc["rewinds"]:
                K_ep = min(max(1, round(fraction * (E - 1))), E - 1)
                start = time.perf_counter()
                moved = spec.flatten(r2d.rewind(net, store, x[keep], labels[keep], sched, E, K_ep)).clone()[None]
                key = f"r2d K/T={fraction:g}"
                seconds[f"{key} unlearn"] = time.perf_counter() - start
                K, T = r2d_noise.epoch_steps(K_ep, E, S)
                record_with_controls(key, "r2d", r2d_noise.sigma(eps, delta, K, T, eta, L, G, 1, n), moved, retrained,
                                     {"learning": E * n, "unlearning": K_ep * (n - 1), "retraining": E * (n - 1)},
                                     rewind=K / T, K=K, T=T, sensitivity=r2d_noise.sensitivity(K, T, eta, L, G, 1, n))
                published[key] = {**result["methods"][key], "K_ep": K_ep}
            start = time.perf_counter()
            result["r2d_calibration"] = r2d_calibration.attribution(model_fn, store, x, labels, canary, sched, E,
                                                                    published, L, G, eps, delta)
            seconds["r2d calibration"] = time.perf_counter() - start
    for method in ("hf", "cns"):
        if method not in m["methods"]:
            continue
        start = time.perf_counter()
        try:
            r = (baselines.hf(model_fn, x, labels, canary, c["hf"], eps, delta, seed) if method == "hf" else
                 baselines.cns(model_fn, x, labels, canary, c["cns"], eps, delta, seed, L, G))
        except baselines.rb.Diverged as err:  # its own estimator failing is its result: a missing row, with why
            result["methods"][method] = {"method": method, "missing": f"{method.upper()} diverged: {err}"}
            log.warning("%s", result["methods"][method]["missing"])
            continue
        seconds[f"{method} learn, unlearn, retrain"] = time.perf_counter() - start
        extra = {k: v for k, v in r.items() if k not in ("unlearned", "retrained", "sigma", "grads")}
        record_with_controls(method, method, r["sigma"], r["unlearned"], r["retrained"], r["grads"], **extra)
    write_json(out, result)
    write_json(timing, {"seconds": seconds, "threads": torch.get_num_threads(), "device": str(device)})
