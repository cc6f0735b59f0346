"""Shared fixtures: the repository root, a copy of params.yaml to edit, and the device the suite runs on.

`pytest --device {auto,cpu,cuda}` picks the default device (auto: CUDA when torch sees it). Tests that build
an experiment run there (the `tiny` fixture's params carry it as `device`); a test that needs the CPU
sets `device: cpu` in its own config. Tests marked `cuda` need a CUDA device and are skipped, with the reason,
where there is none. On CUDA, exact comparisons hold under `torch.use_deterministic_algorithms(True)`, which
cuBLAS honours only with CUBLAS_WORKSPACE_CONFIG set before CUDA starts: it is set here, at import, and
subprocesses (the workflow tests) inherit it.

Every workflow a test runs but the quick regression computes on the pinned CPU code paths (`workflow_env`;
unlearning.isa's `PINNED` setting, tests/regression/README.md), so that its bytes are those of any x86 machine; the
quick regression computes natively, within tolerances that cover every CPU's spread (test_regression.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before torch initialises CUDA

import pytest  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ("auto", "cpu", "cuda")
PINNED = "portable"  # the CPU code paths the suite's workflows compute under (unlearning.isa), the regression's not


def docs_module(heading: str) -> str:
    """The Python module docs/extending.md shows under its first line `# <heading>` (its worked examples)."""
    text = (ROOT / "docs" / "extending.md").read_text()
    return text.split(f"# {heading}\n", 1)[1].split("```", 1)[0]


def workflow_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a workflow run: `base` (default: this process's) with the pinned code paths."""
    from unlearning import isa

    return isa.environment(PINNED, base)


def pytest_addoption(parser):
    parser.addoption("--device", choices=DEVICES, default="auto",
                     help="the device tests run on: auto (cuda if torch sees it, else cpu), cpu or cuda")


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError("--device cuda: torch sees no CUDA device; valid here: auto, cpu")
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)


def pytest_configure(config):
    config.test_device = resolve_device(config.getoption("--device"))


def pytest_report_header(config):
    return f"test device: {config.test_device} (--device {config.getoption('--device')})"


# fixtures that run the workflow (Snakemake or `dvc repro`): a test using one is marked slow, so that
# `pytest -m "not slow"` is the edit loop (README, under 2 minutes); a test that plans the workflow or starts processes
# for seconds is marked slow where it is defined; the full suite (.ci/run) runs them all
WORKFLOW_FIXTURES = {"tiny_run", "two_runs", "quick_run", "workdir", "repo", "slurm_env", "columns_run"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if WORKFLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    # the tests that read a background run last; before them the dense ones: after the background run has ended, a
    # single-core test leaves a core idle (Slurm's one job at a time, pytest's own tests), a dense one none. Measured
    # 2026-12-03: 174 idle core-seconds with the columns run early, 177 with it late on a faster draw (the background
    # run then ended 6 minutes before the suite, not 4.5): no gain shown yet
    items.sort(key=lambda item: (bool(BACKGROUND.keys() & set(getattr(item, "fixturenames", ()))),
                                 item.get_closest_marker("dense") is not None))
    if config.test_device.type == "cuda":
        return
    reason = ("needs CUDA: torch sees no CUDA device" if not torch.cuda.is_available()
              else "needs CUDA: the suite runs with --device cpu")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))


# Workflows started as the session begins, at a lower priority (`LOWER_PRIORITY`), so that their jobs take the cycles
# the other tests leave idle (Snakemake's and DVC's start-ups, pytest's own single-threaded tests) without slowing
# them; the tests that read them run last, when the run has the cores to itself. A test module registers
# `fixture name -> start(folder)`, which starts the run and returns (its process, its folder), or None where the
# fixture should decide alone (it then runs it itself); the fixture takes the started run with `started(name)` and
# waits for it. Only a run that a selected test reads is started.
BACKGROUND: dict[str, Callable[[Path], tuple[subprocess.Popen, Path] | None]] = {}
_STARTED: dict[str, tuple[subprocess.Popen, Path]] = {}
LOWER_PRIORITY = ["nice", "-n", "10"]  # a background run's command prefix (coreutils); its jobs inherit it


