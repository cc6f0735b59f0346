"""Atomic file writing: every output is written to a temporary name, then renamed."""

from __future__ import annotations

import glob
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.
    A writer killed mid-block (SIGKILL, power loss) leaves its temporary behind; the next write of the
    same path removes it (one writer per path, as Snakemake's lock ensures)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in glob.glob(os.path.join(glob.escape(str(path.parent)), f".{glob.escape(path.name)}.*.tmp")):
        Path(stale).unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str | Path, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None) -> None:
    """safetensors, atomically. The metadata goes in as one sorted JSON string under the key "json":
    safetensors keeps metadata in a hash map of random order, so several keys would give equal inputs
    different bytes."""
    meta = {"json": json.dumps(metadata or {}, sort_keys=True)}
    with atomic_path(path) as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=meta)


def load_tensors(path: str | Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: missing; run the rule that produces it (snakemake {path})")
    return load_file(str(path), device=str(device))


def load_metadata(path: str | Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return json.loads((f.metadata() or {}).get("json", "{}"))
