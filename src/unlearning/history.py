"""Gradient histories and checkpoints, written atomically and read memory-mapped.

A history directory holds `grads.npy` ([rounds, clients, d], float16 or float32, read with
`np.load(mmap_mode="r")`: no pickle), `mixing.safetensors` (one [rounds, m, m] tensor per matrix
name) and `meta.json`, written last. The gradients are written to a temporary file while training
runs and renamed into place on `close()`, so an interrupted run never leaves a history that looks done.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from .files import corrupt, load_tensors, read_json, save_tensors, write_json


class HistoryWriter:
    def __init__(self, directory: str | Path, rounds: int, clients: list[int], dim: int, dtype: str = "float16"):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "meta.json").unlink(missing_ok=True)  # a rewrite killed midway must not look done
        self.clients, self.rounds, self.dtype = list(clients), rounds, dtype
        self._tmp = self.dir / ".grads.npy.tmp"
        self._grads = np.lib.format.open_memmap(self._tmp, mode="w+", dtype=dtype, shape=(rounds, len(clients), dim))
        self._mixing: dict[str, list[torch.Tensor]] = {}
        self._round_ids: list[int] = []

    def append(self, round_: int, grads: torch.Tensor, mixing: dict[str, torch.Tensor]) -> None:
        k = len(self._round_ids)
        self._grads[k] = grads.detach().cpu().numpy().astype(self.dtype)
        for name, matrix in mixing.items():
            self._mixing.setdefault(name, []).append(matrix.detach().cpu().double())
        self._round_ids.append(round_)

    def close(self) -> None:
        if len(self._round_ids) != self.rounds:
            raise RuntimeError(f"history {self.dir}: {len(self._round_ids)} of {self.rounds} rounds appended")
        self._grads.flush()
        del self._grads
        os.replace(self._tmp, self.dir / "grads.npy")
        save_tensors(self.dir / "mixing.safetensors", {k: torch.stack(v) for k, v in self._mixing.items()})
        write_json(self.dir / "meta.json", {"rounds": self._round_ids, "clients": self.clients, "dtype": self.dtype})


class History:
    """Read side: `grads(k)` is round k's [m, d] float32 tensor, read from the memory map."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        if not (self.dir / "meta.json").is_file():
            raise FileNotFoundError(f"{self.dir}: no complete gradient history (meta.json missing)")
        self.meta = read_json(self.dir / "meta.json")
        path = self.dir / "grads.npy"
        try:
            self._grads = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise corrupt(path, err) from None
        self.mixing = load_tensors(self.dir / "mixing.safetensors")
        self._check_shapes(path)
        self.bytes_read = 0

    def _check_shapes(self, path: Path) -> None:
        """grads.npy is [rounds, clients, d] of the dtype meta.json names; each mixing stack has one matrix a round."""
        try:
            rounds, clients, dtype = len(self.meta["rounds"]), len(self.meta["clients"]), self.meta["dtype"]
        except (KeyError, TypeError) as err:
            raise corrupt(self.dir / "meta.json", f"no {err} entry") from None
        shape = self._grads.shape
        if len(shape) != 3 or shape[:2] != (rounds, clients) or str(self._grads.dtype) != dtype:
            raise corrupt(path, f"holds {self._grads.dtype} {list(shape)}, meta.json says {dtype} "
                                f"[{rounds}, {clients}, d]")
        for name, stack in self.mixing.items():
            if stack.shape[0] != rounds:
                raise corrupt(self.dir / "mixing.safetensors", f"{name} has {stack.shape[0]} rounds, not {rounds}")

    def __len__(self) -> int:
        return self._grads.shape[0]

    @property
    def dim(self) -> int:
        return self._grads.shape[2]

    def grads(self, k: int, rows: list[int] | None = None) -> torch.Tensor:
        block = self._grads[k] if rows is None else self._grads[k, rows]
        self.bytes_read += block.nbytes
        return torch.from_numpy(np.array(block, dtype=np.float32))


class CheckpointStore:
    """Stacked client models every few rounds: `round_00010.safetensors` with the client ids."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        self.bytes_read = 0

    def path(self, round_: int) -> Path:
        return self.dir / f"round_{round_:05d}.safetensors"

    def save(self, round_: int, theta: torch.Tensor, clients: list[int]) -> None:
        save_tensors(self.path(round_), {"theta": theta, "clients": torch.tensor(clients)})

    def rounds(self) -> list[int]:
        return sorted(int(p.stem.split("_")[1]) for p in self.dir.glob("round_*.safetensors"))

    def load(self, round_: int) -> tuple[torch.Tensor, list[int]]:
        path = self.path(round_)
        self.bytes_read += path.stat().st_size
        tensors = load_tensors(path)
        if set(tensors) != {"theta", "clients"} or tensors["theta"].shape[0] != tensors["clients"].numel():
            raise corrupt(path, f"holds {sorted(tensors)} with shapes "
                                f"{[list(t.shape) for t in tensors.values()]}, not theta [clients, d] and clients")
        return tensors["theta"], tensors["clients"].tolist()