@pytest.fixture(scope="session", autouse=True)
def background_workflows(request, tmp_path_factory):
    used = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
    for name in sorted(used & BACKGROUND.keys()):
        if (run := BACKGROUND[name](tmp_path_factory.mktemp(name))) is not None:
            _STARTED[name] = run
    yield
    for proc, _ in _STARTED.values():  # the session ended before the test that reads it: Snakemake stops its jobs
        if proc.poll() is None:
            proc.terminate()
            proc.wait()


def started(name: str) -> tuple[subprocess.Popen, Path] | None:
    """The run `background_workflows` started for fixture `name`, or None."""
    return _STARTED.pop(name, None)


@pytest.fixture(scope="session")
def device(pytestconfig) -> torch.device:
    """The device tests run on (--device)."""
    return pytestconfig.test_device


@pytest.fixture
def params() -> dict:
    """params.yaml as shipped (device: auto)."""
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def tiny_params(params: dict) -> dict:
    """The shipped params.yaml shrunk to a synthetic dataset, 4 clients and 3 rounds. One torch thread per job
    (engine.cpu_threads: 1), so that Snakemake runs the tiny jobs, mostly interpreter start-up, two at a time on
    two cores; the results are byte-identical at any --cores."""
    params["engine"]["cpu_threads"] = 1
    params["spine"].update(dataset="synthetic", mlp_hidden=16, clients=4, methods=["retrain", "finetune"])
    params["spine"]["partition"].update(kind="iid", train_per_client=40)
    params["spine"]["train"].update(rounds=3, batch_size=16, lr=0.1, checkpoint_every=1)
    params["spine"]["forget"].update(kind="client", client=3)
    params["spine"]["finetune"].update(rounds=2)
    params["spine"]["eval"]["mia_samples"] = 30
    params["spine"]["quick"] = {}
    pdudt = params["pdudt"]
    # MNIST's column on the 5,000-digit subset (issue 38), through the same rules; 60 digits a client (by_dataset)
    pdudt.update(datasets=["synthetic", "mnist"], models={"synthetic": "mlp", "mnist": "mlp"}, mlp_hidden=16,
                 clients=4, sigmas=[0.001, 0.01], default_sigma=0.001, quick={}, paper={},
                 by_dataset={"mnist": {"partition": {"train_per_client": 60}}})
    pdudt["partition"].update(train_per_client=40)
    pdudt["train"].update(rounds=3, batch_size=16, lr=0.1, checkpoint_every=3)
    pdudt["forget"].update(client=3)
    pdudt["pdudt_es"]["es_rounds"] = 2
    pdudt["subsequent"].update(rounds=2, lr=0.1, eval_every=1)
    pdudt["eval"]["mia_samples"] = 30
    pdudt["mia"].update(shadow_models=2, shadow_epochs=2, repetitions=5, max_samples=20)
    pdudt["timing"]["repeats"] = 2
    pdudt["settings"] = {"datasets": ["synthetic"],  # one candidate: the settings table and the pretrained start
                         "candidates": {"pretrained": {"init": {"kind": "public"}, "methods": ["pdudt"]}}}
    params["common"]["centralized"].update(dataset="synthetic", trials=8, burn_in=20, lu_burn_in=20, d2d_burn_in=30,
                                           d2d_steps=2, r2d_burn_in=20)
    params["common"]["centralized"]["hf"].update(epochs=2, batch_size=32, rho_iterations=20)
    params["common"]["centralized"]["cns"].update(epochs=2, batch_size=32)
    params["common"]["centralized"]["cns"]["lissa"].update(s1=1, s2=10)
    for baseline in ("neggrad_plus", "salun"):  # the uncertified baselines on both centralized tables
        params["common"]["centralized"][baseline].update(steps=5)
    mlp = params["common"]["mlp"]
    mlp.update(widths=[8], trials=8)
    mlp["r2d"].update(epochs=3, batch_size=32)
    mlp["r2d"]["estimate"].update(samples=3)
    dec = params["common"]["decentralized"]  # every method of both settings, 2 seeds (the report's mean +- std)
    dec.update(dataset="synthetic", mlp_hidden=16, clients=4, seeds=[0, 1])
    dec["partition"].update(train_per_client=40)
    dec["train"].update(rounds=3, batch_size=16, local_epochs=1, checkpoint_every=3)
    dec["client"]["forget"].update(client=3)
    dec["sample"]["forget"].update(client=3)
    dec["finetune"].update(rounds=2)
    dec["pdudt"].update(es_rounds=2)
    dec["fats"].update(clients_per_round=2)
    dec["attack"].update(reference_models=2, reference_counts=[2, 4], reference_epochs=2, mia_samples=30)
    dec["rrdu"]["train"].update(hops=4, epochs=1)
    dec["rrdu"]["unlearn"].update(hops=4)
    params["common"].update(quick={}, paper={})
    sglu = params["sglu"]
    sglu.update(datasets=["synthetic", "mnist"], truncate_to=16, trials=2, partitions=None, quick={}, paper={},
                burn_in={"32": 10, "full": 60}, lam_per_n=2.5e-4, radius=10.0)  # n = 400: m = 0.1, c = 0.71
    sglu["pairs"]["synthetic"], sglu["extractors"]["synthetic"] = [0, 1], "pixels"
    sglu["table3"].update(epsilons=[0.5, 5], batch_sizes=[32, "full"])
    sglu["fig3a"].update(epsilons=[0.5, 5], batch_sizes=[32, "full"], d2d_steps=[1])
    sglu["fig3b"].update(requests=4, batch_sizes=[32, "full"], lu_group_sizes=[2])
    sglu["fig3d"].update(sigmas=[0.5, 1.0], batch_sizes=[32, "full"], requests=3)
    sglu["fig3c"].update(sigmas=[0.5, 1.0], batch_sizes=[32, "full"], projection=[True, False], trials=None)
    sglu["baselines"].update(d2d_burn_in=30, lu_burn_in=30)
    cdfl = params["cdfl"]
    # the synthetic column alone: the MNIST subset's loader and labels are tested through SGLU's and PDUDT's tiny
    # columns (issue 54: one is enough; RR-DU's and CDFL's cost about 115 job-seconds a tiny run)
    cdfl.update(datasets=["synthetic"], models={"synthetic": "mlp", "mnist": "logreg"}, clients=4, seeds=[0],
                quick={}, paper={})
    cdfl["partition"].update(kinds=["iid"], train_per_client=40, min_size=10)
    cdfl["topology"].update(kinds=["ring"])
    cdfl["train"].update(rounds=3, batch_size=16, lr=0.1, optimizer="sgd")
    cdfl["calibration"] = {"optimizers": ["sgd", "adam"], "min_rounds": 1, "max_rounds": 3, "within": 3.0}
    cdfl["eval"].update(test_images=200, mia_fit=50)
    cdfl["convex"].update(dataset="synthetic", lambdas=[0.01, 0.1], train_per_client=40, image_side=7)
    r2d = params["r2d"]  # one image stand-in (built from the synthetic images), eICU absent (shows as missing)
    r2d.update(datasets=["fmnist_users", "eicu"], seeds=[0], baseline_seed=0, epsilons=[1, 40], table_epsilons=[40],
               quick={}, paper={})
    r2d["stand_ins"] = {"fmnist_users": {**r2d["stand_ins"]["fmnist_users"], "source": "synthetic", "pair": [0, 1],
                                         "users": 8, "per_user": 10, "ood_users": 4, "ood_per_user": 5}}
    r2d["model"]["widths"] = [16, 8]
    r2d["train"].update(max_epochs=4, batch_size=32)
    r2d["estimate"]["L_samples"] = 2
    r2d["rewind"] = {"eicu": [0.5, 1.0], "lacuna": [0.5, 1.0]}
    r2d["mia"].update(n_splits=2, n_repeats=1)
    r2d["hf"].update(epochs=2, batch_size=32, rho_iterations=5)
    r2d["cns"].update(epochs=2)
    r2d["cns"]["lissa"].update(s1=1, s2=3, bs=4)
    rrdu = params["rrdu"]
    # the synthetic column alone (as CDFL's above)
    rrdu.update(datasets={"synthetic": dict(rrdu["datasets"]["mnist"])},
                clients=4, train_per_client=30, seeds=[0],
                sweeps={"rho": [5.0], "L": [0.1], "epsilon": [0.1], "delta": [1.0e-4]},
                table3={"ps": [0.0, 1.0], "semantics": ["adam_fresh"]},
                quick={}, paper={})
    rrdu["train"].update(hops=3, batch_size=16)
    rrdu["unlearn"].update(hops=4, streams=2)
    rrdu["backdoor"].update(test_size=100)
    rrdu["baselines"].update(scratch_factors=[1])
    rrdu["eval"].update(test_images=100, every=2)
    return params


