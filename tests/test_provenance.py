"""The provenance file: what a run was made with (versions, platform, CPU, device, torch settings, git)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from importlib import metadata
from pathlib import Path

import pytest
import torch
import yaml

from unlearning import isa, provenance

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "config" / "tiny.yaml"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_direct_dependencies_are_the_projects_runtime_requirements():
    names = provenance.direct_dependencies()
    assert {"torch", "torchvision", "snakemake", "dvc", "numpy"} <= set(names)
    assert "pytest" not in names and "hypothesis" not in names  # the test extra is not a runtime dependency
    assert names == sorted(names)


def test_direct_dependencies_of_a_missing_project_is_a_clear_error():
    with pytest.raises(RuntimeError, match="no-such-project-xyz is not installed"):
        provenance.direct_dependencies("no-such-project-xyz")


def test_package_versions_match_importlib_and_mark_missing_ones():
    versions = provenance.package_versions(["torch", "no-such-package-xyz"])
    assert versions == {"torch": metadata.version("torch"), "no-such-package-xyz": None}
    assert torch.__version__.startswith(versions["torch"])


@pytest.mark.parametrize("text, model", [
    ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n",
     "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"),
    ("processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4\n", "BCM2835"),
])
def test_cpu_model_reads_cpuinfo(text, model):
    assert provenance.cpu_model(text) == model


def test_cpu_model_without_cpuinfo_falls_back_to_platform():
    assert provenance.cpu_model("") == (platform.processor() or platform.machine())


def test_git_state_clean_dirty_and_outside_a_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("1\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert provenance.git_state(repo) == {"commit": head, "dirty": False}
    (repo / "a.txt").write_text("2\n")
    assert provenance.git_state(repo) == {"commit": head, "dirty": True}
    outside = tmp_path / "plain"
    outside.mkdir()
    state = provenance.git_state(outside)
    assert state["commit"] is None and state["dirty"] is None and "not a git repository" in state["reason"]


def test_collect_on_cpu(tmp_path):
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    info = provenance.collect(torch.device("cpu"), tmp_path, now=now)
    assert info["time_utc"] == "2026-01-02T01:04:05+00:00"
    assert info["device"] == {"type": "cpu", "name": info["cpu"]["model"]}
    assert info["python"]["version"] == platform.python_version()
    assert info["platform"]["machine"] == platform.machine()
    assert info["cpu"]["logical_cores"] >= info["cpu"]["usable_cores"] >= 1
    assert info["torch"]["version"] == torch.__version__
    assert info["torch"]["threads"] == torch.get_num_threads()
    assert info["torch"]["cuda_build"] == torch.version.cuda
    assert set(info["torch"]["determinism"]) >= {"deterministic_algorithms", "cudnn_deterministic", "cudnn_benchmark"}
    assert info["packages"]["torch"] == metadata.version("torch")
    assert info["packages"].keys() == set(provenance.direct_dependencies())
    assert info["project"] == metadata.version("unlearning")
    assert info["git"]["commit"] is None  # tmp_path is no repository
    json.dumps(info)  # all plain JSON


def test_collect_names_the_cpu_code_paths_and_the_summary_says_which_setting(tmp_path, monkeypatch):
    """The record says which code paths the CPU kernels took (unlearning.isa): ATen's capability and the pinning
    variables; the reports' header line names the setting they match."""
    for key, value in isa.environment("portable", {}).items():
        monkeypatch.setenv(key, value)
    info = provenance.collect(torch.device("cpu"), tmp_path)
    assert info["cpu"]["aten_capability"] == torch.backends.cpu.get_cpu_capability()
    assert info["cpu"]["code_path_variables"] == {k: isa.SETTINGS["portable"].get(k) for k in isa.VARIABLES}
    assert "code paths portable" in provenance.summary_line(info)
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    assert "code paths custom" in provenance.summary_line(provenance.collect(torch.device("cpu"), tmp_path))
    for key in isa.VARIABLES:
        monkeypatch.delenv(key)
    assert "code paths native" in provenance.summary_line(provenance.collect(torch.device("cpu"), tmp_path))


def test_isa_environment_replaces_every_pinning_variable_and_keeps_the_rest():
    base = {"PATH": "/bin", "MKL_CBWR": "AVX2", "GLIBC_TUNABLES": "x"}
    assert isa.environment("native", base) == {"PATH": "/bin"}
    assert isa.environment("mkl_compatible", base) == {"PATH": "/bin", "MKL_CBWR": "COMPATIBLE"}
    with pytest.raises(ValueError, match="CPU setting 'sse': unknown; valid: native, avx2"):
        isa.environment("sse", base)
    printed = subprocess.run([sys.executable, "-m", "unlearning.isa", "portable"], capture_output=True, text=True,
                             check=True).stdout.split()  # `env $(python -m unlearning.isa portable) ...` splits so
    assert dict(line.split("=", 1) for line in printed) == isa.SETTINGS["portable"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_collect_on_cuda_names_the_gpu():
    info = provenance.collect(torch.device("cuda"))
    assert info["device"]["name"] == torch.cuda.get_device_name(0)
    assert info["torch"]["cuda_build"] and info["torch"]["cudnn"]


def test_cli_with_params_uses_the_pipelines_device_threads_and_determinism(tmp_path):
    out = tmp_path / "timings" / "provenance.json"
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        auto = yaml.safe_load(TINY.read_text())
        auto["engine"]["cpu_threads"] = "auto"  # the rule's threads decide
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(auto))
        assert provenance.main(["--out", str(out), "--params", str(tmp_path / "params.yaml"), "--repo", str(ROOT),
                                "--threads", "3"]) == 0
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])
    info = json.loads(out.read_text())
    assert info["torch"]["threads"] == 3  # the rule's threads (engine.cpu_threads: auto)
    assert info["torch"]["determinism"]["deterministic_algorithms"] is True
    assert info["device"]["type"] == ("cuda" if torch.cuda.is_available() else "cpu")  # tiny.yaml: device auto
    assert len(info["git"]["commit"]) == 40
    assert [p.name for p in out.parent.iterdir()] == ["provenance.json"]  # no temporary file left behind


def test_cli_refuses_a_bad_params_file_without_writing(tmp_path, capsys):
    bad = tmp_path / "params.yaml"
    bad.write_text("device: [unclosed\n")
    out = tmp_path / "provenance.json"
    assert provenance.main(["--out", str(out), "--params", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cli_refuses_cuda_where_there_is_none(tmp_path, capsys):
    out = tmp_path / "provenance.json"
    assert provenance.main(["--out", str(out), "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow  # starts the module's process (3 s): the full suite's, not the edit loop's
def test_module_entry_point(tmp_path):
    out = tmp_path / "p.json"
    subprocess.run([sys.executable, "-m", "unlearning.provenance", "--out", str(out), "--device", "cpu"],
                   check=True, cwd=ROOT, capture_output=True)
    assert json.loads(out.read_text())["device"]["type"] == "cpu"


@pytest.mark.slow  # starts a process (2 s): the full suite's, not the edit loop's
def test_deterministic_algorithms_sets_torchs_switch_without_importing_the_compiler():
    """seeding.deterministic_algorithms turns on what torch.use_deterministic_algorithms(True, warn_only=True) does
    for eager kernels, in a fresh process, without importing torch._inductor (about 1 s of every job's start)."""
    code = ("import sys, torch; from unlearning.seeding import deterministic_algorithms; "
            "deterministic_algorithms(); print(torch.are_deterministic_algorithms_enabled(), "
            "torch.is_deterministic_algorithms_warn_only_enabled(), 'torch._inductor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False"]
