"""What a run was made with: package versions, Python, platform, CPU, device, torch settings, git commit, time.

One JSON file per run, kept apart from the deterministic results (like the wall times), because it
differs between machines that produce identical numbers:

    python -m unlearning.provenance --out reports/provenance.json [--params params.yaml]

With `--params`, the device and torch's thread count are the ones the pipeline's steps use for that file
(its `device` and `engine.cpu_threads`), and deterministic algorithms are switched on as the steps do.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import torch

from . import isa
from .files import write_json

PROJECT = "unlearning"


def direct_dependencies(project: str = PROJECT) -> list[str]:
    """Names of the installed project's own runtime dependencies (pyproject.toml's [project] dependencies)."""
    try:
        requires = metadata.requires(project) or []
    except metadata.PackageNotFoundError as err:
        raise RuntimeError(f"{project} is not installed, so its dependencies are unknown; "
                           "run scripts/bootstrap.sh (or pip install --no-deps -e .)") from err
    runtime = [r for r in requires if "extra ==" not in r]
    return sorted({re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() for r in runtime})


def package_versions(names: list[str]) -> dict[str, str | None]:
    """Installed version of each distribution; None for one that is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model(cpuinfo: str) -> str:
    """The CPU's model name from /proc/cpuinfo text (x86 "model name", ARM "Hardware"/"Model"), else platform's."""
    for key in ("model name", "Hardware", "Model", "cpu model"):
        match = re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
        if match:
            return match.group(1).strip()
    return platform.processor() or platform.machine()


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def device_info(device: torch.device) -> dict:
    """The device used: its type and name (the CUDA device's name, or the CPU's model)."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return {"type": "cuda", "index": index, "name": torch.cuda.get_device_name(index),
                "capability": ".".join(map(str, torch.cuda.get_device_capability(index)))}
    return {"type": device.type, "name": cpu_model(_read_cpuinfo()) if device.type == "cpu" else device.type}


def torch_info() -> dict:
    """torch's build (CUDA, cuDNN), threads and the settings that decide whether kernels are deterministic."""
    cudnn = torch.backends.cudnn
    return {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cuda_devices": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "cudnn": cudnn.version() if cudnn.is_available() else None,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "determinism": {
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "cudnn_enabled": cudnn.enabled,
            "cudnn_deterministic": cudnn.deterministic,
            "cudnn_benchmark": cudnn.benchmark,
            "cudnn_allow_tf32": cudnn.allow_tf32,
            "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        },
    }


def git_state(repo: str | Path) -> dict:
    """The commit checked out in `repo` and whether tracked or untracked (not ignored) files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain").strip())
    except FileNotFoundError:
        return {"commit": None, "dirty": None, "reason": "git is not installed"}
    except subprocess.CalledProcessError as err:
        return {"commit": None, "dirty": None, "reason": (err.stderr.strip().splitlines() or ["git failed"])[-1]}
    return {"commit": commit, "dirty": dirty}


def collect(device: torch.device, repo: str | Path = ".", now: datetime | None = None) -> dict:
    """Everything above for a run on `device` from the checkout at `repo`, stamped with the UTC time."""
    cpu_count = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpu_count
    return {
        "time_utc": (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds"),
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
                     "libc": " ".join(platform.libc_ver()).strip() or None, "platform": platform.platform()},
        "cpu": {"model": cpu_model(_read_cpuinfo()), "logical_cores": cpu_count, "usable_cores": usable,
                # the code paths the CPU kernels took: ATen's vector width, and the variables that pin the libraries'
                # (unlearning.isa; unset = the library's native choice)
                "aten_capability": torch.backends.cpu.get_cpu_capability(), "code_path_variables": isa.in_effect()},
        "device": device_info(device),
        "torch": torch_info(),
        "packages": package_versions(direct_dependencies()),
        "project": package_versions([PROJECT])[PROJECT],
        "git": git_state(repo),
    }


def summary_line(info: dict) -> str:
    """What a report's header says of the machine its numbers were made on (the full record beside it)."""
    device, cpu, git = info["device"], info["cpu"], info["git"]
    commit = (git["commit"] or "unknown")[:10] + (" (modified)" if git.get("dirty") else "")
    paths = (f", kernels {cpu['aten_capability']}, code paths {isa.setting_of(cpu['code_path_variables'])}"
             if "aten_capability" in cpu else "")  # a record written before 2026-11-26 has neither
    return (f"Made with torch {info['torch']['version']}, Python {info['python']['version']} on "
            f"{device['type']} ({device['name']}), CPU {cpu['model']} ({cpu['usable_cores']} usable cores{paths}), "
            f"commit {commit}, {info['time_utc']}: `reports/provenance.json`.")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m unlearning.provenance", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file to write (atomically)")
    p.add_argument("--params", help="params file whose device and engine.cpu_threads the steps use")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="the device, when no --params is given (default auto: cuda if available)")
    p.add_argument("--threads", type=int, help="torch CPU threads (the rule's threads; default: engine.cpu_threads)")
    p.add_argument("--repo", default=".", help="checkout whose git commit to record (default: current directory)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .config import ParamsError, load_checked
    from .experiment import pick_device
    from .seeding import deterministic_algorithms

    try:
        if args.params:
            params = load_checked(args.params)
            if (threads := args.threads or params["engine"]["cpu_threads"]) != "auto":  # as unlearning.__main__
                torch.set_num_threads(threads)
            deterministic_algorithms()   # as experiment.load_setup does
            device = pick_device(params["device"])
        else:
            device = pick_device(args.device)
        info = collect(device, args.repo)
    except (ParamsError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    write_json(args.out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
