"""The plugin registries (issue 67; docs/extending.md): one per kind of plugin, each filled by importing every module
of its package (not starting with `_`) and every entry point of the group `unlearning.methods`, whose declarations
(`@register`, `@register_central`, `@reference_attack`, or a dataset's or training family's module constants) add
to it; read alike at plan time (Snakemake, `check-params`) and at run time. A name declared by two modules, a module
that cannot be imported and an entry point that declares nothing are errors naming them.

A plugin declares its parameter block's keys (`params`: JSON-Schema properties, `param` and `group` below; a key's
`default` is what a missing key or block takes) and optionally `check`, what is wrong across keys; config.py checks
every configured block against them before any job.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

GROUP = "unlearning.methods"  # the entry-point group of outside packages (any kind of plugin, docs/extending.md)


class PluginError(ValueError):
    """A plugin cannot be loaded, or is declared twice; the message is one line naming the module."""


def _imported(what: str, load: Callable[[], object]) -> None:
    """Run `load` (an import); a PluginError naming `what` where it fails."""
    try:
        load()
    except PluginError:
        raise
    except Exception as err:  # a plugin module that cannot be imported stops the plan, naming it
        reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
        raise PluginError(f"{what}: cannot be imported ({reason})") from err


_LOADED: set[str] = set()  # the entry points (name = value) imported so far
REGISTRIES: list[Registry] = []


def load_entry_points() -> None:
    """Import every entry point of GROUP not imported yet (each declares plugins of any kind); one whose module
    declares none is an error naming it."""
    for ep in metadata.entry_points(group=GROUP):
        if f"{ep.name}={ep.value}" not in _LOADED:
            _LOADED.add(f"{ep.name}={ep.value}")
            what = f"entry point {ep.name!r} ({ep.value}, group {GROUP})"
            _imported(what, ep.load)
            module = ep.value.partition(":")[0]
            if not any(e.module == module for r in REGISTRIES for e in r._entries.values()):
                raise PluginError(f"{what}: its module declares no plugin; valid: a module that registers one "
                                  "(@register, @register_central, @reference_attack)")


@contextlib.contextmanager
def scratch() -> Iterator[None]:
    """Every registry as it is now (read in full first), restored on exit; inside, each is scanned again when next
    read, the entry points not imported yet with it (tests that declare a plugin of their own, or install one)."""
    saved = [(r, dict(r.load()._entries)) for r in list(REGISTRIES)]
    loaded = set(_LOADED)
    try:
        for r, _ in saved:
            r._state = "new"  # scanned again when next read (a module added to a package's path)
        yield
    finally:
        for r, entries in saved:
            r._entries.clear()
            r._entries.update(entries)
            r._state = "loaded"
        _LOADED.clear()
        _LOADED.update(loaded)


def constants(module, kind: str, fields: dict[str, tuple[Callable[[object], bool], str]]) -> list:
    """The values of `module`'s declarations `fields` ({name: (is it valid, what is valid)}), in order; a missing or
    invalid one is an error naming the module (a plugin declared by module constants: a dataset, a family)."""
    for key, (ok, valid) in fields.items():
        if not hasattr(module, key) or not ok(getattr(module, key)):
            what = f"= {getattr(module, key)!r}" if hasattr(module, key) else "is missing"
            raise PluginError(f"{kind} module {module.__name__}: {key} {what}; valid: {valid}")
    return [getattr(module, key) for key in fields]


class Registry:
    """{name: declaration} of one kind of plugin. The declarations fill it (`add`); reading it (`all`, `[name]`,
    `names`, `in`) first imports every module of `package` and every entry point, once. `collect`, where given, turns
    each imported module of the package into its declaration (plugins declared by module constants)."""

    def __init__(self, kind: str, package: str, collect: Callable[[Any], None] | None = None):
        self.kind, self.package, self.collect = kind, package, collect
        self._entries: dict[Any, Any] = {}
        self._state = "new"
        REGISTRIES.append(self)

    def add(self, name, entry) -> None:
        """Declare `entry` (which names its `module`) as `name`; a name another module declared is an error."""
        known = self._entries.get(name)
        if known is not None and known.module != entry.module:
            raise PluginError(f"{self.kind} {name!r}: declared by {known.module} and by {entry.module}; valid: one "
                              "module per name (rename one)")
        self._entries[name] = entry

    def load(self) -> Registry:
        if self._state != "new":
            return self
        self._state = "loading"
        try:
            package = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(package.__path__):
                if not info.name.startswith("_"):
                    name = f"{self.package}.{info.name}"
                    _imported(f"plugin module {name}", lambda name=name: importlib.import_module(name))
                    if self.collect is not None:
                        self.collect(sys.modules[name])
            load_entry_points()
        except BaseException:
            self._state = "new"  # read again, scanned again (its error again, or a fixed module)
            raise
        self._state = "loaded"
        return self

    def all(self) -> dict:
        return self.load()._entries

    def names(self) -> list:
        return sorted(self.all())

    def __contains__(self, name) -> bool:
        return name in self.all()

    def __iter__(self) -> Iterator:
        return iter(self.names())

    def __getitem__(self, name):
        entries = self.all()
        if name not in entries:
            raise PluginError(f"{self.kind} {name!r}: unknown; valid: {', '.join(map(str, self.names()))} "
                              f"(modules of {self.package}, or the entry points of {GROUP})")
        return entries[name]

    def file(self, name) -> str:
        """The source file of the module that declares `name` (a workflow rule's input)."""
        return module_file(self[name].module)


def module_file(module: str) -> str:
    found = sys.modules.get(module)
    if found is None or not getattr(found, "__file__", None):
        raise PluginError(f"{module}: not an imported module with a file")
    return found.__file__


# ----------------------------------------------------------------------------------------------- parameters

REQUIRED = object()  # a key without a default: the block must give it


def param(kind: str | list, default=REQUIRED, nullable: bool = False, **rules) -> dict:
    """One key of a plugin's parameter block as JSON Schema: `kind` a JSON type ("integer", "number", "boolean",
    "string", "array") or a list of the valid values; `rules` JSON Schema's own (minimum, exclusiveMinimum, maximum,
    exclusiveMaximum, minItems, items, ...); `nullable`: null is valid too. E.g. param("number", 0.1,
    exclusiveMinimum=0): a number > 0, 0.1 where not given."""
    one = {"enum": list(kind)} if isinstance(kind, list | tuple) else {"type": kind}
    out = {"oneOf": [{"type": "null"}, {**one, **rules}]} if nullable else {**one, **rules}
    return out if default is REQUIRED else {**out, "default": default}


def group(**keys: dict) -> dict:
    """A nested block of keys (each a `param` or a `group`): a missing one is its keys' defaults."""
    return {"type": "object", "additionalProperties": False, "properties": keys,
            "required": sorted(k for k, v in keys.items() if "default" not in v and "properties" not in v)}


def with_defaults(params: dict | None, block: dict | None) -> dict:
    """`block` with every declared default it lacks filled in, nested groups too (a missing group is its defaults)."""
    out = dict(block or {})
    for key, sub in (params or {}).items():
        if key not in out:
            if "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            elif "properties" in sub:
                out[key] = {}
        if isinstance(out.get(key), dict) and "properties" in sub:
            out[key] = with_defaults(sub["properties"], out[key])
    return out


def merged_params(kind: str, block: str, declared: list[tuple[str, dict | None]]) -> dict:
    """One parameter block read by several plugins (`declared`: [(module, params)]): the union of their keys; a key
    two of them declare differently is an error naming both."""
    out: dict = {}
    owner: dict[str, str] = {}
    for module, params in declared:
        for key, sub in (params or {}).items():
            if key in out and out[key] != sub:
                raise PluginError(f"{kind} block {block!r}: key {key!r} declared as {out[key]} by {owner[key]} and "
                                  f"as {sub} by {module}; valid: one declaration")
            out[key], owner[key] = sub, module
    return out
