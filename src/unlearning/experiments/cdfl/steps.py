"""The CDFL experiment's step (Wu et al. 2026, Sec. VI, Tables I-IV): one cell = (dataset, partition, topology, seed).

In one cell, on a fixed graph (Ring, or Erdos-Renyi resampled until connected; Metropolis-Hastings weights):
1. the original models: K rounds of model-mixing D-PSGD (x <- W x - lr g, one local epoch per round) from one
   initialisation shared by every client, on all the data;
2. for each granularity (sample: a random `sample_fraction` of every client's data; class: every client's samples
   of `unlearn.class`), with the same forget set for both methods:
   - DU: Algorithm 1 at the round-K models (methods/du.py: Fisher or Hessian, the noise, flooding, 1/N), then
     `finetune_rounds` rounds of D-PSGD on the retained data (Remark 1), from a fresh local optimizer state
     (`finetune_optimizer: carried` keeps the training's, whose moments saw the deleted data: not covered by
     Theorem 1);
   - no correction: the same fine-tuning rounds from the round-K models, to show what the correction itself does;
   - RT: retraining from the same initialisation, seed and graph without the removed data for K rounds; its test
     accuracy is the best over the K rounds, its model the one of that round (Sec. VI-A, "best test accuracy");
     its time over all K rounds and until stable (the first round within 1 point of its best, spec A21);
3. metrics of the averaged model: test accuracy, test accuracy on the removed class (class 0), accuracy on the
   forget set; the classifier MIA (evaluate/attacks/classifier.py) of the original model, of DU after
   fine-tuning and of RT at its best round; DU's and RT's wall time measured the same way (training and
   unlearning computation, evaluation excluded); DU's messages and floats sent;
4. the damping and noise sweeps of DU before fine-tuning (spec 3.4, 3.5), from the same curvature and gradients;
5. client-wise removal (when `client` is in cdfl.unlearn.granularities; `client_cell`): one client (cdfl.unlearn.client,
   or a seeded random one) leaves; the graph loses its node and is repaired (spec 5.2, topology.repair_after_removal,
   through the engine's `Schedule.repaired_without`); for each weight of cdfl.unlearn.client_weights, DU eq. 5-6 at
   the round-K models (the remaining clients' curvature) then fine-tuning on the N-1 clients; RT: K rounds from the
   initialisation on the N-1 clients and the repaired graph; the removed client's samples are the forget set.

The results file is deterministic; wall times go to the timing file (they vary from run to run).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace

import torch

from ...config import section_config
from ...data.forget import forget_masks
from ...data.partition import partition
from ...data.sources import DATASETS
from ...evaluate.attacks.classifier import ClassifierAttack, balanced_eval_sets, draw
from ...evaluate.attacks.shadow import softmax, stratified_halves
from ...evaluate.metrics import accuracy, per_sample_loss_and_pred
from ...experiment import ForgetRequest, Setup, pick_device
from ...files import load_metadata, load_tensors, write_json
from ...methods import du
from ...models import build_model
from ...resolved import config_record
from ...seeding import derive_seed, deterministic_algorithms, generator
from ...topology import graph_for_round, repair_after_removal
from ...train.dsgd import ClientData, Diverged, Schedule, resolve_strategy, train
from ...train.flat import FlatSpec
from . import damping_for, pdudt_baseline

log = logging.getLogger("unlearning")

GRANULARITIES = ("sample", "class")  # client-wise removal: its own block (`client_cell`), results["client"]
SECTION = "cdfl"


def config(params: dict) -> dict:
    """The cdfl section with its scale override merged in."""
    return section_config(params, SECTION)


def cell_name(dataset: str, part: str, topology: str, seed: int) -> str:
    return f"cdfl_{dataset}_{part}_{topology}_s{seed}"


def cell_config(cfg: dict, dataset: str, part: str, topology: str) -> dict:
    """The engine's view of one cell (what Schedule.from_config and the data steps read)."""
    train_cfg = {**cfg["train"], "mixing": "model", "local_steps": None}
    return {"dataset": dataset, "model": cfg["models"][dataset], "mlp_hidden": 128, "clients": cfg["clients"],
            "partition": {"kind": part, **{k: cfg["partition"][k] for k in ("alpha", "min_size", "train_per_client")}},
            "topology": {"kind": topology, "p_edge": cfg["topology"]["p_edge"]}, "train": train_cfg}


def check_cell(cfg: dict, dataset: str, part: str, topology: str, seed: int) -> None:
    """One line naming the key when a cell is not in the grid of params.yaml."""
    for key, value, valid in (("datasets", dataset, cfg["datasets"]), ("partition.kinds", part,
                              cfg["partition"]["kinds"]), ("topology.kinds", topology, cfg["topology"]["kinds"]),
                              ("seeds", seed, cfg["seeds"])):
        if value not in valid:
            raise KeyError(f"cdfl.{key}: {value!r} is not in it; valid: {', '.join(map(str, valid))}")


