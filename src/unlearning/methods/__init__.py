"""Unlearning methods behind one interface (issue 55's protocol).

A method is a function `(state, request, params) -> Unlearned`: it takes the trained state (models,
histories, checkpoints, data handles), the forget request and its own parameter section, and returns
the new stacked models of the clients that remain (or, for a method whose model is not a row of parameters,
one prediction function per remaining client), a certificate (epsilon, delta, sigma actually used; empty for
exact or uncertified methods) and its cost, communication included.

A module declares each of its methods once, with `@register(name, label=..., original=..., params=...)`: its
display label, the trained state it starts from on the common ground (`original`: a training family of
unlearning/families/), the settings it does not apply to and why, whether it takes the common privacy budget, its
parameter block (`params`: JSON-Schema properties with defaults, `check`: the limits across keys; plugins.py), what
its certificate claims (`claim`; none: "no certificate") and, for a Gaussian mechanism around deterministic outputs,
how to draw its audit pair (`audit_pair`). `METHODS` holds every declaration: reading it imports every module of
this package and the entry points of `unlearning.methods` (plugins.py); nothing else keeps a list of methods
(docs/extending.md).

The common ground's centralized canary task (experiments/common_ground/centralized.py on the convex model, mlp.py on
an MLP) calls a method through `@register_central(name, model="convex" | "mlp", label=...)` on a function
`run(bench)`: the bench holds the task (data, canary, budget, trials) and records the method's rows
(`bench.publish`: its noiseless unlearned and retrained outputs, the noise it adds, its cost); a method registered
for one model only names why the other does not apply (`does_not_apply`). `CENTRAL` holds them, keyed by
(name, model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from ..experiment import ForgetRequest, Setup
from ..history import CheckpointStore, History
from ..plugins import PluginError, Registry


@dataclass
class TrainedState:
    setup: Setup
    theta: torch.Tensor          # [clients, d] after training
    clients: list[int]
    rounds: int                  # rounds trained
    directory: Path              # holds history/ and checkpoints/
    extra: dict = field(default_factory=dict)  # what a training family hands its methods besides (a walk's token)

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
    # per remaining client, x -> class logits or log-probabilities, where its model is not a row of `theta`
    predict: list[Callable[[torch.Tensor], torch.Tensor]] | None = None


Method = Callable[[TrainedState, ForgetRequest, dict], Unlearned]


def no_certificate(result: Unlearned, budget: dict) -> dict:
    """The claim of a method without a certificate."""
    return {"epsilon": None, "basis": "no certificate (an approximate method)"}


@dataclass(frozen=True)
class MethodInfo:
    """What a method module declares (module docstring); `unlearn` is the method itself."""

    name: str
    unlearn: Method
    label: str
    original: str = "dsgd"
    does_not_apply: dict[str, str] = field(default_factory=dict)  # common-ground setting -> why not
    takes_budget: bool = False  # params get the common budget's epsilon and delta
    params_key: str = ""  # the common ground's params block it reads ("": its name)
    claim: Callable[[Unlearned, dict], dict] = no_certificate  # (result, budget) -> {"epsilon", "basis", ...}
    module: str = ""
    # for a method adding Gaussian noise around deterministic outputs: (state, request, params, result) -> (its
    # noiseless output rows, each row's noise std), so that the exact epsilon against retraining is computed
    audit_pair: Callable | None = None
    params: dict | None = None  # its block's keys: JSON-Schema properties with defaults (plugins.py)
    check: Callable[[dict, dict], str | None] | None = None  # (block, the setting's task) -> what is wrong, or None

    def __call__(self, state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
        return self.unlearn(state, request, params)

    @property
    def block(self) -> str:
        return self.params_key or self.name

    @property
    def where(self) -> str:
        """Where it is declared: its module and the line of its function."""
        code = getattr(self.unlearn, "__code__", None)
        return f"{self.module}, line {code.co_firstlineno}" if code else self.module


METHODS = Registry("method", __name__)


def register(name: str, *, label: str | None = None, original: str = "dsgd", does_not_apply: dict | None = None,
             takes_budget: bool = False, params_key: str | None = None,
             claim: Callable[[Unlearned, dict], dict] = no_certificate, audit_pair: Callable | None = None,
             params: dict | None = None, check: Callable[[dict, dict], str | None] | None = None):
    """Declare the decorated function as the method `name` (module docstring)."""
    def wrap(fn: Method) -> Method:
        METHODS.add(name, MethodInfo(name, fn, label or name, original, dict(does_not_apply or {}), takes_budget,
                                     params_key or name, claim, fn.__module__, audit_pair, params, check))
        return fn

    return wrap


@dataclass(frozen=True)
class CentralInfo:
    """A method's runner on the centralized canary task of one model (module docstring)."""

    name: str
    model: str  # "convex" | "mlp"
    run: Callable
    label: str
    does_not_apply: dict[str, str] = field(default_factory=dict)  # other model -> why not
    module: str = ""
    params_key: str | None = None  # its block of common.centralized, where it reads one
    params: dict | None = None  # that block's keys (plugins.py)
    check: Callable[[dict, dict], str | None] | None = None  # (block, the merged `common` section) -> what is wrong

    @property
    def block(self) -> str | None:
        return self.params_key


CENTRAL = Registry("centralized runner", __name__)
MODELS = ("convex", "mlp")


def register_central(name: str, *, model: str, label: str | None = None, does_not_apply: dict | None = None,
                     params_key: str | None = None, params: dict | None = None,
                     check: Callable[[dict, dict], str | None] | None = None):
    """Declare the decorated `run(bench)` as method `name` on the centralized task of `model` (module docstring);
    `params_key`: the block of common.centralized it reads (`bench.central[params_key]`), `params` its keys."""
    if model not in MODELS:
        raise PluginError(f"register_central({name!r}): model = {model!r}; valid: {', '.join(MODELS)}")
    if params is not None and params_key is None:
        raise PluginError(f"register_central({name!r}): params declared without params_key; valid: name the block "
                          "of common.centralized that holds them")

    def wrap(fn: Callable) -> Callable:
        if not set(does_not_apply or {}) <= set(MODELS) - {model}:
            raise PluginError(f"centralized runner {name!r} ({fn.__module__}, line {fn.__code__.co_firstlineno}): "
                              f"does_not_apply={does_not_apply!r} cannot be read; valid: {{model: why}} with the "
                              f"models it does not run on ({', '.join(m for m in MODELS if m != model)})")
        CENTRAL.add((name, model), CentralInfo(name, model, fn, label or name, dict(does_not_apply or {}),
                                               fn.__module__, params_key, params, check))
        return fn

    return wrap


def central_runner(name: str, model: str) -> CentralInfo:
    """Method `name`'s runner on `model`'s centralized task, or an error naming the methods that have one."""
    if (name, model) not in CENTRAL:
        valid = sorted(n for n, m in CENTRAL.all() if m == model)
        raise PluginError(f"centralized method {name!r} on the {model} model: no @register_central({name!r}, "
                          f"model={model!r}); valid: {', '.join(valid)}")
    return CENTRAL[(name, model)]
