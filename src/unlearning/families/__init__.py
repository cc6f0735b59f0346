"""The trained states the methods start from (issue 55): one training family per module of this package, named by
its file and by the methods' `original` (methods/__init__.py); `FAMILIES` holds them (reading it imports every module
of this package: plugins.py). A family module declares

- `LABEL`: what the report calls the trained state (its `originals` row);
- `TWIN`: "gradient" where it trains the setting's Eq. 2 twin (train.mixing = gradient), else None;
- `PARAMS`: the keys of the setting's config it reads besides the task (dotted for a sub-block: "rrdu.train"),
  so that the workflow re-runs it when they change and not otherwise;
- `train(ctx) -> Original`: the training, writing what its methods read under `ctx.directory(name)` (they read it,
  never write it: a workflow job's output);
- optionally `extra(state) -> {name: tensor}` and `restore(state, tensors) -> dict`: what `TrainedState.extra`
  holds besides the stored models and files (a walk's token), to store and to rebuild.

Each family trains once per (setting, seed): in its own workflow job (`save` writes the state beside the files the
training wrote; `load` rebuilds it in a method's job). Adding a family is adding a module here; nothing else lists
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from ..experiment import Setup
from ..files import load_metadata, load_tensors, save_tensors
from ..methods import Cost, TrainedState
from ..plugins import Registry, constants

STATE = "state.safetensors"  # in a family's directory, beside what its training wrote


@dataclass
class Original:
    state: TrainedState
    cost: Cost
    predict: list | None = None  # per remaining client, x -> logits or log-probabilities (not rows of theta)
    rows: torch.Tensor | None = None  # else: the models judged (stacked flat rows of the remaining clients)


@dataclass
class Context:
    """What a family's training and loading read: the setting's setup (and its Eq. 2 twin, built on first use),
    the folder that holds one directory per family."""

    setup: Setup
    gradient_setup: Callable[[], Setup]  # the same task with train.mixing = gradient
    root: Path

    @property
    def cfg(self) -> dict:
        return self.setup.cfg

    def directory(self, family: str) -> Path:
        return self.root / family

    def setup_of(self, family: str) -> Setup:
        return self.gradient_setup() if FAMILIES[family].twin == "gradient" else self.setup


def remaining(setup: Setup, theta: torch.Tensor, clients: list[int]) -> torch.Tensor:
    """The rows of the clients that remain after the setup's forget request."""
    return theta[[i for i, c in enumerate(clients) if c not in set(setup.request.removed)]]


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    twin: str | None
    reads: tuple[str, ...]
    module: str


FIELDS = {"LABEL": (lambda v: isinstance(v, str), "a string"),
          "TWIN": (lambda v: v in (None, "gradient"), "None or 'gradient'"),
          "PARAMS": (lambda v: isinstance(v, tuple) and all(isinstance(p, str) for p in v), "a tuple of dotted keys"),
          "train": (callable, "a function train(ctx) -> Original")}


def _collect(mod: ModuleType) -> None:
    """A module of this package as its family (the module docstring's constants, checked)."""
    name = mod.__name__.rpartition(".")[2]
    FAMILIES.add(name, Family(name, *constants(mod, "training family", FIELDS)[:3], mod.__name__))


FAMILIES = Registry("training family", __name__, collect=_collect)


def module(name: str) -> ModuleType:
    import sys

    return sys.modules[FAMILIES[name].module]


def train(name: str, ctx: Context) -> Original:
    """Family `name` trained on the context's setting (its files under ctx.directory(name))."""
    ctx.directory(name).mkdir(parents=True, exist_ok=True)
    return module(name).train(ctx)


def save(name: str, orig: Original, ctx: Context) -> None:
    """The trained state's models, clients, rounds, training cost and extras, beside its training's files."""
    mod, state = module(name), orig.state
    tensors = {"theta": state.theta}
    if hasattr(mod, "extra"):
        tensors.update({f"extra.{k}": v for k, v in mod.extra(state).items()})
    c = orig.cost
    save_tensors(ctx.directory(name) / STATE, tensors,
                 {"family": name, "clients": state.clients, "rounds": state.rounds,
                  "cost": {"grad_evals": c.grad_evals, "bytes_read": c.bytes_read,
                           "communication_floats": c.communication_floats}})


def load(name: str, ctx: Context) -> TrainedState:
    """The trained state `save` stored, for the context's setting, as `train` handed it to its methods."""
    mod, directory = module(name), ctx.directory(name)
    path = directory / STATE
    meta, tensors = load_metadata(path), load_tensors(path)
    if meta.get("family") != name:
        raise ValueError(f"{path}: holds family {meta.get('family')!r}, not {name!r}; re-run its job")
    setup = ctx.setup_of(name)
    state = TrainedState(setup, tensors["theta"].to(setup.device), meta["clients"], meta["rounds"], directory)
    if hasattr(mod, "restore"):
        state.extra = mod.restore(state, {k[6:]: v for k, v in tensors.items() if k.startswith("extra.")})
    return state
