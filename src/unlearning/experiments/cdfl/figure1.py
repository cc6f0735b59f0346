"""CDFL's Figure 1 (Wu et al. 2026): test accuracy of DU and RT over rounds, with sequential sample-wise requests
and a client-wise removal; setting IID + Erdos-Renyi (the paper's), whatever the tables' grid holds.

The spec's recommended protocol (section 9, 3.6, 3.7), on the IID-ER cell's setup (steps.make_setup; seed: the
first of cdfl.seeds, so the original is the table cell's):
1. the original: K = cdfl.train.rounds rounds of D-PSGD on all the data;
2. sample-wise panel: cdfl.unlearn.sequential.requests requests (du.sequential_masks: together `total_fraction`
   of every client's original data, equal parts, each drawn from what is still retained), at rounds K, K + W,
   K + 2W, ... with a window of W = cdfl.figure1.window rounds (null = K) after each:
   - DU: Algorithm 1 (du.sample_wise) at the current models and the current retained data (n_c = its current
     size), then W rounds of fine-tuning on the retained data (a fresh optimizer unless finetune_optimizer:
     carried);
   - RT: from theta^0 (a fresh optimizer), W rounds on the cumulative retained data;
3. client-wise panel: one removal at round K (the client of steps.pick_client), window W: for each weight of
   cdfl.unlearn.client_weights, DU (eq. 5-6) then W rounds of fine-tuning on the N-1 clients over the repaired
   graph (`Schedule.repaired_without`); PDUDT (approximate; experiments/cdfl/pdudt_baseline.py: its correction
   from the gradient history recorded during the original's K rounds, then W subsequent rounds, Fig. 1d-f); RT
   from theta^0 on the N-1 clients for W rounds.

Per round: the averaged model's metrics (steps.model_metrics: test accuracy, class accuracy, accuracy on the
cumulative forget set); DU's right after each correction is recorded at the request's round. The rounds of each
window are numbered K + rW + 1 .. K + (r+1)W for both methods (RT trains its rounds 1..W from scratch; only the
label is shifted). A divergence (non-finite weights) is recorded and ends that method's sequence, not the run.
The results file is deterministic; wall times go to the timing file.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import torch

from ...files import write_json
from ...methods import du
from ...resolved import config_record
from ...seeding import derive_seed
from ...topology import graph_for_round
from ...train.dsgd import Diverged, Schedule, all_finite
from .steps import (
    config,
    du_config,
    finetune_state,
    make_setup,
    model_metrics,
    original_with_pdudt,
    pdudt_recovery,
    pick_client,
    run_rounds,
    served_by,
)

log = logging.getLogger("unlearning")

PARTITION, TOPOLOGY = "iid", "erdos_renyi"  # the paper's Figure 1 setting


def window(cfg: dict) -> int:
    """W: cdfl.figure1.window, null = K."""
    w = (cfg.get("figure1") or {}).get("window")
    return int(cfg["train"]["rounds"] if w is None else w)


def _shift(curve: list[dict], start: int) -> list[dict]:
    """RT's rounds 1..W relabelled start+1..start+W (the figure's x-axis)."""
    return [{**p, "round": start + k + 1} for k, p in enumerate(curve)]


def _finite(theta: torch.Tensor, what: str) -> None:
    if not all_finite(theta):
        raise Diverged(what)


def step_figure1(params: dict, dataset: str, features: str, out: str, timing: str) -> None:
    """Figure 1's curves for one dataset; see the module docstring."""
    cfg = config(params)
    seed = cfg["seeds"][0]
    setup = make_setup(params, dataset, PARTITION, TOPOLOGY, seed, features, grid=False)
    rounds, w = cfg["train"]["rounds"], window(cfg)
    seq = cfg["unlearn"]["sequential"]
    clients = list(range(cfg["clients"]))
    sched = Schedule.from_config(setup.cfg, derive_seed(setup.seed, setup.name))
    sched.experiment = setup.name
    du_cfg, engine = du_config(setup, sched)
    theta0 = setup.theta0.expand(len(clients), -1).clone()
    start = time.perf_counter()
    orig_state: dict = {}
    graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, rounds - 1)  # fixed graph
    orig, orig_curve, orig_s, _, pdudt = original_with_pdudt(setup, theta0, clients, sched, graph, du_cfg,
                                                             orig_state, client_wise=True)
    log.info("%s figure 1: original %d rounds, test accuracy %.2f %% (%.1f s)", setup.name, rounds,
             orig_curve[-1]["test_accuracy"], orig_s)
    result = {"experiment": f"{setup.name}_figure1", "dataset": dataset, "data": served_by(features, dataset),
              "partition": PARTITION,
              "topology": TOPOLOGY, "seed": seed, "scale": params["scale"], "model": setup.cfg["model"],
              "dim": setup.spec.dim, "rounds": rounds, "window": w, "requests": seq["requests"],
              "total_fraction": seq["total_fraction"], "engine": engine,
              "client_sizes": [len(i) for i in setup.data.indices], "test_images": len(setup.y_test),
              "original": {"curve": orig_curve}}
    sample, sample_times = sequential_panel(setup, orig, orig_state, theta0, sched, du_cfg, rounds, w, seq)
    client, client_times = client_panel(setup, orig, orig_state, theta0, sched, du_cfg, rounds, w, pdudt)
    result.update(sample=sample, client=client, config=config_record(params))
    write_json(out, result)
    write_json(timing, {"experiment": result["experiment"], "wall_time_s": time.perf_counter() - start,
                        "original_s": orig_s, "sample": sample_times, "client": client_times,
                        "device": str(setup.device), "strategy": setup.strategy})


