"""The centralized canary tables as the workflow's jobs (issue 67), as the decentralized settings' are: one job per
(table, method) runs that method's runner (`@register_central`) on a fresh bench and writes its rows; one job per
table puts the methods together in the configured order, as the table's result and timing (what the report reads).
`table` runs the same two steps in one process. Every random stream of a bench is keyed by its method (seeding.py),
so a method's rows are the same alone or beside others.

The tables: `centralized` (the convex model, centralized.Bench; its methods `common.centralized.methods`) and
`centralized_mlp` (the MLP, mlp.MlpBench; `common.mlp.methods`, and every method of the convex table without an MLP
runner listed with the reason its declaration gives).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from ...files import read_json, write_json
from ...methods import CENTRAL, central_runner
from . import config, layout

TABLES = {"centralized": ("centralized", "convex"), "centralized_mlp": ("mlp", "mlp")}  # table: (block, model)


def _bench(params: dict, table: str, features: str, tmp: str):
    if table == "centralized":
        from .centralized import Bench

        return Bench(params, features)
    from .mlp import MlpBench

    return MlpBench(params, features, tmp)


def methods_of(params: dict, table: str) -> list[str]:
    if table not in TABLES:
        raise KeyError(f"centralized table {table!r}: unknown; valid: {', '.join(TABLES)}")
    return config(params)[TABLES[table][0]]["methods"]


def method_part(params: dict, table: str, method: str, features: str, out: str, timing: str) -> None:
    """Method `method`'s rows on `table`'s task (a fresh bench: the task's original trained again where its runner
    asks for it), with its seconds."""
    runner = central_runner(method, TABLES[table][1])
    with tempfile.TemporaryDirectory(prefix=f"common-{table}-") as tmp:
        b = _bench(params, table, features, tmp)
        b.result["labels"][method] = runner.label
        runner.run(b)
    write_json(out, b.result)
    write_json(timing, {"seconds": b.seconds, "threads": torch.get_num_threads(), "device": str(b.device)})


def combine(params: dict, table: str, parts: list[str], timings: list[str], out: str, timing: str) -> None:
    """The table's methods' parts (`parts`, `timings`: in the order of its methods) put together: the table's result
    (its task's fields, each method's rows and label, and for the MLP the convex methods it does not run, with why)
    and its seconds."""
    names = methods_of(params, table)
    results = [read_json(p) for p in parts]
    for name, part, path in zip(names, results, parts, strict=True):
        if set(part["labels"]) != {name}:
            raise ValueError(f"{path}: holds {', '.join(part['labels'])}, not {name!r}; re-run its job")
    result = {**results[0], "methods": {}, "labels": {}}
    if table == "centralized_mlp":
        for name in config(params)["centralized"]["methods"]:
            if (name, "mlp") not in CENTRAL:
                runner = central_runner(name, "convex")
                result["does_not_apply"][name] = runner.does_not_apply.get("mlp", "no runner on the MLP declared")
                result["labels"][name] = runner.label
    seconds = {}
    for part, path in zip(results, timings):
        result["methods"].update(part["methods"])
        result["labels"].update(part["labels"])
        result.update({k: v for k, v in part.items() if k not in result})  # what a runner adds (R2D's constants)
        seconds.update(read_json(path)["seconds"])
    first = read_json(timings[0])
    write_json(out, result)
    write_json(timing, {"seconds": seconds, "threads": first["threads"], "device": first["device"]})


def table(params: dict, table: str, features: str, root: str) -> tuple[dict, dict]:
    """The table in one process (the workflow's jobs, one after another, their files under `root`): its result and
    timing."""
    names = methods_of(params, table)
    parts = [(layout.central(table, m, root), layout.central(table, m, root, "timings")) for m in names]
    for name, (out, seconds) in zip(names, parts):
        method_part(params, table, name, features, out, seconds)
    out, seconds = layout.central(table, root=root), layout.central(table, root=root, kind="timings")
    combine(params, table, [p for p, _ in parts], [t for _, t in parts], out, seconds)
    return read_json(Path(out)), read_json(Path(seconds))
