"""The import closure that Snakemake rules list as code inputs (unlearning/sources.py): editing a module re-runs
the steps that import it and no others; what a registry imports by scanning its package is not in it (a rule adds
the plugins it runs)."""

from __future__ import annotations

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