def sequential_panel(setup, orig: torch.Tensor, orig_state: dict, theta0: torch.Tensor, sched: Schedule,
                     du_cfg: du.DUConfig, rounds: int, w: int, seq: dict) -> tuple[dict, list[dict]]:
    """The sample-wise panel: the requests one after another, DU and RT per window."""
    clients = list(range(len(setup.data.indices)))
    requests = du.sequential_masks(setup.data, seq["requests"], seq["total_fraction"],
                                   derive_seed(setup.seed, setup.name, "figure1", "sequential"))
    theta, data, state = orig, setup.data, finetune_state(setup, orig_state)  # fresh unless carried
    cumulative = [torch.zeros(len(i), dtype=torch.bool) for i in setup.data.indices]
    diverged, blocks, times = None, [], []
    for r, forget in enumerate(requests):
        at = rounds + r * w
        cumulative = [c | f for c, f in zip(cumulative, forget)]
        forget_idx = torch.cat([i[c] for i, c in zip(setup.data.indices, cumulative)])
        retained = setup.data.retained(cumulative)
        block = {"request": r + 1, "round": at, "forget_samples": int(sum(int(f.sum()) for f in forget)),
                 "forget_samples_total": len(forget_idx)}
        t = {}
        if diverged is None:
            graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, at - 1)
            res = du.sample_wise(setup.model, setup.spec, theta, data, forget, graph, clients, du_cfg,
                                 request_id=r, classes=setup.classes)
            data = data.retained(forget)
            corrected = {"round": at, **model_metrics(setup, res.theta.mean(0), forget_idx)}
            t["du_correction_s"] = res.wall_time_s
            try:
                _finite(res.theta, f"{setup.name}: DU's correction {r + 1} produced non-finite weights")
                theta, curve, _, ft_s, _ = run_rounds(setup, res.theta, data, clients, sched, range(at, at + w),
                                                      forget_idx, state)
                t["du_finetune_s"] = ft_s
            except Diverged as err:  # recorded, and DU's sequence ends here
                log.warning("%s figure 1 request %d: DU diverged: %s", setup.name, r + 1, err)
                diverged, curve = str(err), []
            block["du"] = {"after_correction": corrected, "curve": curve, "diverged": diverged,
                           "sigma": {str(k): v for k, v in res.sigmas.items()}}
        else:
            block["du"] = {"after_correction": None, "curve": [], "diverged": f"not run: {diverged}"}
        try:
            _, rt_curve, _, rt_s, _ = run_rounds(setup, theta0, retained, clients, sched, range(w), forget_idx, {})
            block["rt"] = {"curve": _shift(rt_curve, at), "diverged": None}
            t["rt_s"] = rt_s
        except Diverged as err:
            log.warning("%s figure 1 request %d: RT diverged: %s", setup.name, r + 1, err)
            block["rt"] = {"curve": [], "diverged": str(err)}
        blocks.append(block)
        times.append(t)
        log.info("%s figure 1 request %d (round %d): DU %s %% after correction, %s %% after %d rounds; RT %s %%",
                 setup.name, r + 1, at, _acc(block["du"]["after_correction"]), _acc(_last(block["du"]["curve"])),
                 w, _acc(_last(block["rt"]["curve"])))
    return {"requests": blocks}, times


