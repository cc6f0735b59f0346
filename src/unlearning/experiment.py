"""What every step of an experiment shares: its config, data on the device, model, theta^0, request."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import nn

from .config import ParamsError, experiment_config
from .data.forget import forget_masks, removed_clients
from .data.partition import partition
from .data.sources import DATASETS
from .files import load_metadata, load_tensors
from .models import build_model
from .seeding import derive_seed, deterministic_algorithms
from .train.checkpointed_sgd import Schedule as EpochSchedule
from .train.checkpointed_sgd import run_epochs
from .train.dsgd import ClientData, Schedule, resolve_strategy
from .train.flat import FlatSpec


def pick_device(choice: str) -> torch.device:
    """params.yaml's `device` (auto: CUDA when torch sees it). On CUDA, cuBLAS gets the workspace setting
    under which `torch.use_deterministic_algorithms` makes matrix products reproducible; it is read when the
    first cuBLAS handle is made, so this runs before any tensor reaches the device."""
    if choice == "cuda" and not torch.cuda.is_available():
        raise ParamsError("params.yaml: device: cuda was asked for but torch sees no CUDA device; "
                           "valid here: auto, cpu")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if choice == "auto" else choice)
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return device


@dataclass
class ForgetRequest:
    kind: str
    masks: list[torch.Tensor]        # per client, True = forget
    removed: tuple[int, ...]         # clients that leave the network

    def samples(self, indices: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([idx[m] for idx, m in zip(indices, self.masks)])


@dataclass
class Setup:
    name: str
    params: dict
    cfg: dict
    device: torch.device
    model: nn.Module
    spec: FlatSpec
    theta0: torch.Tensor
    data: ClientData
    request: ForgetRequest
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int
    strategy: str

    @property
    def seed(self) -> int:
        return self.params["seed"]

    def schedule(self, lr: float | None = None) -> Schedule:
        sched = Schedule.from_config(self.cfg, derive_seed(self.seed, self.name), self.request.removed)
        sched.experiment = self.name
        if lr is not None:
            sched.lr = lr
        return sched


def make_split(params: dict, name: str, labels: torch.Tensor, cfg: dict | None = None) -> dict[str, torch.Tensor]:
    """Client index lists and forget masks as flat tensors for safetensors (`cfg`: experiment `name`'s by default)."""
    cfg = experiment_config(params, name) if cfg is None else cfg
    part, forget = cfg["partition"], cfg["forget"]
    seed = derive_seed(params["seed"], name)
    indices = partition(labels, cfg["clients"], part["kind"], seed, part["alpha"], part["train_per_client"],
                        forget["client"], forget["class"])
    out = {}
    if init_kind(cfg) == "public":
        indices, out["public.indices"] = public_set(indices, labels, cfg["init"]["public_fraction"], seed,
                                                    forget["client"], forget["class"])
    masks = forget_masks(forget["kind"], indices, labels, seed, forget["client"], forget["fraction"], forget["class"])
    for c, (idx, mask) in enumerate(zip(indices, masks)):
        out[f"client{c}.indices"], out[f"client{c}.forget"] = idx, mask
    return out


def init_kind(cfg: dict) -> str:
    """theta^0: `random` (the seeded initialisation) or `public` (that, trained centrally on a public set first)."""
    return (cfg.get("init") or {}).get("kind", "random")


def public_set(indices: list[torch.Tensor], labels: torch.Tensor, fraction: float, seed: int, target: int,
               target_class: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """A public set P for pretraining, removed from the clients' pools: `fraction` of every client's samples but
    the target's, drawn outside `target_class`, so that neither the target's data nor its class reaches theta^0
    (Qiao et al. 2025, Fig. 1's pretrained start; specs/pdudt.md 4.2: 10 % of classes 0-8)."""
    kept, public = [], []
    for c, idx in enumerate(indices):
        if c == target:
            kept.append(idx)
            continue
        candidates = idx[labels[idx] != target_class]
        order = torch.randperm(len(candidates), generator=torch.Generator().manual_seed(derive_seed(seed, "public", c)))
        chosen = candidates[order[: round(fraction * len(candidates))]]
        public.append(chosen)
        kept.append(idx[~torch.isin(idx, chosen)])
    return kept, torch.sort(torch.cat(public)).values


def pretrain_public(model: nn.Module, x: torch.Tensor, y: torch.Tensor, public: torch.Tensor, cfg: dict,
                    seed: int) -> None:
    """theta^0 from `init.epochs` epochs of central shuffled SGD on P with the training recipe's lr and batch
    (specs/pdudt.md 4.2: 5 epochs for the CNN), in place; deterministic, so every step gets the same theta^0."""
    sched = EpochSchedule(cfg["train"]["lr"], 1.0, cfg["train"]["batch_size"], seed)
    run_epochs(model, x[public], y[public], sched, 0, cfg["init"]["epochs"])


def load_setup(params: dict, name: str, features_path: str, split_path: str) -> Setup:
    return build_setup(params, name, experiment_config(params, name), features_path, load_tensors(split_path),
                       split_path)


def build_setup(params: dict, name: str, cfg: dict, features_path: str, split: dict[str, torch.Tensor],
                split_path: str = "the split") -> Setup:
    """The Setup of experiment `name` under config `cfg` (spine-shaped keys) and its split tensors (make_split)."""
    device = pick_device(params["device"])
    deterministic_algorithms()
    feats = load_tensors(features_path)
    n = cfg["clients"]
    indices = [split[f"client{c}.indices"] for c in range(n)]
    masks = [split[f"client{c}.forget"] for c in range(n)]
    classes, shape, _ = DATASETS[cfg["dataset"]].info
    meta_shape = tuple(load_metadata(features_path)["shape"])
    if meta_shape != shape:
        raise ValueError(f"{features_path}: images of shape {meta_shape}, expected {shape} for {cfg['dataset']}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(params["seed"], name, "init"))
        model = build_model(cfg["model"], shape, classes, cfg["mlp_hidden"])
    model = model.to(device)
    if init_kind(cfg) == "public":
        if "public.indices" not in split:
            raise ValueError(f"{split_path}: no public.indices; init.kind public needs a split made with it: "
                             "delete the file and re-run the split step")
        pretrain_public(model, feats["x_train"].to(device), feats["y_train"].to(device),
                        split["public.indices"].to(device), cfg, derive_seed(params["seed"], name, "public"))
    spec = FlatSpec.of(model)
    data = ClientData(feats["x_train"].to(device), feats["y_train"].to(device), indices,
                      [torch.ones(len(i), dtype=torch.bool) for i in indices])
    request = ForgetRequest(cfg["forget"]["kind"], masks, removed_clients(cfg["forget"]["kind"], masks))
    strategy = resolve_strategy(params["engine"]["strategy"], cfg["model"], device)
    return Setup(name, params, cfg, device, model, spec, spec.flatten(model), data, request,
                 feats["x_test"].to(device), feats["y_test"].to(device), classes, strategy)