def served_by(features: str, dataset: str) -> str:
    """The dataset whose features served column `dataset`: "mnist_5k" where the 5,000-digit subset stands for MNIST
    (data/availability.py column_source), else the column's own."""
    return load_metadata(features).get("dataset", dataset)


def make_setup(params: dict, dataset: str, part: str, topology: str, seed: int, features: str,
               grid: bool = True) -> Setup:
    """Data on the device, the model and its initialisation, the partition (with Dirichlet min_size) and the test
    images of one cell; every generator derives from (global seed, cell name). grid=False: the (partition,
    topology) need not be in the tables' grid (Figure 1's fixed IID-ER setting); the dataset still must."""
    cfg = config(params)
    if grid:
        check_cell(cfg, dataset, part, topology, seed)
    else:
        check_cell(cfg, dataset, cfg["partition"]["kinds"][0], cfg["topology"]["kinds"][0], seed)
    cell = cell_config(cfg, dataset, part, topology)
    name = cell_name(dataset, part, topology, seed)
    device = pick_device(params["device"])
    deterministic_algorithms()
    classes, shape, _ = DATASETS[dataset].info
    meta_shape = tuple(load_metadata(features)["shape"])
    if meta_shape != shape:
        raise ValueError(f"{features}: images of shape {meta_shape}, expected {shape} for {dataset}")
    feats = load_tensors(features)
    base = derive_seed(params["seed"], name)
    p = cell["partition"]
    indices = partition(feats["y_train"], cell["clients"], part, base, p["alpha"], p["train_per_client"],
                        min_size=p["min_size"] if part == "dirichlet" else 0)
    x_test, y_test = feats["x_test"], feats["y_test"]
    if cfg["eval"]["test_images"] is not None:
        keep = draw(len(y_test), cfg["eval"]["test_images"], base, "test-images").sort().values
        x_test, y_test = x_test[keep], y_test[keep]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(params["seed"], name, "init"))
        model = build_model(cell["model"], shape, classes, cell["mlp_hidden"])
    model = model.to(device)
    spec = FlatSpec.of(model)
    data = ClientData(feats["x_train"].to(device), feats["y_train"].to(device), indices,
                      [torch.ones(len(i), dtype=torch.bool) for i in indices])
    request = ForgetRequest("none", [torch.zeros(len(i), dtype=torch.bool) for i in indices], ())
    strategy = resolve_strategy(params["engine"]["strategy"], cell["model"], device)
    return Setup(name, params, cell, device, model, spec, spec.flatten(model), data, request, x_test.to(device),
                 y_test.to(device), classes, strategy)


def request_masks(setup: Setup, granularity: str) -> list[torch.Tensor]:
    """Per client, True = forget: a random fraction of every client's data (sample) or its class-c samples."""
    unlearn = config(setup.params)["unlearn"]
    labels = setup.data.y.cpu()
    seed = derive_seed(setup.seed, setup.name, granularity)
    if granularity == "sample":
        if unlearn["samples_per_request"] is not None:
            out = []
            for c, idx in enumerate(setup.data.indices):
                order = torch.randperm(len(idx), generator=generator(seed, "forget", c))
                chosen = order[:unlearn["samples_per_request"]]
                mask = torch.zeros(len(idx), dtype=torch.bool)
                mask[chosen] = True
                out.append(mask)
            return out
        return forget_masks("fraction", setup.data.indices, labels, seed, fraction=unlearn["sample_fraction"])
    if granularity == "class":
        return forget_masks("class", setup.data.indices, labels, seed, cls=unlearn["class"])
    raise ValueError(f"granularity {granularity!r}: valid: {', '.join(GRANULARITIES)} (client-wise: client_cell)")


# ----------------------------------------------------------------------------------------------- metrics

def model_metrics(setup: Setup, flat: torch.Tensor, forget_idx: torch.Tensor) -> dict:
    """Test accuracy (%) of one (averaged) model, on the removed class's test images and on the forget set."""
    cls = config(setup.params)["unlearn"]["class"]
    y = setup.y_test.cpu()
    _, pred = per_sample_loss_and_pred(setup, flat, setup.x_test, setup.y_test)
    out = {"test_accuracy": _pct_of(accuracy(pred, y)), "forget_accuracy": None,
           "class_accuracy": _pct_of(accuracy(pred[y == cls], y[y == cls]))}
    if len(forget_idx):
        rows = forget_idx.to(setup.data.x.device)
        _, fpred = per_sample_loss_and_pred(setup, flat, setup.data.x[rows], setup.data.y[rows])
        out["forget_accuracy"] = _pct_of(accuracy(fpred, setup.data.y[rows].cpu()))
    return out


def _pct_of(value: float | None) -> float | None:
    return None if value is None else 100 * value


def training_loss(setup: Setup, flat: torch.Tensor, rows: torch.Tensor, l2: float) -> float | None:
    """The regularised training loss of eq. 4 over the samples `rows`: mean cross-entropy + (l2/2) ||x||^2
    (None when it is not finite)."""
    rows = rows.to(setup.data.x.device)
    losses, _ = per_sample_loss_and_pred(setup, flat, setup.data.x[rows], setup.data.y[rows])
    value = float(losses.mean()) + 0.5 * l2 * float(flat.norm()) ** 2
    return value if math.isfinite(value) else None


