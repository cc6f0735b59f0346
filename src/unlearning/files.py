"""Atomic file writing: every output is written to a temporary name, then renamed. Reading refuses a file that
is truncated or corrupt (CorruptFile names it and what to do) rather than using it."""

from __future__ import annotations

import glob
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError

if TYPE_CHECKING:  # torch is imported where tensors are read or written: reports and certificates never load it
    import torch


class CorruptFile(ValueError):
    """A file exists but cannot be read as what it should be (truncated, overwritten, or another format)."""


def corrupt(path: str | Path, reason: str) -> CorruptFile:
    """The one-line error for an unreadable input: its name, why, and how to rebuild it."""
    why = " ".join(str(reason).split())[:200]
    return CorruptFile(f"{path}: corrupt or truncated ({why}); delete it and re-run the rule that makes it "
                       f"(snakemake {path})")


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
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise corrupt(path, f"not JSON: {err}") from None


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None) -> None:
    """safetensors, atomically. The metadata goes in as one sorted JSON string under the key "json":
    safetensors keeps metadata in a hash map of random order, so several keys would give equal inputs
    different bytes."""
    meta = {"json": json.dumps(metadata or {}, sort_keys=True)}
    with atomic_path(path) as tmp:
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=meta)


def load_tensors(path: str | Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: missing; run the rule that produces it (snakemake {path})")
    try:
        from safetensors.torch import load_file

        return load_file(str(path), device=str(device))
    except SafetensorError as err:
        raise corrupt(path, err) from None


def load_metadata(path: str | Path) -> dict:
    from safetensors import safe_open

    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: missing; run the rule that produces it (snakemake {path})")
    try:
        with safe_open(str(path), framework="pt") as f:
            return json.loads((f.metadata() or {}).get("json", "{}"))
    except (SafetensorError, json.JSONDecodeError) as err:
        raise corrupt(path, err) from None
