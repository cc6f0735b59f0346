"""Unlearning methods behind one interface (issue 55's protocol).

A method is a function `(state, request, params) -> Unlearned`: it takes the trained state (models,
histories, checkpoints, data handles), the forget request and its own parameter section, and returns
the new stacked models of the clients that remain (or, for a method whose model is not a row of parameters,
one prediction function per remaining client), a certificate (epsilon, delta, sigma actually used; empty for
exact or uncertified methods) and its cost, communication included.

A module declares each of its methods once, with `@register(name, label=..., original=..., ...)`: its display
label, the trained state it starts from on the common ground (`original`: a training family of
experiments/common_ground/families/), the settings it does not apply to and why, whether it takes the common
privacy budget, what its certificate claims (`claim`; none: "no certificate") and, for a Gaussian mechanism around
deterministic outputs, how to draw its audit pair (`audit_pair`). method_names.py finds every
name (this package's `@register` calls, and the entry-point group `unlearning.methods` for outside packages) and
registry.py imports them; nothing else keeps a list of methods (docs/extending.md).

The common ground's centralized canary task (experiments/common_ground/centralized.py on the convex model, mlp.py on
an MLP) calls a method through `@register_central(name, model="convex" | "mlp", label=...)` on a function
`run(bench)`: the bench holds the task (data, canary, budget, trials) and records the method's rows
(`bench.publish`: its noiseless unlearned and retrained outputs, the noise it adds, its cost); a method registered
for one model only names why the other does not apply (`does_not_apply`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    # per remaining client, x -> class probabilities, where its model is not a row of `theta` (an ensemble)
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

    def __call__(self, state: TrainedState, request: ForgetRequest, params: dict) -> Unlearned:
        return self.unlearn(state, request, params)


METHODS: dict[str, MethodInfo] = {}


def register(name: str, *, label: str | None = None, original: str = "dsgd", does_not_apply: dict | None = None,
             takes_budget: bool = False, params_key: str | None = None,
             claim: Callable[[Unlearned, dict], dict] = no_certificate, audit_pair: Callable | None = None):
    """Declare the decorated function as the method `name` (module docstring)."""
    def wrap(fn: Method) -> Method:
        if name in METHODS and METHODS[name].module != fn.__module__:
            raise ValueError(f"method {name!r}: registered by {METHODS[name].module} and by {fn.__module__}")
        METHODS[name] = MethodInfo(name, fn, label or name, original, dict(does_not_apply or {}), takes_budget,
                                   params_key or name, claim, fn.__module__, audit_pair)
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


CENTRAL: dict[tuple[str, str], CentralInfo] = {}
MODELS = ("convex", "mlp")


def register_central(name: str, *, model: str, label: str | None = None, does_not_apply: dict | None = None,
                     params_key: str | None = None):
    """Declare the decorated `run(bench)` as method `name` on the centralized task of `model` (module docstring);
    `params_key`: the block of common.centralized it reads (`bench.central[params_key]`), checked with params.yaml."""
    if model not in MODELS:
        raise ValueError(f"register_central({name!r}): model = {model!r}; valid: {', '.join(MODELS)}")

    def wrap(fn: Callable) -> Callable:
        known = CENTRAL.get((name, model))
        if known is not None and known.module != fn.__module__:
            raise ValueError(f"centralized method {name!r} ({model}): registered by {known.module} and by "
                             f"{fn.__module__}")
        CENTRAL[(name, model)] = CentralInfo(name, model, fn, label or name, dict(does_not_apply or {}),
                                             fn.__module__, params_key)
        return fn

    return wrap


def get_method(name: str) -> MethodInfo:
    """A registered method; the caller imports the module that declares it (registry.load finds any)."""
    if name not in METHODS:
        raise KeyError(f"method {name!r}: not registered here; registered: {', '.join(sorted(METHODS))}")
    return METHODS[name]
