"""The import closure that Snakemake rules list as code inputs (unlearning/sources.py): editing a module re-runs
the steps that import it and no others."""

from __future__ import annotations

from pathlib import Path

from unlearning import methods
from unlearning.sources import _imports, module_files


def _names(module: str, dynamic: bool = True) -> set[str]:
    return {Path(p).relative_to(Path(methods.__file__).parents[1]).as_posix() for p in module_files(module, dynamic)}


def test_steps_depend_on_the_method_modules_they_import_and_the_registry_on_all():
    """The spine's steps import their methods' modules: they depend on those, not on R2D's or RR-DU's method modules,
    which other steps import directly. The registry (methods/registry.py) imports any method by name: the common
    ground, which runs any configured method, depends on every module of the package."""
    spine = _names("unlearning.experiments.spine.steps")
    assert {"methods/retrain.py", "methods/finetune.py"} <= spine
    assert not {"methods/r2d.py", "methods/r2d_baselines.py", "methods/rrdu.py", "methods/hdus.py",
                "methods/registry.py"} & spine
    assert "methods/r2d_baselines.py" in _names("unlearning.experiments.r2d.steps")
    common = _names("unlearning.experiments.common_ground.decentralized")
    package = Path(methods.__file__).parent
    assert {f"methods/{p.name}" for p in package.glob("*.py")} <= common


def test_the_common_grounds_jobs_depend_on_the_modules_they_import_by_name_only_as_the_workflow_lists_them():
    """Without the by-name imports, the common ground's jobs (parts.py) depend on the registry and the families'
    loader but on no method module and no family module: common.smk adds the one each job runs (issue 55 item 3)."""
    jobs = _names("unlearning.experiments.common_ground.parts", dynamic=False)
    assert {"methods/registry.py", "methods/__init__.py", "experiments/common_ground/families/__init__.py"} <= jobs
    assert not {name for name in jobs if name.startswith("experiments/common_ground/families/")} - {
        "experiments/common_ground/families/__init__.py"}
    assert not {f"methods/{p.name}" for p in Path(methods.__file__).parent.glob("*.py")} - {
        "methods/__init__.py", "methods/registry.py"} & jobs
    # FATS' original runs FATS' training; the D-SGD original does not
    assert "methods/fats.py" in _names("unlearning.experiments.common_ground.families.fats", dynamic=False)
    assert "methods/fats.py" not in _names("unlearning.experiments.common_ground.families.dsgd", dynamic=False)


def test_a_dynamic_import_without_a_modules_list_counts_its_whole_package(tmp_path, monkeypatch):
    from unlearning import sources

    package = tmp_path / "unlearning" / "plugins"
    package.mkdir(parents=True)
    for name in ("a", "b"):
        (package / f"{name}.py").write_text("")
    (package / "__init__.py").write_text("from importlib import import_module\n\n\n"
                                         "def load(name):\n    return import_module(f'{__name__}.{name}')\n")
    monkeypatch.setattr(sources, "ROOT", tmp_path / "unlearning")
    assert _imports(package / "__init__.py") >= {"unlearning.plugins.a", "unlearning.plugins.b"}
    (package / "__init__.py").write_text("from importlib import import_module\n\nMODULES = ('a',)\n\n\n"
                                         "def load(name):\n    return import_module(f'{__name__}.{name}')\n")
    found = _imports(package / "__init__.py")
    assert "unlearning.plugins.a" in found and "unlearning.plugins.b" not in found
