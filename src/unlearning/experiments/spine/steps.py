"""The pipeline's steps, one function per Snakemake rule; `python -m unlearning <step>` calls them."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from ...config import experiment_config
from ...data.datasets import normalize, prepare
from ...evaluate.metrics import accuracy, per_sample_loss_and_pred
from ...experiment import load_setup, make_split
from ...files import load_metadata, load_tensors, read_json, save_tensors, write_json
from ...history import CheckpointStore, HistoryWriter
from ...methods import METHODS, Cost, TrainedState
from ...resolved import config_record
from ...train.dsgd import train
from ..common.io import load_models, write_cost

log = logging.getLogger("unlearning")


def step_prepare(params: dict, dataset: str, out: str) -> None:
    raw = Path(params["data"]["raw_root"])
    prepare(dataset, raw, out, seed=params["seed"])
    log.info("wrote %s", out)


def step_features(params: dict, processed: str, out: str) -> None:
    """Standardised pixels (per-channel mean/std of the training set), float32."""
    tensors = load_tensors(processed)
    meta = load_metadata(processed)
    feats, stats = normalize(tensors)
    save_tensors(out, feats, {**meta, "extractor": "standardized_pixels", **stats})


def step_split(params: dict, name: str, features: str, out: str) -> None:
    labels = load_tensors(features)["y_train"]
    cfg = experiment_config(params, name)
    save_tensors(out, make_split(params, name, labels), {"experiment": name, "partition": cfg["partition"],
                                                         "forget": cfg["forget"]})


class ClassCurve:
    """Every client model's test accuracy on one class after every training round (dsgd.train's on_round): how the
    class the forget set is about spreads to, or starves in, each model (PDUDT issue 37, item 2)."""

    def __init__(self, setup, cls: int):
        self.setup, self.cls, self.accuracy = setup, cls, []
        keep = setup.y_test == cls
        self.x, self.y = setup.x_test[keep], setup.y_test[keep]

    def __call__(self, t: int, theta: torch.Tensor) -> None:
        self.accuracy.append([accuracy(per_sample_loss_and_pred(self.setup, row, self.x, self.y)[1], self.y)
                              for row in theta])


def step_pretrain(params: dict, name: str, features: str, split: str, out_dir: str, timing: str) -> None:
    """Train the original decentralized models; store final models, gradient history, checkpoints.

    Everything under `out_dir` is deterministic; the wall time goes to `timing`."""
    setup = load_setup(params, name, features, split)
    cfg, out = setup.cfg, Path(out_dir)
    rounds = cfg["train"]["rounds"]
    clients = list(range(cfg["clients"]))
    history = HistoryWriter(out / "history", rounds, clients, setup.spec.dim, params["engine"]["history_dtype"])
    store = CheckpointStore(out / "checkpoints")
    theta = setup.theta0.expand(len(clients), -1).clone()
    store.save(0, theta, clients)
    curve = ClassCurve(setup, cfg["forget"]["class"])
    theta, train_log = train(setup.model, setup.spec, theta, setup.data, clients, setup.schedule(), range(rounds),
                             setup.strategy, history=history, checkpoints=store,
                             checkpoint_every=cfg["train"]["checkpoint_every"], progress=True, on_round=curve)
    history.close()
    write_json(out / "class_curve.json", {"class": curve.cls, "clients": clients, "accuracy": curve.accuracy})
    if rounds not in store.rounds():
        store.save(rounds, theta, clients)
    save_tensors(out / "models.safetensors", {"theta": theta, "clients": torch.tensor(clients)},
                 {"rounds": rounds, "strategy": setup.strategy, "device": str(setup.device)})
    write_cost(Cost(train_log.wall_time_s, train_log.grad_evals), out / "cost.json", timing)
    log.info("trained %d rounds in %.1f s (%s strategy on %s)", rounds, train_log.wall_time_s,
             setup.strategy, setup.device)


def step_unlearn(params: dict, name: str, method: str, features: str, split: str, pretrain_dir: str,
                 out_dir: str, timing: str) -> None:
    """Run one method; its models, certificate and deterministic costs to `out_dir`, wall time to `timing`."""
    setup = load_setup(params, name, features, split)
    theta, clients, meta = load_models(str(Path(pretrain_dir) / "models.safetensors"), setup.device)
    state = TrainedState(setup, theta, clients, meta["rounds"], Path(pretrain_dir))
    result = METHODS[method](state, setup.request, setup.cfg.get(method, {}))
    out = Path(out_dir)
    save_tensors(out / "models.safetensors", {"theta": result.theta, "clients": torch.tensor(result.clients)},
                 {"method": method, "certificate": result.certificate})
    write_cost(result.cost, out / "cost.json", timing)
    log.info("%s: %.2f s, %d gradient evaluations (models on %s)", method, result.cost.wall_time_s,
             result.cost.grad_evals, setup.device)


def step_evaluate(params: dict, name: str, method: str, features: str, split: str, models: str, cost: str,
                  out: str) -> None:
    """Deterministic metrics to `out` (wall times live under timings/)."""
    from ...evaluate.metrics import evaluate

    setup = load_setup(params, name, features, split)
    theta, clients, meta = load_models(models, setup.device)
    start = time.perf_counter()
    metrics = evaluate(setup, theta, clients, setup.cfg["eval"]["mia_samples"])
    costs = read_json(cost)
    metrics.update({"method": method, "experiment": name, "scale": params["scale"],
                    "certificate": meta.get("certificate", {}), "grad_evals": costs["grad_evals"],
                    "bytes_read": costs["bytes_read"], "config": config_record(params)})
    write_json(out, metrics)
    log.info("%s: test accuracy %.4f, forget accuracy %s, MIA AUC %s (%.1f s)", method, metrics["test_accuracy"],
             metrics["forget_accuracy"], metrics["mia_loss_threshold_auc"], time.perf_counter() - start)


