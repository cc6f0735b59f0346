"""CDFL's convex stand-in (spec note 3, issue 12): DU where its certificate's assumptions hold.

A STAND-IN, not a paper table: the paper's convex column is MNIST, which is not on disk offline; this runs
Fashion-MNIST (`cdfl.convex.dataset`) with the L2-regularised multinomial logistic regression of eq. 4.

Per lambda of `cdfl.convex.lambdas`:
1. `cdfl.convex.train_per_client` samples per client for `cdfl.clients` clients (IID, seeded), images average-
   pooled to `cdfl.convex.image_side` (28: none; 14 at quick scale: 2x2, note 6), float64, on the CPU;
2. the exact minimisers of eq. 1, x* on all the data and x'* on the retained data (round(sample_fraction n_c) of
   every client deleted): full-batch L-BFGS, then Newton polish (train/exact.py), gradient norms recorded;
3. noiseless DU at consensus (every client at x*, complete graph): Algorithm 1 with the exact local Hessians
   (damping = lambda, the regulariser's Hessian), Algorithm 1 with the diagonal Fisher (eq. 7, same damping), and
   the centralised Newton step of Lemma 3 (the retained data's global Hessian);
4. for each, ||DU - x'*|| / ||x* - x'*|| and the test accuracy (full test set), beside those of x* and x'*.

Gates (note 3's replacement acceptance): Algorithm 1 (exact Hessian) <= 0.4 at lambda 1e-2 and <= 0.2 at 0.1, the
centralised step <= 0.02 at 1e-2; the Fisher variant is reported, not gated.

5. the paper's training regime (note 3's second half, `paper_regime`): the same problem trained as the cells train
   (model-mixing D-PSGD on the Ring, cdfl.train's optimizer, lr, batch, K rounds and L2 = lambda, from zero), then
   noiseless DU at the round-K models (Algorithm 1, exact local Hessians and the diagonal Fisher, damping = lambda,
   flooded on the Ring) and RT (K rounds on the retained data from zero, its final models): ||DU - RT|| /
   ||orig - RT|| of the averaged models before and after one fine-tuning round, the accuracies, and how far the
   original sits from its minimiser x* (why the Newton step does not land on RT). Reported, not gated.

The results file is deterministic; wall times go to the timing file.
"""

from __future__ import annotations

import logging
import math
import time

import networkx as nx
import torch
import torch.nn.functional as F

from ...data.forget import forget_masks
from ...data.partition import partition
from ...data.sources import DATASETS
from ...files import load_metadata, load_tensors, write_json
from ...methods import du
from ...models import LogisticRegression
from ...resolved import config_record
from ...seeding import derive_seed
from ...topology import graph_for_round
from ...train.dsgd import ClientData, Schedule, train
from ...train.exact import minimiser
from ...train.flat import FlatSpec
from .steps import config

log = logging.getLogger("unlearning")

TITLE = "Convex stand-in: Fashion-MNIST, multinomial logistic regression (not a paper table)"
METHODS = {"alg1_hessian": "Algorithm 1, exact local Hessians", "alg1_fisher": "Algorithm 1, diagonal Fisher",
           "central_newton": "centralised Newton step (global retained Hessian)"}
LBFGS_ITER, LBFGS_TOL = 150, 1e-9  # then Newton, its Hessian reused while the steps converge (measured fastest)
GATES = {("alg1_hessian", 1e-2): 0.4, ("alg1_hessian", 0.1): 0.2, ("central_newton", 1e-2): 0.02}


def gate(method: str, lam: float) -> float | None:
    """The note-3 gate on ||DU - x'*|| / ||x* - x'*|| for (method, lambda), None where only reported."""
    return next((g for (m, at), g in GATES.items() if m == method and math.isclose(at, lam, rel_tol=1e-9)), None)


def experiment_name(dataset: str) -> str:
    return f"cdfl_convex_{dataset}"


