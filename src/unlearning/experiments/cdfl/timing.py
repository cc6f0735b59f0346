"""CDFL's wall time on synthetic inputs (Fig. 2 for a dataset that is not on disk, issue 12: CIFAR-10's
ResNet-18): DU's and RT's time at the paper's sizes on seeded Gaussian images of the dataset's shape with uniform
random labels. Only time is measured here: nothing is learned from noise, and no accuracy is reported.

The setting is the Table I IID-Ring cell's (cdfl.clients clients, the official training-set size split evenly,
cdfl.train's optimizer, batch and lr, the dataset's model from cdfl.models), on the same engine and clock as the
cells (steps.py):
- RT's time = K (cdfl.train.rounds) x the mean seconds of the `rounds` timed D-PSGD rounds after the first (the
  first holds the one-off start-up: CUDA kernels, allocator). Every round of RT does the same work, one local epoch
  over each client's retained samples, so K rounds take K times one (RT's rounds see 10 % fewer samples in the
  sample-wise cell: the estimate is an upper bound by that much);
- DU's time per granularity = its correction (the Fisher from per-sample gradients, the Newton step, noise,
  flooding; client-wise: eq. 5-6 with the Newton weight) + cdfl.unlearn.finetune_rounds rounds on the retained
  data, at the models after the timed rounds (the curvature's cost does not depend on how far training went).
The results file holds the seconds (they vary from run to run); it names the device.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from ...data.sources import DATASETS
from ...files import save_tensors, write_json
from ...methods import du
from ...provenance import device_info
from ...resolved import config_record
from ...seeding import derive_seed, generator
from ...topology import graph_for_round
from ...train.dsgd import Diverged, Schedule
from .steps import (
    config,
    du_and_finetune,
    du_config,
    finetune_state,
    make_setup,
    pick_client,
    request_masks,
    run_rounds,
)

log = logging.getLogger("unlearning")

PARTITION, TOPOLOGY = "iid", "ring"  # Table I's first cell
TEST_IMAGES = 1000                    # the per-round evaluation's inputs (not timed)


def synthetic_features(dataset: str, seed: int, path: Path) -> None:
    """A features file of `dataset`'s shape and training-set size: N(0, 1) images, uniform random labels."""
    classes, shape, n_train = DATASETS[dataset].info
    g = generator(seed, "synthetic", dataset)
    x = torch.randn((n_train + TEST_IMAGES, *shape), generator=g)
    y = torch.randint(classes, (n_train + TEST_IMAGES,), generator=g)
    save_tensors(path, {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:],
                        "y_test": y[n_train:]}, {"dataset": dataset, "classes": classes, "shape": list(shape),
                                                 "synthetic": True})


def step_timing(params: dict, dataset: str, timed_rounds: int, out: str) -> None:
    """DU's and RT's seconds for `dataset`'s model on synthetic inputs; see the module docstring."""
    if timed_rounds < 2:
        raise ValueError(f"--rounds = {timed_rounds}: valid: an integer >= 2 (the first round is start-up)")
    cfg = config(params)
    if dataset not in DATASETS or dataset not in cfg["models"]:
        raise ValueError(f"--dataset {dataset!r}: valid: one of {', '.join(sorted(cfg['models']))}")
    seed = cfg["seeds"][0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cdfl-synthetic-") as tmp:
        features = Path(tmp) / f"{dataset}.safetensors"
        synthetic_features(dataset, derive_seed(params["seed"], "cdfl-timing", dataset), features)
        setup = make_setup(params, dataset, PARTITION, TOPOLOGY, seed, str(features), grid=False)
    setup.name += "_synthetic_timing"
    rounds, ft_rounds = cfg["train"]["rounds"], cfg["unlearn"]["finetune_rounds"]
    clients = list(range(cfg["clients"]))
    sched = Schedule.from_config(setup.cfg, derive_seed(setup.seed, setup.name))
    sched.experiment = setup.name
    du_cfg, engine = du_config(setup, sched)
    graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, rounds - 1)
    theta0 = setup.theta0.expand(len(clients), -1).clone()
    none = torch.cat(setup.data.indices)[:0]
    state: dict = {}
    theta, _, _, _, _ = run_rounds(setup, theta0, setup.data, clients, sched, range(timed_rounds), none, state)
    round_s = list(state["round_s"])
    per_round = statistics.mean(round_s[1:])
    log.info("%s: %s on %s, %d rounds: %s s each (the first is start-up)", setup.name, setup.cfg["model"],
             setup.device, timed_rounds, ", ".join(f"{s:.2f}" for s in round_s))
    result = {"experiment": setup.name, "dataset": dataset, "synthetic": True, "model": setup.cfg["model"],
              "dim": setup.spec.dim, "client_sizes": [len(i) for i in setup.data.indices], "rounds": rounds,
              "finetune_rounds": ft_rounds, "engine": engine, "strategy": setup.strategy,
              "device": device_info(setup.device), "round_s": round_s, "round_s_mean": per_round,
              "rt_s": rounds * per_round, "granularities": {}, "config": config_record(params)}
    for granularity in ("sample", "class"):
        masks = request_masks(setup, granularity)
        outcome = du_and_finetune(setup, theta, masks, clients, graph, du_cfg, sched,
                                  range(timed_rounds, timed_rounds + ft_rounds), none, finetune_state(setup, state))
        if outcome.diverged:
            raise Diverged(f"{granularity}-wise DU on synthetic features: {outcome.diverged}")
        result["granularities"][granularity] = _times(outcome.result.wall_time_s, outcome.finetune_s, result["rt_s"],
                                                      per_round, sum(int(m.sum()) for m in masks))
        _log(setup.name, granularity, result)
    target = pick_client(setup)
    remaining = [c for c in clients if c != target]
    res = du.client_wise(setup.model, setup.spec, theta, setup.data, target, graph, clients,
                         replace(du_cfg, client_weight="newton"), classes=setup.classes)
    ft = finetune_state(setup, state, [clients.index(c) for c in remaining])
    run_rounds(setup, res.theta, setup.data, remaining, replace(sched, repaired_without=(target,)),
               range(timed_rounds, timed_rounds + ft_rounds), none, ft)
    result["granularities"]["client"] = _times(res.wall_time_s, sum(ft["round_s"]), result["rt_s"], per_round,
                                               len(setup.data.indices[target]))
    _log(setup.name, "client", result)
    result["wall_time_s"] = time.perf_counter() - start
    write_json(out, result)


def _log(name: str, granularity: str, result: dict) -> None:
    t = result["granularities"][granularity]
    log.info("%s %s: DU %.2f s (correction %.2f + fine-tuning %.2f) = %.1f %% of RT's %.1f s (%d x %.2f s)", name,
             granularity, t["du_s"], t["du_correction_s"], t["du_finetune_s"], 100 * t["du_over_rt"], result["rt_s"],
             result["rounds"], result["round_s_mean"])


def _times(correction_s: float, finetune_s: float, rt_s: float, per_round: float, forget: int) -> dict:
    du_s = correction_s + finetune_s
    return {"forget_samples": forget, "du_correction_s": correction_s, "du_finetune_s": finetune_s, "du_s": du_s,
            "du_over_rt": du_s / rt_s, "du_round_equivalents": du_s / per_round}
