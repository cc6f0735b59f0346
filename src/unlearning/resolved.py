"""Which configuration a file was computed under: the scale and a hash of the resolved parameters.

Snakemake resolves params.yaml, `--configfile` and `--config key=value` into one mapping and writes it once
per run to a content-addressed file (`write_resolved`); every job reads that file, so a job computes exactly
what Snakemake planned. Each result file carries `config_record(params)`, and a report refuses inputs computed
at another scale (`check_inputs`), so quick and paper numbers are never mixed silently.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from .config import ParamsError, safe_load_strict
from .files import atomic_path, read_json

KEY = "_resolved"  # where a job's params carry their provenance (not a params.yaml key)
MACHINE = "_machine"  # where they carry the run's provenance record (unlearning.provenance), if given
FIELD = "config"  # where a result file carries it


def config_hash(params: dict) -> str:
    """The first 16 hex digits of the SHA-256 of the parameters as canonical JSON (sorted keys)."""
    body = {k: v for k, v in params.items() if k not in (KEY, MACHINE)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_resolved(params: dict, directory: str | Path) -> Path:
    """`<directory>/<hash>.yaml` holding `params` (written once: the name is the content's hash)."""
    path = Path(directory) / f"{config_hash(params)}.yaml"
    if not path.is_file():
        with atomic_path(path) as tmp:
            tmp.write_text(yaml.safe_dump(dict(params), sort_keys=True))
    return path


def planned(path: str | Path) -> bool:
    """Whether `path` is a resolved file a plan wrote (write_resolved: a `resolved` folder's `<hash>.yaml` whose content
    has that hash), which the plan checked in full before writing it."""
    path = Path(path)
    if path.parent.name != "resolved" or not path.is_file():
        return False
    try:
        return config_hash(safe_load_strict(path.read_text())) == path.stem  # libyaml: 0.09 s less a job
    except (yaml.YAMLError, AttributeError, TypeError):
        return False


def stamp(params: dict, provenance_file: str | None = None) -> dict:
    """`params` with `_resolved = {scale, sha256}` added, as every job sees them, and the run's provenance
    record (machine, packages, commit) under `_machine` when a file is given."""
    stamped = {**params, KEY: {"scale": params["scale"], "sha256": config_hash(params)}}
    if provenance_file:
        stamped[MACHINE] = read_json(provenance_file)
    return stamped


def config_record(params: dict) -> dict:
    """What a result file records of the configuration it was computed under."""
    return dict(params[KEY]) if KEY in params else {"scale": params["scale"], "sha256": config_hash(params)}


def check_inputs(params: dict, paths: list[str]) -> str:
    """One header line naming the scale and configuration of a report's inputs; a clear error when an
    input was computed at another scale than this report, or carries no provenance."""
    mine = config_record(params)
    hashes: dict[str, list[str]] = {}
    for path in paths:
        record = read_json(path).get(FIELD) if Path(path).is_file() else None
        if not isinstance(record, dict) or "scale" not in record:
            raise ParamsError(f"{path}: records no configuration (written by an older version); re-run its step")
        if record["scale"] != mine["scale"]:
            raise ParamsError(f"{path}: computed at scale {record['scale']!r}, but this report is at scale "
                              f"{mine['scale']!r}; rebuild with one scale (snakemake --config scale=...)")
        hashes.setdefault(record["sha256"], []).append(path)
    line = f"Scale `{mine['scale']}`, configuration `{mine['sha256']}` (SHA-256 of the resolved parameters)."
    older = sorted(h for h in hashes if h != mine["sha256"])
    if older:
        line += (f" {sum(len(hashes[h]) for h in older)} of {len(paths)} inputs record another configuration "
                 f"({', '.join(f'`{h}`' for h in older)}). Snakemake re-runs a job whose own parameters change, so "
                 "inputs it kept differ only in parameters they do not read; inputs joined by hand from other runs "
                 "are named in the record's README.")
    if MACHINE in params:
        from .provenance import summary_line

        line += " " + summary_line(params[MACHINE])
    return line
