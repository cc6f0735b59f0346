"""Unlearning methods behind one interface, found by name in a registry.

A method is a function `(state, request, params) -> Unlearned`: it takes the trained state (models,
histories, checkpoints, data handles), the forget request and its own parameter section, and returns
the new stacked models of the clients that remain, a certificate (epsilon, delta, sigma actually
used; empty for exact or uncertified methods) and its cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Callable

import torch

from ..experiment import ForgetRequest, Setup
from ..history import CheckpointStore, History


@dataclass
class TrainedState:
    setup: Setup
    theta: torch.Tensor          # [clients, d] after training
    clients: list[int]
    rounds: int                  # rounds trained
    directory: Path              # holds history/ and checkpoints/

    def history(self) -> History:
        return History(self.directory / "history")

    def checkpoints(self) -> CheckpointStore:
        return CheckpointStore(self.directory / "checkpoints")


@dataclass
class Cost:
    wall_time_s: float
    grad_evals: int              # per-sample gradient evaluations
    bytes_read: int = 0          # from histories and checkpoints
    communication_floats: int = 0


@dataclass
class Unlearned:
    theta: torch.Tensor
    clients: list[int]
    cost: Cost
    certificate: dict = field(default_factory=dict)


Method = Callable[[TrainedState, ForgetRequest, dict], Unlearned]
METHODS: dict[str, Method] = {}
MODULES = ("retrain", "finetune", "pdudt", "fedrecovery", "fats", "du")


def register(name: str):
    def wrap(fn: Method) -> Method:
        METHODS[name] = fn
        return fn

    return wrap


def get_method(name: str) -> Method:
    for module in MODULES:
        import_module(f"{__name__}.{module}")
    if name not in METHODS:
        raise KeyError(f"method {name!r}: unknown; valid: {', '.join(sorted(METHODS))}")
    return METHODS[name]