def sweeps(setup: Setup, theta: torch.Tensor, terms: dict, graph, clients: list[int], du_cfg: du.DUConfig,
           grid: dict, retained_idx: torch.Tensor, forget_idx: torch.Tensor, rt_flat: torch.Tensor) -> dict:
    """DU before fine-tuning at every damping of cdfl.sweeps.dampings (the configured noise) and at every sigma
    of cdfl.sweeps.sigmas (the configured damping; 0 = noiseless), from one set of requester terms (spec 3.4,
    3.5): the retained data's training loss (eq. 4; the damping is chosen by it, never by test accuracy), test,
    class and forget-set accuracy, the mean correction norm and the averaged model's distance to RT's."""

    def point(cfg: du.DUConfig) -> dict:
        res = du.apply_terms(theta, terms, graph, clients, cfg)
        avg = res.theta.mean(0)
        norm = float(torch.stack(list(res.corrections.values())).norm(dim=1).mean()) if res.corrections else 0.0
        dist = float((avg - rt_flat).norm())
        return {"retained_loss": training_loss(setup, avg, retained_idx, cfg.l2),
                **model_metrics(setup, avg, forget_idx), "correction_norm": norm,
                "distance_to_rt": dist if math.isfinite(dist) else None}

    return {"damping": [{"damping": d, **point(replace(du_cfg, damping=d))} for d in grid["dampings"]],
            "sigma": [{"sigma": s, **point(replace(du_cfg, noise="fixed" if s else "none", sigma=s))}
                      for s in grid["sigmas"]]}


def mia(setup: Setup, flat: torch.Tensor, retained_idx: torch.Tensor, forget_idx: torch.Tensor,
        halves: tuple[torch.Tensor, torch.Tensor], granularity: str, fit_size: int, who: str) -> dict:
    """The classifier attack on one target model: fitted on min(fit_size, |A|, |retained|) retained training samples
    (members) against as many of test half A; evaluated on s forget samples against s of half B (class-wise:
    only B's samples of the removed class), s = min(|U|, |B|)."""
    half_a, half_b = halves
    seed = derive_seed(setup.seed, setup.name, "mia", granularity, who)
    n_fit = min(fit_size, len(half_a), len(retained_idx))
    members = retained_idx[draw(len(retained_idx), n_fit, seed, "fit-members")]
    others = half_a[draw(len(half_a), n_fit, seed, "fit-nonmembers")]
    x, y, xt, yt = setup.data.x, setup.data.y, setup.x_test, setup.y_test
    dev = x.device
    pool = half_b
    if granularity == "class":
        pool = half_b[(yt.cpu()[half_b] == config(setup.params)["unlearn"]["class"])]
    ev_members, ev_others = balanced_eval_sets(forget_idx, pool, seed)
    probs = {k: softmax(setup, flat, data[rows.to(dev)]) for k, data, rows in
             (("fit_in", x, members), ("fit_out", xt, others), ("in", x, ev_members), ("out", xt, ev_others))}
    if not all(bool(torch.isfinite(p).all()) for p in probs.values()):
        return {"accuracy": None, "correct": 0, "samples": 2 * len(ev_members), "ci_low": None, "ci_high": None,
                "gated": False, "fit_samples": 2 * n_fit, "reason": "the model's outputs are not finite"}
    attack = ClassifierAttack(seed).fit({"member_probs": probs["fit_in"], "member_labels": y[members.to(dev)].cpu(),
                                         "nonmember_probs": probs["fit_out"],
                                         "nonmember_labels": yt[others.to(dev)].cpu()})
    scores_in = attack.member_scores(probs["in"], y[ev_members.to(dev)].cpu())
    scores_out = attack.member_scores(probs["out"], yt[ev_others.to(dev)].cpu())
    return {**attack.metrics(scores_in, scores_out), "fit_samples": 2 * n_fit}


# ----------------------------------------------------------------------------------------------- training

def run_rounds(setup: Setup, theta: torch.Tensor, data: ClientData, clients: list[int], sched: Schedule,
               rounds: range, forget_idx: torch.Tensor, state: dict,
               history=None) -> tuple[torch.Tensor, list[dict], torch.Tensor, float, int]:
    """`rounds` of D-PSGD one at a time, the averaged model's metrics after each; returns the final models, the
    curve, the averaged model of the best round (test accuracy), the training wall time (evaluation excluded)
    and the sample gradients. `state["opt"]` carries the clients' local optimizer state from round to round
    (None: a fresh optimizer; plain SGD without L2 has none) and holds the last one afterwards; `state["round_s"]`
    holds each round's training seconds. `history` (a history writer) records every round (train's docstring)."""
    curve, best, best_flat, seconds, grads = [], -1.0, theta.mean(0), 0.0, 0
    state["round_s"] = []
    for t in rounds:
        try:
            theta, tlog = train(setup.model, setup.spec, theta, data, clients, sched, range(t, t + 1),
                                setup.strategy, history=history, opt_state=state.get("opt"))
        except Diverged as err:
            err.curve = curve  # the rounds before the divergence, for a caller that reports it
            raise
        state["opt"] = tlog.opt_state
        state["round_s"].append(tlog.wall_time_s)
        seconds += tlog.wall_time_s
        grads += tlog.grad_evals
        point = {"round": t + 1, **model_metrics(setup, theta.mean(0), forget_idx)}
        curve.append(point)
        if point["test_accuracy"] > best:
            best, best_flat = point["test_accuracy"], theta.mean(0).clone()
    return theta, curve, best_flat, seconds, grads