@pytest.fixture(scope="session")
def tiny(tmp_path_factory, device):
    """A synthetic experiment on disk: (params, features path, split path); params' device is the test device."""
    from unlearning.experiments.spine import steps

    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    params = tiny_params(base)
    params["device"] = device.type
    out = tmp_path_factory.mktemp("tiny")
    steps.step_prepare(params, "synthetic", str(out / "processed.safetensors"))
    steps.step_features(params, str(out / "processed.safetensors"), str(out / "features.safetensors"))
    steps.step_split(params, "spine", str(out / "features.safetensors"), str(out / "split.safetensors"))
    return params, str(out / "features.safetensors"), str(out / "split.safetensors")


def checkout_copy(dest: Path) -> Path:
    """A copy of the checkout's files (tracked and untracked, not ignored; modification times kept) at `dest`, as a
    fresh clone would hold them after the bootstrap: a workflow run there lists the package's sources by relative path
    (common.smk's `code`), so that its Snakemake metadata stays valid when the whole directory is copied on. The
    package's `__pycache__` comes along (the bootstrap's bytecode, valid for the copies' sources, whose modification
    times are kept, and sources.py's import cache): else each of the copy's interpreters compiles the package again
    (PYTHONDONTWRITEBYTECODE keeps it from writing the bytecode), and its first Snakemake parses every import."""
    import shutil
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    listed += [str(f.relative_to(ROOT)) for f in (ROOT / "src").rglob("__pycache__/*")]
    for name in listed:
        if name and (ROOT / name).is_file() and not name.startswith((".venv", "dvc.lock")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """The whole workflow on tests/config/tiny.yaml, run once per session with `snakemake --cores 2` on the pinned
    code paths, in a copy of the checkout (`checkout_copy`) whose own package it runs: test_pipeline reads its
    reports and re-runs part of it to compare bytes; test_slurm and test_crash_safety compare their runs with it,
    and test_dvc starts its DVC repository from a copy of it (one tiny run fewer each). Snakemake's output is in its
    snakemake.log."""
    import shutil
    import subprocess
    import sys

    workdir = checkout_copy(tmp_path_factory.mktemp("tiny_run"))
    shutil.copy(ROOT / "tests" / "config" / "tiny.yaml", workdir / "params.yaml")
    snakemake = Path(sys.executable).parent / "snakemake"
    run = subprocess.run([str(snakemake), "--cores", "2"], cwd=workdir, capture_output=True, text=True,
                         env={**workflow_env(), "PYTHONPATH": str(workdir / "src")})
    (workdir / "snakemake.log").write_text(run.stdout + run.stderr)  # what Snakemake printed (the jobs it ran)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


@pytest.fixture(scope="session")
def example_install(tmp_path_factory) -> Path:
    """examples/gradient_ascent installed as `pip install` installs a package (its module and a dist-info declaring
    its entry point), into a throwaway folder: the locked .venv stays untouched. Built from a copy, so that the
    build leaves nothing in the checkout."""
    import shutil
    import subprocess
    import sys

    source, target = tmp_path_factory.mktemp("example_src") / "pkg", tmp_path_factory.mktemp("example_install")
    shutil.copytree(ROOT / "examples" / "gradient_ascent", source)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)], check=True, capture_output=True)
    return target


@pytest.fixture
def example_method(example_install, monkeypatch):
    """The example package's method, found as installed (its entry point) for the test's duration."""
    import sys

    from unlearning.plugins import scratch

    monkeypatch.syspath_prepend(str(example_install))
    with scratch():  # the registries find its entry point, and forget it after the test
        yield "gradient_ascent"
    sys.modules.pop("gradient_ascent", None)
    monkeypatch.undo()


@pytest.fixture
def plugin_scratch():
    """The plugin registries restored after the test (a test that declares a plugin of its own)."""
    from unlearning.plugins import scratch

    with scratch():
        yield


@pytest.fixture
def no_tf32():
    """Full float32 matrix products and convolutions on CUDA while a test runs: cuDNN rounds convolution inputs
    to TF32 (10 mantissa bits) by default, which formula checks at float32 tolerances cannot absorb. Whether
    TF32 may run the pipeline is the engine's option, measured there. No effect on the CPU."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture
def one_torch_thread():
    """One torch CPU thread during the test (small problems run faster on contended cores), restored after: a
    module-level torch.set_num_threads would change every later test of the session."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)