def client_panel(setup, orig: torch.Tensor, orig_state: dict, theta0: torch.Tensor, sched: Schedule,
                 du_cfg: du.DUConfig, rounds: int, w: int, pdudt: tuple[torch.Tensor, dict]) -> tuple[dict, dict]:
    """The client-wise panel: one client leaves at round K; DU per weight, PDUDT (approximate: its correction from
    the original's gradient history, then its subsequent rounds) and RT on the N-1 clients over the repaired graph,
    W rounds each."""
    cfg = config(setup.params)
    clients = list(range(cfg["clients"]))
    target = pick_client(setup)
    remaining = [c for c in clients if c != target]
    rows = [clients.index(c) for c in remaining]
    after = replace(sched, repaired_without=(target,))
    graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, rounds - 1)
    forget_idx = setup.data.indices[target]
    opt = orig_state.get("opt")
    weights, times = {}, {}
    terms = du.client_terms(setup.model, setup.spec, orig, setup.data, target, clients, du_cfg, setup.classes)
    for weight in cfg["unlearn"]["client_weights"]:
        res = du.client_wise(setup.model, setup.spec, orig, setup.data, target, graph, clients,
                             replace(du_cfg, client_weight=weight), classes=setup.classes, terms=terms)
        corrected = {"round": rounds, **model_metrics(setup, res.theta.mean(0), forget_idx)}
        diverged, curve, ft_s = None, [], None
        try:
            _finite(res.theta, f"{setup.name}: DU's client-wise correction ({weight}) produced non-finite weights")
            state = finetune_state(setup, orig_state, rows)
            _, curve, _, ft_s, _ = run_rounds(setup, res.theta, setup.data, remaining, after,
                                              range(rounds, rounds + w), forget_idx, state)
        except Diverged as err:
            log.warning("%s figure 1 client (%s): DU diverged: %s", setup.name, weight, err)
            diverged = str(err)
        weights[weight] = {"after_correction": corrected, "curve": curve, "diverged": diverged}
        times[weight] = {"du_correction_s": res.wall_time_s, "du_finetune_s": ft_s}
    state = {"opt": None if opt is None else opt.select(rows)}
    pdudt_block, times["pdudt"], _ = pdudt_recovery(setup, pdudt, remaining, after, state, forget_idx, w)
    pdudt_block["after_correction"]["round"] = rounds
    rt = {"curve": [], "diverged": None}
    try:
        _, rt_curve, _, rt_s, _ = run_rounds(setup, theta0[rows], setup.data, remaining, after, range(w), forget_idx,
                                             {})
        rt["curve"] = _shift(rt_curve, rounds)
        times["rt_s"] = rt_s
    except Diverged as err:
        log.warning("%s figure 1 client: RT diverged: %s", setup.name, err)
        rt["diverged"] = str(err)
    for weight, d in weights.items():
        log.info("%s figure 1 client %d (%s): DU %s %% after correction, %s %% after %d rounds; RT %s %%", setup.name,
                 target, weight, _acc(d["after_correction"]), _acc(_last(d["curve"])), w, _acc(_last(rt["curve"])))
    return {"target": target, "remaining": remaining, "round": rounds, "forget_samples": len(forget_idx),
            "du": weights, "pdudt": pdudt_block, "rt": rt}, times


def _last(curve: list[dict]) -> dict | None:
    return curve[-1] if curve else None


def _acc(point: dict | None) -> str:
    return "n/a" if point is None or point["test_accuracy"] is None else f"{point['test_accuracy']:.2f}"