@dataclass
class DUOutcome:
    terms: dict                      # every request's Newton term (du.all_request_terms), for the sweeps
    result: du.DUResult              # the corrected models, messages, sigmas (wall_time_s: the correction alone)
    tuned: torch.Tensor | None       # the models after fine-tuning; None where DU diverged
    curve: list[dict]                # the fine-tuning rounds' metrics (those before a divergence)
    finetune_s: float | None
    finetune_grads: int
    diverged: str | None             # the divergence's message, else None


def du_and_finetune(setup: Setup, theta: torch.Tensor, masks: list[torch.Tensor], clients: list[int], graph,
                    du_cfg: du.DUConfig, sched: Schedule, rounds: range, forget_idx: torch.Tensor,
                    state: dict) -> DUOutcome:
    """DU (Algorithm 1 at the models `theta`: every request's term, applied by every client), then the optional
    fine-tuning `rounds` on the retained data (Remark 1), the clients keeping their optimizer `state`. A
    divergence is the result, reported with the rounds before it, not a crash (no retuning per cell)."""
    start = time.perf_counter()
    terms = du.all_request_terms(setup.model, setup.spec, theta, setup.data, masks, clients, du_cfg, setup.classes)
    res = du.apply_terms(theta, terms, graph, clients, du_cfg)
    res.wall_time_s = du.elapsed(start, res.theta)
    return DUOutcome(terms, res, *finetune(setup, res.theta, setup.data.retained(masks), clients, sched, rounds,
                                          forget_idx, state, "DU's correction"))


def finetune(setup: Setup, corrected: torch.Tensor, data: ClientData, clients: list[int], sched: Schedule,
             rounds: range, forget_idx: torch.Tensor, state: dict, what: str
             ) -> tuple[torch.Tensor | None, list[dict], float | None, int, str | None]:
    """Fine-tuning rounds from `what`'s corrected models (Remark 1): (models, curve, seconds, gradients, None), or
    (None, the curve before the divergence, None, 0, message) where the correction or a round diverged."""
    try:
        if not bool(torch.isfinite(corrected).all()):
            raise Diverged(f"{setup.name}: {what} produced non-finite weights")
        tuned, curve, _, seconds, grads = run_rounds(setup, corrected, data, clients, sched, rounds, forget_idx,
                                                     state)
    except Diverged as err:
        return None, getattr(err, "curve", []), None, 0, str(err)
    return tuned, curve, seconds, grads, None


def finetune_state(setup: Setup, state: dict, rows: list[int] | None = None) -> dict:
    """The local optimizer state DU's fine-tuning starts from: fresh (cdfl.unlearn.finetune_optimizer: fresh, the
    default), or the training's `state` (carried; its moments saw the deleted data, which Theorem 1's
    post-processing does not cover), restricted to the clients of `rows` where some left."""
    if config(setup.params)["unlearn"]["finetune_optimizer"] != "carried" or state.get("opt") is None:
        return {}
    return {"opt": state["opt"] if rows is None else state["opt"].select(rows)}


def no_correction(setup: Setup, orig: torch.Tensor, data: ClientData, clients: list[int], sched: Schedule,
                  rounds: range, forget_idx: torch.Tensor, state: dict) -> dict:
    """The fine-tuning rounds DU runs, from the round-K models without any correction (spec note of 2026-11-26,
    4): what the fine-tuning alone does, so that DU's row shows what its correction adds."""
    tuned, curve, _, _, diverged = finetune(setup, orig, data, clients, sched, rounds, forget_idx, state,
                                            "the original (no correction)")
    return {"after_finetune": curve[-1] if curve and tuned is not None else None, "diverged": diverged}


def du_config(setup: Setup, sched: Schedule) -> tuple[du.DUConfig, dict]:
    """DU's settings from cdfl.unlearn; its l2 is the L2 strength the engine trains with (`sched.l2`, the
    regularised loss of eq. 4), so that DU's gradients are those of the training loss."""
    u = config(setup.params)["unlearn"]
    du_cfg = du.DUConfig(curvature=u["curvature"], damping=damping_for(u, setup.cfg["dataset"]), l2=float(sched.l2),
                         noise=u["noise"], epsilon=u["epsilon"], delta=u["delta"], c_eff=u["c_eff"],
                         certified_noise_fix=u["certified_noise_fix"], seed=derive_seed(setup.seed, setup.name, "du"))
    engine = {"optimizer": sched.optimizer, "l2_trained": float(sched.l2), "l2_du": du_cfg.l2}
    return du_cfg, engine


