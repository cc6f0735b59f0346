"""The names of every unlearning method there is, found without importing one (issue 55): params.yaml's check runs
before every workflow and job and must stay fast and torch-free.

In the package: the literal first argument of each `@register("name", ...)` in `unlearning/methods/*.py`
(methods/__init__.py). Outside it: the names of the entry points of the group `unlearning.methods`, each pointing
at the module that registers it (`[project.entry-points."unlearning.methods"] my_method = "my_package.my_method"`).
methods/registry.py imports them.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from importlib import metadata
from pathlib import Path

GROUP = "unlearning.methods"
METHODS_DIR = Path(__file__).resolve().parent / "methods"


DECLARED = ("label", "original", "params_key", "does_not_apply", "takes_budget")  # @register's, read from the source


def declarations(path: Path, decorator: str = "register", keys: tuple[str, ...] = DECLARED) -> list[tuple[str, dict]]:
    """(name, the literal keywords among `keys`) of each `@decorator(name, ...)` in `path`, in order (a keyword that
    is not a literal is left out: the job that imports the module checks it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for dec in getattr(node, "decorator_list", []):
            if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == decorator and dec.args
                    and isinstance(dec.args[0], ast.Constant)):
                keywords = {}
                for k in dec.keywords:
                    if k.arg in keys:
                        try:
                            keywords[k.arg] = ast.literal_eval(k.value)
                        except ValueError:
                            pass
                found.append((dec.args[0].value, keywords))
    return found


def registered_in(path: Path, decorator: str = "register", keys: tuple[str, ...] = DECLARED) -> dict[str, dict]:
    """{name: the literal keywords among `keys` of its `@decorator(name, ...)`} of each such call in `path`."""
    return dict(declarations(path, decorator, keys))


@cache
def _package() -> dict[str, tuple[str, dict]]:
    return {name: (f"unlearning.methods.{path.stem}", kw) for path in sorted(METHODS_DIR.glob("*.py"))
            if path.stem not in ("__init__", "registry") for name, kw in registered_in(path).items()}


def declared(name: str) -> dict:
    """What method `name` declares, read from its module's source without importing it: label (default: the
    name), original (default: dsgd), params_key (default: the name), does_not_apply (default: {}), takes_budget
    (default: False)."""
    if name not in modules():
        raise KeyError(f"method {name!r}: no module registers it; valid: {', '.join(names())}")
    module = modules()[name]
    if name in _package():
        kw = _package()[name][1]
    else:
        kw = registered_in(Path(_origin(name, module))).get(name, {})
    return {"label": name, "original": "dsgd", "params_key": name, "does_not_apply": {}, "takes_budget": False, **kw}


def does_not_apply(name: str) -> dict[str, str]:
    """{common-ground setting: why not} as the method's module declares it literally."""
    return declared(name)["does_not_apply"]


def _origin(name: str, module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ValueError(f"entry point {name!r}: its module {module!r} is not importable")
    return spec.origin


@cache
def modules() -> dict[str, str]:
    """{method name: the module that registers it}, the package's and the entry points'."""
    found = {name: module for name, (module, _) in _package().items()}
    for ep in metadata.entry_points(group=GROUP):
        if ep.name in found:
            raise ValueError(f"entry point {ep.name!r} ({ep.value}): the method name is taken by {found[ep.name]}")
        found[ep.name] = ep.value.partition(":")[0]
    return found


@cache
def central() -> dict[tuple[str, str], tuple[str, dict]]:
    """{(name, model): (its module, its literal label and params_key)} of every `@register_central(name, model=...)`
    (methods/__init__.py): in this package's modules and in those of the entry points."""
    files = [(f"unlearning.methods.{p.stem}", p) for p in sorted(METHODS_DIR.glob("*.py"))
             if p.stem not in ("__init__", "registry")]
    files += [(m, Path(_origin(n, m))) for n, m in modules().items() if not m.startswith("unlearning.")]
    found = {}
    for module, path in dict(files).items():
        for name, kw in declarations(path, "register_central", ("model", "label", "params_key")):
            if "model" in kw:  # a model that is not a literal: register_central checks it when imported
                found[(name, kw["model"])] = (module, {"label": name, **kw})
    return found


def central_names(model: str) -> list[str]:
    """The methods with a runner on the centralized task of `model` ("convex" or "mlp")."""
    return sorted(name for name, m in central() if m == model)


def central_modules(configured: list[str], model: str) -> list[str]:
    """The modules that register the configured methods' runners on `model`'s centralized task: a workflow rule
    lists their files as inputs, so that editing one re-runs that table and nothing else."""
    return sorted({central()[(name, model)][0] for name in configured if (name, model) in central()})


def module_file(module: str) -> str:
    """The source file of an importable module (an outside package's, for a rule's inputs)."""
    return _origin(module, module)


def names() -> list[str]:
    return sorted(modules())


def unknown(configured: list[str]) -> list[str]:
    return [m for m in configured if m not in modules()]


def outside_files(configured: list[str]) -> list[str]:
    """The source files of the configured methods that outside packages register: a workflow rule lists them as
    inputs (as common.smk's `code` lists the package's), so that editing one re-runs the jobs that run it."""
    files = []
    for name in configured:
        module = modules().get(name, "")
        if module and not module.startswith("unlearning."):
            files.append(_origin(name, module))
    return sorted(set(files))


if __name__ == "__main__":  # python -m unlearning.method_names: one registered name a line
    print("\n".join(names()))
