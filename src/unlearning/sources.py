"""The package's source files a module runs: the closure of its imports inside the package, found statically.

Snakemake rules list these files as inputs (workflow/rules/common.smk), so that editing a module re-runs
exactly the steps that import it, directly or not, and nothing else. Imports inside functions count too:
the package imports its steps lazily. What a registry imports by scanning its package (plugins.py) does not count:
a rule that runs a plugin lists that plugin's module's files itself (common.smk's `plugin_code`), so that a new
plugin module re-runs nothing until it is configured.

Parsing is most of the cost (about 1.4 s of every Snakemake start), so each file's imports are kept, keyed by its
bytes' hash, in the package's `__pycache__/imports.json`, as Python keeps its bytecode there: a file whose bytes
changed is parsed again, and a folder Python cannot write to is parsed every time.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path

PACKAGE = "unlearning"
ROOT = Path(__file__).resolve().parent
CACHE = ROOT / "__pycache__" / "imports.json"  # "module:sha256 of its bytes" -> the modules it imports


@cache
def _file(module: str) -> Path | None:
    """The file of `unlearning.a.b`: a/b.py or a/b/__init__.py; None outside the package or if absent (asked once per
    process: the workflow asks for some fifty closures that share most of their files)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _cached() -> dict[str, list[str]]:
    """The imports kept in CACHE ("module:sha256" -> modules; empty where there is none or it cannot be read),
    updated in place by `_imports` and written back by `_write_cache`."""
    try:
        known = json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


_USED: set[str] = set()  # the keys this process looked up
_PARSED: list[str] = []  # the keys it parsed and has not written yet


def _write_cache() -> None:
    """CACHE written whole to a temporary, then renamed over it, keeping one key per module looked up here; where
    it cannot be written (a read-only checkout), the files are parsed again next time."""
    used = {k.partition(":")[0] for k in _USED}
    known = {k: v for k, v in _cached().items() if k in _USED or k.partition(":")[0] not in used}
    try:
        CACHE.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=CACHE.parent, prefix=".imports-")
        with os.fdopen(fd, "w") as f:
            json.dump(known, f, sort_keys=True)
        os.chmod(tmp, 0o644)  # as Python's bytecode beside it
        os.replace(tmp, CACHE)
    except OSError:
        pass
    _PARSED.clear()


@cache
def _imports(path: Path) -> frozenset[str]:
    """Modules named by the import statements of `path`, made absolute (parsed once per content: CACHE)."""
    text = path.read_bytes()
    key = f"{_module_of(path)}:{hashlib.sha256(text).hexdigest()}"
    _USED.add(key)
    if key not in _cached():
        _cached()[key] = sorted(_parse_imports(path, text))
        _PARSED.append(key)
    return frozenset(_cached()[key])


def _parse_imports(path: Path, text: bytes) -> frozenset[str]:
    package = _module_of(path) if path.name == "__init__.py" else _module_of(path).rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(text, str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from . import steps`
    return frozenset(found)


@cache
def module_files(module: str) -> tuple[str, ...]:
    """Sorted absolute paths of `module` and everything it imports in the package, with the `__init__.py` of
    every package on the way."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # parent packages run their __init__ first
            path = _file(".".join(parts[:i]))
            if path is not None and path not in seen:
                seen.add(path)
                todo.extend(_imports(path))
    if _file(module) is None:
        raise ValueError(f"{module}: not a module of the {PACKAGE} package")
    if _PARSED:
        _write_cache()
    return tuple(sorted(str(p) for p in seen))