def step_cell(params: dict, dataset: str, part: str, topology: str, seed: int, features: str, out: str,
              timing: str) -> None:
    """One cell of Tables I-IV: the original, then DU and RT for each granularity; see the module docstring."""
    setup = make_setup(params, dataset, part, topology, seed, features)
    cfg = config(params)
    rounds, ft_rounds = cfg["train"]["rounds"], cfg["unlearn"]["finetune_rounds"]
    clients = list(range(cfg["clients"]))
    sched = Schedule.from_config(setup.cfg, derive_seed(setup.seed, setup.name))
    sched.experiment = setup.name
    du_cfg, engine = du_config(setup, sched)
    halves = stratified_halves(setup.y_test.cpu(), derive_seed(setup.seed, setup.name))
    theta0 = setup.theta0.expand(len(clients), -1).clone()
    start = time.perf_counter()
    orig_state: dict = {}
    graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, rounds - 1)  # fixed graph
    client_wise = "client" in cfg["unlearn"]["granularities"]
    orig, orig_curve, orig_s, orig_grads, pdudt = original_with_pdudt(setup, theta0, clients, sched, graph, du_cfg,
                                                                      orig_state, client_wise)
    log.info("%s: original %d rounds, test accuracy %.2f %% (%.1f s)", setup.name, rounds,
             orig_curve[-1]["test_accuracy"], orig_s)
    result = {"experiment": setup.name, "dataset": dataset, "data": served_by(features, dataset), "partition": part,
              "topology": topology, "seed": seed,
              "scale": params["scale"], "model": setup.cfg["model"], "dim": setup.spec.dim, "rounds": rounds,
              "finetune_rounds": ft_rounds, "engine": engine, "client_sizes": [len(i) for i in setup.data.indices],
              "test_images": len(setup.y_test),
              "class_test_images": int((setup.y_test == config(setup.params)["unlearn"]["class"]).sum()),
              "original": {"curve": orig_curve, **orig_curve[-1]},
              "granularities": {}, "config": config_record(params)}
    times = {"original_s": orig_s}
    for granularity in GRANULARITIES:
        masks = request_masks(setup, granularity)
        forget_idx = torch.cat([i[m] for i, m in zip(setup.data.indices, masks)])
        retained_idx = torch.cat([i[~m] for i, m in zip(setup.data.indices, masks)])
        retained = setup.data.retained(masks)
        # DU: Algorithm 1 at the round-K models, then fine-tuning on the retained data
        ft_range = range(rounds, rounds + ft_rounds)
        outcome = du_and_finetune(setup, orig, masks, clients, graph, du_cfg, sched, ft_range, forget_idx,
                                  finetune_state(setup, orig_state))
        res, terms, tuned, ft_curve = outcome.result, outcome.terms, outcome.tuned, outcome.curve
        ft_s = outcome.finetune_s
        corrected = model_metrics(setup, res.theta.mean(0), forget_idx)
        if outcome.diverged:
            log.warning("%s %s: DU diverged: %s", setup.name, granularity, outcome.diverged)
        # RT: retrain from theta^0 on the retained data, best round
        rt_state: dict = {}  # a fresh optimizer; holds RT's per-round seconds afterwards
        _, rt_curve, rt_best, rt_s, rt_grads = run_rounds(setup, theta0, retained, clients, sched, range(rounds),
                                                          forget_idx, rt_state)
        best_round = max(range(len(rt_curve)), key=lambda k: (rt_curve[k]["test_accuracy"], -k))
        rt_stable = pdudt_baseline.stable_round(rt_curve)  # 1-based: the first round within 1 point of the best
        fit = cfg["eval"]["mia_fit"]
        swept = sweeps(setup, orig, terms, graph, clients, du_cfg, cfg["sweeps"], retained_idx, forget_idx, rt_best)
        cell = {
            "forget_samples": len(forget_idx), "requesters": len(res.corrections),
            "du": {"after_correction": corrected,
                   "after_finetune": ft_curve[-1] if ft_curve and tuned is not None else None,
                   "finetune_curve": ft_curve, "diverged": outcome.diverged,
                   "grad_evals": res.grad_evals + outcome.finetune_grads,
                   "messages": res.flood.messages_sent if res.flood else 0,
                   "floats": res.flood.floats_sent if res.flood else 0,
                   "hops": res.flood.hops if res.flood else [], "sigma": {str(k): v for k, v in res.sigmas.items()},
                   "noise_std": {str(k): v for k, v in res.noise_std.items()}, "degenerate": res.degenerate,
                   "correction_norm": float(torch.stack(list(res.corrections.values())).norm(dim=1).mean())
                   if res.corrections else 0.0,
                   "distance_to_rt": None if tuned is None else float((tuned.mean(0) - rt_best).norm()),
                   "mia": None if tuned is None else mia(setup, tuned.mean(0), retained_idx, forget_idx, halves,
                                                         granularity, fit, "du")},
            "rt": {"best": rt_curve[best_round], "best_round": best_round + 1, "stable_round": rt_stable,
                   "curve": rt_curve, "grad_evals": rt_grads,
                   "mia": mia(setup, rt_best, retained_idx, forget_idx, halves, granularity, fit, "rt")},
            "no_correction": no_correction(setup, orig, retained, clients, sched, ft_range, forget_idx,
                                           finetune_state(setup, orig_state)),
            "sweeps": swept,
            "original": {"forget_accuracy": model_metrics(setup, orig.mean(0), forget_idx)["forget_accuracy"],
                         "retained_loss": training_loss(setup, orig.mean(0), retained_idx, du_cfg.l2),
                         "distance_to_rt": float((orig.mean(0) - rt_best).norm()),
                         "mia": mia(setup, orig.mean(0), retained_idx, forget_idx, halves, granularity, fit,
                                    "original")},
        }
        result["granularities"][granularity] = cell
        times[granularity] = {"du_correction_s": res.wall_time_s, "du_finetune_s": ft_s,
                              "du_s": None if ft_s is None else res.wall_time_s + ft_s, "rt_s": rt_s,
                              "rt_stable_s": sum(rt_state["round_s"][:rt_stable]), "rt_stable_round": rt_stable}
        after = cell["du"]["after_finetune"] or {}
        log.info("%s %s: DU %s %% after correction, %s %% after fine-tuning; RT best %.2f %% (round %d); "
                 "class-%d accuracy DU %s / RT %.1f; MIA orig %s DU %s RT %s; DU %s s vs RT %.2f s",
                 setup.name, granularity, _num(corrected["test_accuracy"]), _num(after.get("test_accuracy")),
                 rt_curve[best_round]["test_accuracy"], best_round + 1, cfg["unlearn"]["class"],
                 _num(after.get("class_accuracy")), rt_curve[best_round]["class_accuracy"],
                 _pct(cell["original"]["mia"]), _pct(cell["du"]["mia"]), _pct(cell["rt"]["mia"]),
                 _num(times[granularity]["du_s"]), rt_s)
    if client_wise:
        result["client"], times["client"] = client_cell(setup, orig, orig_state, theta0, sched, du_cfg, graph, halves,
                                                        pdudt)
    write_json(out, result)
    write_json(timing, {"experiment": setup.name, "wall_time_s": time.perf_counter() - start, **times,
                        "original_grad_evals": orig_grads, "device": str(setup.device), "strategy": setup.strategy})


