"""docs/extending.md's worked example through the workflow (issue 55, item 8): the outside package
examples/gradient_ascent, installed into a throwaway folder (conftest's `example_install`; the locked .venv
untouched), configured in params.yaml and run by Snakemake in a copy of the session's tiny run. Only the method's
own jobs (one per setting), the settings' put-together and the report run: no original and no reference model is
trained again; the method's row is on the common ground's tables of both settings, attacked, with a removal status
and "no certificate" in the audit column. Editing one of the package's own method modules, or its params block,
re-runs its jobs alone in the whole workflow (issue 55, item 3)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from conftest import docs_module, workflow_env

LABEL = "gradient ascent (example package)"
# one method added to (or edited in) both settings: its job per setting, each setting put together, the report
ONE_METHOD = {"common_part_method": 2, "common_part_combine": 2, "common_ground_report": 1}


def rules_run(log: str) -> dict[str, int]:
    """{rule: jobs} of Snakemake's "Job stats" table."""
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m[1] != "total"}


def copy_with_dry_run(tiny_run: Path, tmp_path: Path):
    """A copy of the tiny run, and a function returning {rule: jobs} of a dry run of its whole workflow ({} when
    nothing is out of date)."""
    work = tmp_path / "run"
    shutil.copytree(tiny_run, work, symlinks=True)
    env = {**workflow_env(), "PYTHONPATH": str(work / "src")}

    def dry() -> dict[str, int]:
        out = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "-n"], cwd=work,
                             capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr[-3000:]
        return rules_run(out.stdout + out.stderr) if "Job stats:" in out.stdout + out.stderr else {}

    return work, dry


def test_the_example_package_is_run_attacked_and_judged_by_the_workflow(tiny_run, example_install, tmp_path):
    work = tmp_path / "run"
    shutil.copytree(tiny_run, work, symlinks=True)
    params = yaml.safe_load((work / "params.yaml").read_text())
    dec = params["common"]["decentralized"]
    for setting in ("client", "sample"):
        dec[setting]["methods"].append("gradient_ascent")
    dec["gradient_ascent"] = {"rounds": 2, "lr": 0.1}
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**workflow_env(), "PYTHONPATH": os.pathsep.join([str(work / "src"), str(example_install)])}
    snakemake = Path(sys.executable).parent / "snakemake"
    run = subprocess.run([str(snakemake), "--cores", "2", "reports/common_ground/index.md"], cwd=work,
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    seeds = len(dec["seeds"])
    assert rules_run(run.stdout + run.stderr) == ONE_METHOD

    for setting in ("client", "sample"):
        table = pd.read_csv(work / "reports" / "common_ground" / f"{setting}.csv")
        row = table[table.method == LABEL]
        assert len(row) == 1, f"{setting}: {table.method.tolist()}"
        row = row.iloc[0]
        assert row.seeds == seeds
        for metric in ("test_accuracy", "forget_accuracy", "loss_threshold_auc", "rmia_auc", "rmia_tpr_at_1pct_fpr"):
            assert 0.0 <= row[metric] <= 1.0, (setting, metric, row[metric])
        assert row.communication_floats > 0 and row.gradient_evaluations > 0
        assert re.match(r"(removed|partly removed|kept|uninformative): ", row.status), row.status
        assert row.audit == "no certificate"
    assert LABEL in (work / "reports" / "common_ground" / "index.md").read_text()

    # editing the method's module re-runs its jobs: the installed file is an input of the jobs that run it
    module = example_install / "gradient_ascent.py"
    module.write_text(module.read_text() + "\n")
    dry = subprocess.run([str(snakemake), "--cores", "1", "-n", "reports/common_ground/index.md"], cwd=work,
                         capture_output=True, text=True, env=env)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert rules_run(dry.stdout + dry.stderr) == ONE_METHOD


def test_editing_one_method_module_or_its_params_reruns_its_jobs_alone(tiny_run, tmp_path):
    """A dry run of the whole workflow after touching methods/salun.py lists SalUn's two jobs (client, sample), the
    two put-togethers, its jobs on the two centralized tables and their put-togethers and the common ground's
    report, nothing else; touching methods/d2d.py its convex table's job and the two centralized put-togethers (the
    MLP's names why D2D does not run there); a change to SalUn's decentralized block its decentralized jobs alone. A
    change to a training family's block re-runs that family's originals and the methods that start there."""
    work, dry = copy_with_dry_run(tiny_run, tmp_path)

    assert dry() == {}
    downstream = {"index": 1, "all": 1}  # the front page reads the common ground's summary; the default target
    module = work / "src" / "unlearning" / "methods" / "salun.py"
    text = module.read_text()
    central = {"common_central_method": 2, "common_central_combine": 2}  # SalUn's runners on both centralized tables
    module.write_text(text + "\n")  # an edit (Snakemake compares an input's checksum, not only its time)
    assert dry() == {**ONE_METHOD, **central, **downstream}
    module.write_text(text)
    assert dry() == {}
    d2d = work / "src" / "unlearning" / "methods" / "d2d.py"  # convex only; the MLP's table reads its reason why not
    d2d.write_text(d2d.read_text() + "\n")
    # its runner's job, and both tables put together (the MLP's names why D2D does not run there)
    assert dry() == {"common_central_method": 1, "common_central_combine": 2, "common_ground_report": 1,
                     **downstream}
    d2d.write_text(d2d.read_text()[:-1])
    assert dry() == {}
    params = yaml.safe_load((work / "params.yaml").read_text())
    dec = params["common"]["decentralized"]
    dec["salun"]["ratio"] /= 2
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert dry() == {**ONE_METHOD, **downstream}
    dec["salun"]["ratio"] *= 2
    dec["fats"]["clients_per_round"] += 1  # FATS' original and FATS (in the client setting only)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert dry() == {"common_part_original": len(dec["seeds"]), "common_part_method": 1, "common_part_combine": 1,
                     "common_ground_report": 1, **downstream}


def test_a_new_plugin_module_reruns_nothing_until_it_is_configured(tiny_run, tmp_path):
    """docs/extending.md's method, attack and dataset modules, added to the package of a built workflow: nothing
    re-runs (the registries import them, but a job's inputs are the plugins it runs); the method configured in the
    client setting runs its job, both settings' put-togethers (the sample setting's names why it does not apply
    there) and the report, and trains nothing again."""
    work, dry = copy_with_dry_run(tiny_run, tmp_path)

    package = work / "src" / "unlearning"
    for path, heading in ((package / "methods" / "my_method.py",
                           "src/unlearning/methods/my_method.py  (or my_package/my_method.py, see below)"),
                          (package / "evaluate" / "attacks" / "confidence.py",
                           "src/unlearning/evaluate/attacks/confidence.py"),
                          (package / "data" / "sources" / "kmnist.py", "src/unlearning/data/sources/kmnist.py")):
        path.write_text(docs_module(heading))
    assert dry() == {}
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["common"]["decentralized"]["client"]["methods"].append("my_method")
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert dry() == {"common_part_method": 1, "common_part_combine": 2, "common_ground_report": 1, "index": 1,
                     "all": 1}
