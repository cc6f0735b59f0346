"""The import closure that Snakemake rules list as code inputs (unlearning/sources.py): editing a module re-runs
the steps that import it and no others; what a registry imports by scanning its package is not in it (a rule adds
the plugins it runs)."""

from __future__ import annotations

import json
from pathlib import Path

from unlearning import methods
from unlearning.sources import module_files

ROOT = Path(methods.__file__).parents[1]


def _names(module: str) -> set[str]:
    return {Path(p).relative_to(ROOT).as_posix() for p in module_files(module)}


def _package(folder: str) -> set[str]:
    return {f"{folder}/{p.name}" for p in (ROOT / folder).glob("*.py")}


def test_steps_depend_on_the_modules_they_import_and_not_on_the_plugins_a_registry_scans():
    """The spine's steps run their methods through the registry: they depend on its protocol (methods/__init__.py)
    and on no method module; R2D's steps import R2D's baselines directly and depend on them."""
    spine = _names("unlearning.experiments.spine.steps")
    assert "methods/__init__.py" in spine and "plugins.py" in spine
    assert not (_package("methods") - {"methods/__init__.py"}) & spine
    assert "methods/r2d_baselines.py" in _names("unlearning.experiments.r2d.steps")


def test_the_common_grounds_jobs_depend_on_the_registries_but_on_no_plugin_module():
    """The common ground's jobs (parts.py) depend on the registries and the families' loader but on no method, family,
    attack or dataset module: common.smk adds the ones each job runs (issue 67)."""
    jobs = _names("unlearning.experiments.common_ground.parts")
    assert {"methods/__init__.py", "families/__init__.py", "evaluate/attacks/protocol.py"} <= jobs
    for folder in ("methods", "families", "data/sources"):
        assert not (_package(folder) - {f"{folder}/__init__.py"}) & jobs, folder
    assert "evaluate/attacks/lira.py" not in jobs  # RMIA's module is imported (the papers' RMIA); LiRA's by the scan
    # FATS' original runs FATS' training; the D-SGD original does not
    assert "methods/fats.py" in _names("unlearning.families.fats")
    assert "methods/fats.py" not in _names("unlearning.families.dsgd")


def _fresh(monkeypatch, root: Path, cache: Path):
    """unlearning.sources looking at the package under `root`, its import cache at `cache`, nothing memoised."""
    from unlearning import sources

    monkeypatch.setattr(sources, "ROOT", root)
    monkeypatch.setattr(sources, "CACHE", cache)
    monkeypatch.setattr(sources, "_USED", set())
    monkeypatch.setattr(sources, "_PARSED", [])
    for memo in (sources._file, sources._imports, sources._cached, sources.module_files):
        memo.cache_clear()
    return sources


def test_the_import_cache_follows_each_files_content(tmp_path, monkeypatch):
    """A file's imports are kept under its bytes' hash: an edit that changes them is seen (a key by path or by time
    would give the old closure), the cache keeps one key per file, and where the cache cannot be written (a file
    where its folder should be) every closure is still computed."""
    pkg = tmp_path / "unlearning"
    (pkg / "steps").mkdir(parents=True)
    files = {"__init__.py": "", "steps/__init__.py": "", "b.py": "", "c.py": "import json\n",
             "steps/a.py": "from __future__ import annotations\n\ndef run():\n    from .. import b\n"}
    for name, text in files.items():
        (pkg / name).write_text(text)
    cache = tmp_path / "cache" / "imports.json"

    def closure() -> set[str]:
        sources = _fresh(monkeypatch, pkg, cache)
        return {Path(p).relative_to(pkg).as_posix() for p in sources.module_files("unlearning.steps.a")}

    first = {"__init__.py", "steps/__init__.py", "steps/a.py", "b.py"}
    assert closure() == first and cache.is_file()
    assert closure() == first  # read from the cache
    (pkg / "steps" / "a.py").write_text("def run():\n    from ..c import json\n")
    assert closure() == {"__init__.py", "steps/__init__.py", "steps/a.py", "c.py"}
    keys = [k.partition(":")[0] for k in json.loads(cache.read_text())]
    assert sorted(keys) == sorted(set(keys)) and "unlearning.steps.a" in keys
    cache.unlink()
    cache.parent.rmdir()
    cache.parent.write_text("not a folder")
    (pkg / "steps" / "a.py").write_text("from .. import b, c\n")
    assert closure() == {"__init__.py", "steps/__init__.py", "steps/a.py", "b.py", "c.py"}
