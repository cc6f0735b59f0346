"""Stacked client models and run costs on disk, as every decentralized experiment writes and reads them."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from ...files import load_metadata, load_tensors, write_json
from ...methods import Cost


def write_cost(cost: Cost, path: Path, timing: str) -> None:
    """The deterministic costs beside the models; the wall time, which varies, to `timing`."""
    fields = asdict(cost)
    write_json(timing, {"wall_time_s": fields.pop("wall_time_s")})
    write_json(path, fields)


def load_models(path: str, device) -> tuple[torch.Tensor, list[int], dict]:
    """The stacked models `theta` [clients, d] on `device`, the client ids, and the file's metadata."""
    tensors = load_tensors(path)
    return tensors["theta"].to(device), tensors["clients"].tolist(), load_metadata(path)