def pool(x: torch.Tensor, side: int) -> torch.Tensor:
    """[n, C, H, W] images average-pooled to side x side, flattened, float64."""
    native = x.shape[-1]
    if native % side or x.shape[-2] != native:
        raise ValueError(f"cdfl.convex.image_side: {side} does not divide the {native}x{native} images; valid: a "
                         f"divisor of {native}")
    if side != native:
        x = F.avg_pool2d(x.float(), native // side)
    return x.flatten(1).double()


def load_problem(params: dict, dataset: str, features: str) -> tuple[ClientData, list[torch.Tensor], torch.Tensor,
                                                                      torch.Tensor, int]:
    """(the clients' data, float64 pooled; forget masks; test images; test labels; classes)."""
    cfg = config(params)
    cv = cfg["convex"]
    classes, shape, _ = DATASETS[dataset].info
    meta_shape = tuple(load_metadata(features)["shape"])
    if meta_shape != shape:
        raise ValueError(f"{features}: images of shape {meta_shape}, expected {shape} for {dataset}")
    feats = load_tensors(features)
    base = derive_seed(params["seed"], experiment_name(dataset))
    chosen = partition(feats["y_train"], cfg["clients"], "iid", base, per_client=cv["train_per_client"])
    rows = torch.cat(chosen)
    x, y = pool(feats["x_train"][rows], cv["image_side"]), feats["y_train"][rows]
    sizes = [len(i) for i in chosen]
    indices = list(torch.arange(len(rows)).split(sizes))
    forget = forget_masks("fraction", indices, y, derive_seed(base, "forget"),
                          fraction=cfg["unlearn"]["sample_fraction"])
    data = ClientData(x, y, indices, [torch.ones(n, dtype=torch.bool) for n in sizes])
    return data, forget, pool(feats["x_test"], cv["image_side"]), feats["y_test"], classes


def consensus(theta: torch.Tensor, method: str) -> torch.Tensor:
    """The common model of a complete graph after DU (every client applies every message once)."""
    spread = float((theta - theta[0]).abs().max())
    if spread > 1e-10:
        raise RuntimeError(f"convex stand-in: {method} left consensus (max spread {spread:.3g})")
    return theta[0]


def accuracy_of(model, spec: FlatSpec, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        pred = torch.func.functional_call(model, spec.unflatten(w), (x,)).argmax(1)
    return 100 * float((pred == y).double().mean())


def one_lambda(model, spec: FlatSpec, data: ClientData, forget: list[torch.Tensor], classes: int, lam: float,
               x_test: torch.Tensor, y_test: torch.Tensor, times: dict) -> dict:
    """Both minimisers and the three DU variants at one lambda; see the module docstring. The exact local Hessians
    over R_c at x* are computed once: Algorithm 1 applies them per requester, the centralised step uses their mean
    (du.global_newton's H', checked equal in the tests), and x'* is polished from the centralised step with that
    mean as a fixed Hessian (refreshed if the chord stalls)."""
    clock = time.perf_counter()
    full = minimiser(model, spec, data, data.keep, lam, classes, lbfgs_iter=LBFGS_ITER, lbfgs_tol=LBFGS_TOL,
                     reuse_hessian=True)
    times["original_s"] = time.perf_counter() - clock
    n = len(data.indices)
    theta, graph, clients = full.w.expand(n, -1).clone(), nx.complete_graph(n), list(range(n))
    models, clock = {}, time.perf_counter()
    cfg = du.DUConfig(curvature="hessian_exact", damping=lam, l2=lam, noise="none")
    terms = du.all_request_terms(model, spec, theta, data, forget, clients, cfg, classes)
    if len(terms) != n:
        raise RuntimeError(f"convex stand-in: only {len(terms)} of {n} clients delete samples; valid: a "
                           "cdfl.unlearn.sample_fraction that deletes at least one sample per client")
    times["local_hessians_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    res = du.apply_terms(theta, terms, graph, clients, cfg)
    models["alg1_hessian"] = consensus(res.theta, "alg1_hessian")
    times["alg1_hessian_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    fisher = du.DUConfig(curvature="fisher_diag", damping=lam, l2=lam, noise="none")
    res = du.sample_wise(model, spec, theta, data, forget, graph, clients, fisher, classes=classes)
    models["alg1_fisher"] = consensus(res.theta, "alg1_fisher")
    times["alg1_fisher_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    h_retained = sum(t.curv for t in terms.values()) / n
    shift = sum(t.grad / t.denom for t in terms.values()) / n
    models["central_newton"] = full.w + du.solve(h_retained, lam, shift)
    times["central_newton_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    retained = minimiser(model, spec, data, [~f for f in forget], lam, classes, lbfgs_iter=0,
                         start=models["central_newton"], hessian=h_retained)
    times["retrained_s"] = time.perf_counter() - clock
    gap = float((full.w - retained.w).norm())

    def point(m) -> dict:
        return {"grad_norm": m.grad_norm, "lbfgs_grad_norm": m.lbfgs_grad_norm, "newton_steps": m.newton_steps,
                "test_accuracy": accuracy_of(model, spec, m.w, x_test, y_test)}

    methods = {}
    for method, w in models.items():
        dist = float((w - retained.w).norm())
        methods[method] = {"ratio": dist / gap if gap > 0 else None, "distance_to_retrained": dist,
                           "test_accuracy": accuracy_of(model, spec, w, x_test, y_test),
                           "gate": gate(method, lam)}
    return {"lambda": lam, "original": point(full), "retrained": point(retained), "distance": gap,
            "methods": methods}, full.w


def paper_regime(params: dict, dataset: str, model, spec: FlatSpec, data: ClientData, forget: list[torch.Tensor],
                 classes: int, x_test: torch.Tensor, y_test: torch.Tensor, x_star: torch.Tensor | None,
                 times: dict) -> dict:
    """Step 5 of the module docstring: DU against RT where the models are trained the paper's way, not minimised.
    `x_star`: the exact minimiser at lambda = cdfl.train.l2 (None when that lambda is not swept)."""
    cfg = config(params)
    t = cfg["train"]
    lam, rounds, n = float(t["l2"]), int(t["rounds"]), len(data.indices)
    clients = list(range(n))
    seed = derive_seed(params["seed"], experiment_name(dataset), "paper-regime")
    sched = Schedule("model", t["lr"], t["batch_size"], t["local_epochs"], None, "ring", 0.0, seed, n,
                     experiment=f"{experiment_name(dataset)} paper regime", optimizer=t["optimizer"], l2=lam)
    graph = graph_for_round("ring", n, 0.0, seed, rounds - 1)
    theta0 = torch.zeros(n, spec.dim, dtype=torch.float64)
    retained = data.retained(forget)
    clock = time.perf_counter()
    orig, log_orig = train(model, spec, theta0, data, clients, sched, range(rounds), "vmap")
    rt, _ = train(model, spec, theta0, retained, clients, sched, range(rounds), "vmap")
    times["regime_training_s"] = time.perf_counter() - clock
    rt_avg, orig_avg = rt.mean(0), orig.mean(0)
    base = float((orig_avg - rt_avg).norm())

    def at(w: torch.Tensor) -> dict:
        dist = float((w - rt_avg).norm())
        return {"test_accuracy": accuracy_of(model, spec, w, x_test, y_test), "distance_to_rt": dist,
                "ratio": dist / base if base > 0 else None}

    methods = {}
    for name, curvature in (("alg1_hessian", "hessian_exact"), ("alg1_fisher", "fisher_diag")):
        clock = time.perf_counter()
        res = du.sample_wise(model, spec, orig, data, forget, graph, clients,
                             du.DUConfig(curvature=curvature, damping=lam, l2=lam, noise="none"), classes=classes)
        times[f"regime_{name}_s"] = time.perf_counter() - clock
        tuned, _ = train(model, spec, res.theta, retained, clients, sched, range(rounds, rounds + 1), "vmap",
                         opt_state=log_orig.opt_state)  # Remark 1's fine-tuning round; the clients keep their state
        methods[name] = {"before_finetune": at(res.theta.mean(0)), "after_finetune": at(tuned.mean(0))}
    return {"lambda": lam, "rounds": rounds, "optimizer": t["optimizer"], "lr": t["lr"],
            "batch_size": t["batch_size"], "topology": "ring", "start": "zero",
            "original": {**at(orig_avg), "distance_to_minimiser": None if x_star is None
                         else float((orig_avg - x_star).norm())},
            "rt": {"test_accuracy": accuracy_of(model, spec, rt_avg, x_test, y_test)}, "methods": methods}


def step_convex(params: dict, dataset: str, features: str, out: str, timing: str | None = None) -> None:
    """The convex stand-in for every lambda of cdfl.convex.lambdas; writes `out` (and the wall times to `timing`)."""
    start = time.perf_counter()
    cfg = config(params)
    cv = cfg["convex"]
    data, forget, x_test, y_test, classes = load_problem(params, dataset, features)
    model = LogisticRegression(data.x.shape[1], classes).double()
    spec = FlatSpec.of(model)
    load_s = time.perf_counter() - start
    result = {"experiment": experiment_name(dataset), "title": TITLE, "dataset": dataset, "scale": params["scale"],
              "stand_in": True, "image_side": cv["image_side"], "dim": spec.dim, "clients": len(data.indices),
              "client_sizes": [len(i) for i in data.indices], "deleted": [int(f.sum()) for f in forget],
              "test_images": len(y_test), "graph": "complete", "noise": "none", "lambdas": []}
    times = {"experiment": experiment_name(dataset), "load_s": load_s, "lambdas": []}
    x_star = None
    for lam in cv["lambdas"]:
        lam_times: dict = {"lambda": lam}
        row, w = one_lambda(model, spec, data, forget, classes, float(lam), x_test, y_test, lam_times)
        if math.isclose(float(lam), float(cfg["train"]["l2"]), rel_tol=1e-9):
            x_star = w
        result["lambdas"].append(row)
        times["lambdas"].append(lam_times)
        m = row["methods"]
        log.info("%s lambda %g: ||x* - x'*|| %.4g (grad norms %.2g / %.2g); ratios Algorithm 1 %.4f, Fisher %.4f, "
                 "centralised %.5f; test accuracy x* %.2f, x'* %.2f, Algorithm 1 %.2f (%.1f s)",
                 dataset, lam, row["distance"], row["original"]["grad_norm"], row["retrained"]["grad_norm"],
                 m["alg1_hessian"]["ratio"], m["alg1_fisher"]["ratio"], m["central_newton"]["ratio"],
                 row["original"]["test_accuracy"], row["retrained"]["test_accuracy"],
                 m["alg1_hessian"]["test_accuracy"], sum(v for k, v in lam_times.items() if k.endswith("_s")))
    result["paper_regime"] = paper_regime(params, dataset, model, spec, data, forget, classes, x_test, y_test, x_star,
                                          times)
    r = result["paper_regime"]
    before, after = (r["methods"]["alg1_hessian"][w] for w in ("before_finetune", "after_finetune"))
    log.info("%s paper regime (%s, lr %g, K %d, lambda %g): ||DU - RT|| / ||orig - RT|| %.3g before fine-tuning, "
             "%.3g after; test accuracy orig %.2f, DU %.2f / %.2f, RT %.2f; ||orig - x*|| %s", dataset,
             r["optimizer"], r["lr"], r["rounds"], r["lambda"], before["ratio"], after["ratio"],
             r["original"]["test_accuracy"], before["test_accuracy"], after["test_accuracy"], r["rt"]["test_accuracy"],
             r["original"]["distance_to_minimiser"])
    result["config"] = config_record(params)
    times["wall_time_s"] = time.perf_counter() - start
    write_json(out, result)
    if timing:
        write_json(timing, times)