def original_with_pdudt(setup: Setup, theta0: torch.Tensor, clients: list[int], sched: Schedule, graph,
                        du_cfg: du.DUConfig, state: dict, client_wise: bool):
    """The original's K rounds from theta0 (run_rounds on all the data); with client-wise removal, recording the
    gradient history PDUDT replays (experiments/cdfl/pdudt_baseline.py) and computing PDUDT's unlearned models
    from it (its noise: DU's client-wise sigma). Returns the models, curve, training seconds, sample gradients
    and PDUDT's (models, cost), or None."""
    rounds = config(setup.params)["train"]["rounds"]
    none = torch.cat(setup.data.indices)[:0]
    if not client_wise:
        orig, curve, _, seconds, grads = run_rounds(setup, theta0, setup.data, clients, sched, range(rounds), none,
                                                    state)
        return orig, curve, seconds, grads, None
    target = pick_client(setup)
    with pdudt_baseline.recorded_history(rounds, clients, setup.spec.dim, target, graph,
                                         setup.params["engine"]["history_dtype"]) as (directory, writer):
        orig, curve, _, seconds, grads = run_rounds(setup, theta0, setup.data, clients, sched, range(rounds), none,
                                                    state, history=writer)
        writer.close()
        n_target = len(setup.data.indices[target])
        sigma = du_cfg.sigma_for(n_target, n_target, len(clients), client_wise=True)
        pdudt = pdudt_baseline.correct(orig, directory, clients, target, sched.lr, sigma,
                                       derive_seed(setup.seed, setup.name, "pdudt"), setup.name)
    return orig, curve, seconds, grads, pdudt


def pick_client(setup: Setup) -> int:
    """The removed client: cdfl.unlearn.client, or (null) one drawn from derive_seed(seed, cell, "client")."""
    cfg = config(setup.params)
    n, chosen = cfg["clients"], cfg["unlearn"]["client"]
    if chosen is None:
        return derive_seed(setup.seed, setup.name, "client") % n
    if not 0 <= int(chosen) < n:
        raise ValueError(f"cdfl.unlearn.client = {chosen!r}: not a client; valid: null or 0 .. {n - 1}")
    return int(chosen)


