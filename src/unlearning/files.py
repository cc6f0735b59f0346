"""Atomic file writing: every output is written to a temporary name, then renamed."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
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
    """safetensors, atomically; metadata values are stored as JSON strings."""
    meta = {k: json.dumps(v, sort_keys=True) for k, v in (metadata or {}).items()}
    with atomic_path(path) as tmp:
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=meta)
        _sort_metadata(tmp)


def _sort_metadata(path: Path) -> None:
    """Rewrite a safetensors header with its metadata keys sorted, so equal inputs give equal bytes.

    safetensors keeps the metadata in a Rust HashMap whose iteration order is random (it changes even
    between two calls in one process), so the same tensors and metadata gave files with different bytes.
    """
    with open(path, "r+b") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        if "__metadata__" not in header:
            return
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        if len(text) <= size:  # always, as only the order changed: pad with spaces as safetensors does
            f.seek(8)
            f.write(text.ljust(size, b" "))
            return
        data = f.read()
        text = text.ljust(-(-len(text) // 8) * 8, b" ")
        f.seek(0)
        f.write(len(text).to_bytes(8, "little") + text + data)
        f.truncate()


def load_tensors(path: str | Path, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: missing; run the rule that produces it (snakemake {path})")
    return load_file(str(path), device=str(device))


def load_metadata(path: str | Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return {k: json.loads(v) for k, v in (f.metadata() or {}).items()}
