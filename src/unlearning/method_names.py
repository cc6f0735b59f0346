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


def _registered_in(path: Path) -> dict[str, dict[str, str]]:
    """{name: its `does_not_apply` where written as a literal, else {}} of each `@register(name, ...)` in `path`."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for dec in getattr(node, "decorator_list", []):
            if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "register" and dec.args
                    and isinstance(dec.args[0], ast.Constant)):
                why = next((k.value for k in dec.keywords if k.arg == "does_not_apply"), None)
                try:
                    found[dec.args[0].value] = ast.literal_eval(why) if why is not None else {}
                except ValueError:  # not a literal: the job checks it (methods/registry.py)
                    found[dec.args[0].value] = {}
    return found


@cache
def _package() -> dict[str, tuple[str, dict[str, str]]]:
    return {name: (f"unlearning.methods.{path.stem}", why) for path in sorted(METHODS_DIR.glob("*.py"))
            if path.stem not in ("__init__", "registry") for name, why in _registered_in(path).items()}


def does_not_apply(name: str) -> dict[str, str]:
    """{common-ground setting: why not} as this package's module declares it literally ({} for outside methods)."""
    return _package().get(name, ("", {}))[1]


@cache
def modules() -> dict[str, str]:
    """{method name: the module that registers it}, the package's and the entry points'."""
    found = {name: module for name, (module, _) in _package().items()}
    for ep in metadata.entry_points(group=GROUP):
        if ep.name in found:
            raise ValueError(f"entry point {ep.name!r} ({ep.value}): the method name is taken by {found[ep.name]}")
        found[ep.name] = ep.value.partition(":")[0]
    return found


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
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.origin:
                raise ValueError(f"entry point {name!r}: its module {module!r} is not importable")
            files.append(spec.origin)
    return sorted(set(files))


if __name__ == "__main__":  # python -m unlearning.method_names: one registered name a line
    print("\n".join(names()))