def client_cell(setup: Setup, orig: torch.Tensor, orig_state: dict, theta0: torch.Tensor, sched: Schedule,
                du_cfg: du.DUConfig, graph, halves: tuple[torch.Tensor, torch.Tensor],
                pdudt: tuple[torch.Tensor, dict] | None = None) -> tuple[dict, dict]:
    """Client-wise removal (Sec. IV-C, eq. 5-6; spec 3.3, A10, A13): DU per weight of cdfl.unlearn.client_weights
    (newton: w = 1, literal: w = 1/N; the same message, so newton's applied update is N times literal's), then
    fine-tuning on the N-1 remaining clients; RT from theta^0 on them (best round). Both train on the graph
    without the removed node, repaired (spec 5.2) by the engine (`Schedule.repaired_without`). `pdudt`: PDUDT's
    unlearned models and cost (original_with_pdudt), followed by its subsequent rounds on the N-1 clients
    (pdudt_rounds). Returns the results block and its wall times."""
    cfg = config(setup.params)
    rounds, ft_rounds, fit = cfg["train"]["rounds"], cfg["unlearn"]["finetune_rounds"], cfg["eval"]["mia_fit"]
    clients = list(range(cfg["clients"]))
    target = pick_client(setup)
    remaining = [c for c in clients if c != target]
    after = replace(sched, repaired_without=(target,))
    repaired = repair_after_removal(graph, target, sched.topology)
    forget_idx = setup.data.indices[target]
    retained_idx = torch.cat([setup.data.indices[c] for c in remaining])
    rows = [clients.index(c) for c in remaining]
    opt = orig_state.get("opt")
    # RT: retrain from theta^0 on the N-1 remaining clients, on the repaired graph, best round
    rt_state: dict = {}  # a fresh optimizer; holds RT's per-round seconds afterwards
    _, rt_curve, rt_best, rt_s, rt_grads = run_rounds(setup, theta0[rows], setup.data, remaining, after,
                                                      range(rounds), forget_idx, rt_state)
    best_round = max(range(len(rt_curve)), key=lambda k: (rt_curve[k]["test_accuracy"], -k))
    rt_stable = pdudt_baseline.stable_round(rt_curve)
    weights, times = {}, {}
    terms = du.client_terms(setup.model, setup.spec, orig, setup.data, target, clients, du_cfg, setup.classes)
    for weight in cfg["unlearn"]["client_weights"]:
        wcfg = replace(du_cfg, client_weight=weight)
        res = du.client_wise(setup.model, setup.spec, orig, setup.data, target, graph, clients, wcfg,
                             classes=setup.classes, terms=terms)
        corrected = model_metrics(setup, res.theta.mean(0), forget_idx)
        tuned, ft_curve, ft_s, ft_grads, diverged = finetune(
            setup, res.theta, setup.data, remaining, after, range(rounds, rounds + ft_rounds), forget_idx,
            finetune_state(setup, orig_state, rows), f"DU's client-wise correction ({weight})")
        if diverged:  # reported as the cell's result (no retuning per cell), not a crash
            log.warning("%s client (%s): DU diverged: %s", setup.name, weight, diverged)
        applied = (res.theta - orig[rows]).norm(dim=1)
        weights[weight] = {
            "weight": 1.0 / len(clients) if weight == "literal" else 1.0,
            "after_correction": corrected,
            "after_finetune": ft_curve[-1] if ft_curve and tuned is not None else None,
            "finetune_curve": ft_curve, "diverged": diverged, "grad_evals": res.grad_evals + ft_grads,
            "messages": res.flood.messages_sent, "floats": res.flood.floats_sent, "hops": res.flood.hops,
            "sigma": res.sigmas[target], "noise_std": res.noise_std[target],
            "correction_norm": float(res.corrections[target].norm()),
            "applied_norm": float(applied.mean()) if bool(torch.isfinite(applied).all()) else None,
            "distance_to_rt": None if tuned is None else float((tuned.mean(0) - rt_best).norm()),
            "mia": None if tuned is None else mia(setup, tuned.mean(0), retained_idx, forget_idx, halves, "client",
                                                  fit, f"du-{weight}")}
        times[weight] = {"du_correction_s": res.wall_time_s, "du_finetune_s": ft_s,
                         "du_s": None if ft_s is None else res.wall_time_s + ft_s}
    times["rt_s"], times["rt_stable_s"] = rt_s, sum(rt_state["round_s"][:rt_stable])
    times["rt_stable_round"] = rt_stable
    if pdudt is not None:
        state = {"opt": None if opt is None else opt.select(rows)}  # the remaining clients keep their state
        block_p, times["pdudt"], tuned = pdudt_recovery(setup, pdudt, remaining, after, state, forget_idx)
        block_p["distance_to_rt"] = None if tuned is None else float((tuned.mean(0) - rt_best).norm())
        block_p["mia"] = None if tuned is None else mia(setup, tuned.mean(0), retained_idx, forget_idx, halves,
                                                        "client", fit, "pdudt")
    original = {**model_metrics(setup, orig[rows].mean(0), forget_idx),
                "forget_accuracy_all": model_metrics(setup, orig.mean(0), forget_idx)["forget_accuracy"],
                "distance_to_rt": float((orig[rows].mean(0) - rt_best).norm()),
                "mia": mia(setup, orig[rows].mean(0), retained_idx, forget_idx, halves, "client", fit, "original")}
    block = {"target": target, "remaining": remaining, "forget_samples": len(forget_idx),
             "graph_edges": sorted([sorted(e) for e in repaired.edges]),
             "du": weights,
             "rt": {"best": rt_curve[best_round], "best_round": best_round + 1, "stable_round": rt_stable,
                    "curve": rt_curve, "grad_evals": rt_grads,
                    "mia": mia(setup, rt_best, retained_idx, forget_idx, halves, "client", fit, "rt")},
             "original": original}
    if pdudt is not None:
        block["pdudt"] = block_p
        tuned = block_p["after_subsequent"] or {}
        log.info("%s client %d (PDUDT, approx.): %s %% after correction, %s %% after %d subsequent rounds (stable at "
                 "round %s); forget acc %s; MIA %s; %s s to stabilise vs RT %.2f s", setup.name, target,
                 _num(block_p["after_correction"]["test_accuracy"]), _num(tuned.get("test_accuracy")),
                 block_p["rounds"], block_p["stable_round"], _num(tuned.get("forget_accuracy")), _pct(block_p["mia"]),
                 _num(times["pdudt"]["pdudt_stable_s"]), rt_s)
    for weight, d in weights.items():
        tuned = d["after_finetune"] or {}
        log.info("%s client %d (%s): DU %s %% after correction, %s %% after fine-tuning; RT best %.2f %% (round %d); "
                 "forget acc orig %s DU %s RT %s; MIA orig %s DU %s RT %s; DU %s s vs RT %.2f s", setup.name, target,
                 weight, _num(d["after_correction"]["test_accuracy"]), _num(tuned.get("test_accuracy")),
                 rt_curve[best_round]["test_accuracy"], best_round + 1, _num(original["forget_accuracy"]),
                 _num(tuned.get("forget_accuracy")), _num(rt_curve[best_round]["forget_accuracy"]),
                 _pct(original["mia"]), _pct(d["mia"]), _pct(block["rt"]["mia"]), _num(times[weight]["du_s"]), rt_s)
    return block, times


