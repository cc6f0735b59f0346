"""Every unlearning method there is, imported on demand (issue 55): the names come from method_names.py (this
package's `@register` calls and the entry-point group `unlearning.methods`); `load` imports the module that
registers a name and returns its declaration (methods/__init__.py's MethodInfo); `load_central` the same for a
runner on the centralized canary task (CentralInfo)."""

from __future__ import annotations

from importlib import import_module

from ..method_names import central, central_names, modules, names, unknown
from . import CENTRAL, METHODS, CentralInfo, MethodInfo


def check(key: str, configured: list[str]) -> None:
    """A KeyError naming `key` and the valid names if `configured` holds a name no module registers."""
    if bad := unknown(configured):
        raise KeyError(f"{key}: {', '.join(map(repr, bad))} unknown; valid: {', '.join(names())}")


def load(name: str) -> MethodInfo:
    """The declaration of method `name`, its module imported."""
    check("method", [name])
    import_module(modules()[name])
    if name not in METHODS:
        raise KeyError(f"method {name!r}: {modules()[name]} does not register it (no @register({name!r}, ...))")
    return METHODS[name]



def load_central(name: str, model: str) -> CentralInfo:
    """The runner of method `name` on `model`'s centralized task, its module imported."""
    found = central()
    if (name, model) not in found:
        raise KeyError(f"centralized method {name!r} on the {model} model: no @register_central({name!r}, "
                       f"model={model!r}) found; registered: {', '.join(central_names(model))}")
    import_module(found[(name, model)][0])
    if (name, model) not in CENTRAL:
        raise KeyError(f"centralized method {name!r} ({model}): {found[(name, model)][0]} does not register it")
    return CENTRAL[(name, model)]