def pdudt_rounds(cfg: dict) -> int:
    """PDUDT's subsequent rounds after its correction (its paper's T): cdfl.pdudt.rounds, null = K."""
    rounds = (cfg.get("pdudt") or {}).get("rounds")
    return int(cfg["train"]["rounds"] if rounds is None else rounds)


def pdudt_recovery(setup: Setup, pdudt: tuple[torch.Tensor, dict], remaining: list[int], after: Schedule, state: dict,
                   forget_idx: torch.Tensor, n: int | None = None) -> tuple[dict, dict, torch.Tensor | None]:
    """PDUDT's block: its unlearned models' metrics, then n (None: pdudt_rounds) rounds of D-PSGD on the remaining
    clients (graph repaired, `state`: their optimizer state), the round where its accuracy stabilises (within 1
    point of its best in the window, Fig. 2's measure) and the times: correction, correction + rounds to
    stabilise, whole window. Returns the block, the times and the final models (None if it diverged)."""
    cfg = config(setup.params)
    theta, cost = pdudt
    start_round = cfg["train"]["rounds"]
    n = pdudt_rounds(cfg) if n is None else n
    block = {"method": pdudt_baseline.LABEL, "sigma": cost["sigma"],
             "noise_std_per_client": cost["noise_std_per_client"], "correction_norm": cost["correction_norm"],
             "bytes_read": cost["bytes_read"], "history_floats": cost["history_floats"], "messages": 0, "floats": 0,
             "after_correction": model_metrics(setup, theta.mean(0), forget_idx), "rounds": n, "curve": [],
             "after_subsequent": None, "stable_round": None, "diverged": None, "grad_evals": 0}
    times = {"pdudt_correction_s": cost["correction_s"], "pdudt_stable_s": None, "pdudt_window_s": None}
    tuned, curve, seconds, grads, diverged = finetune(setup, theta, setup.data, remaining, after,
                                                      range(start_round, start_round + n), forget_idx, state,
                                                      "PDUDT's correction")
    if diverged:  # reported with the rounds before it, not a crash
        log.warning("%s client: PDUDT diverged: %s", setup.name, diverged)
        block.update(diverged=diverged, curve=curve)
        return block, times, None
    if curve:
        k = pdudt_baseline.stable_round(curve)
        block.update(curve=curve, after_subsequent=curve[-1], stable_round=k, grad_evals=grads)
        times.update(pdudt_stable_s=cost["correction_s"] + sum(state["round_s"][:k]),
                     pdudt_window_s=cost["correction_s"] + seconds)
    return block, times, tuned


def _pct(m: dict | None) -> str:
    return "n/a" if m is None or m["accuracy"] is None else f"{m['accuracy']:.1f} ({m['samples']})"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
