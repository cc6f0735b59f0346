"""The decentralized settings as the workflow's small jobs (issue 55, item 3); `run_setting` runs the same jobs one
after another in one process (decentralized.judge_methods: the Python API and the one-process commands). Paths:
layout.py.

- `references_part`, per (setting, seed): the attack's reference models, trained once; what the judge reads of them;
- `original_part`, per (setting, seed, family): one original trained, stored (its directory), and judged;
- `method_part`, per (setting, method): the method on every seed from its original's stored state, judged, with
  what its audit reads (its noiseless output; retraining's models, the audit's reference);
- `combine_part`, per setting: each seed's result, scores and timing put together, the audits computed;
- `one_class_check`, per (setting, method), outside the graph: each remaining model's top-class share for a method
  re-run on stored originals, for a result written before the judge kept the shares (common-report --one-class).

Editing one method's module re-runs its jobs and what reads them (the put-together and the report) only: a method
job runs its own method module and no other (common.smk lists its files).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from ... import families
from ...evaluate.forward import logits_in_batches
from ...files import load_metadata, load_tensors, save_tensors, write_json
from ...resolved import config_record
from . import config, layout
from . import decentralized as dec
from .judge import Judge

log = logging.getLogger("unlearning")


def _judge(params: dict, setting: str, seed: int, features: str, root: str) -> tuple:
    dec.check_seed(params, seed)
    setup = dec.make_setup(params, setting, seed, features)
    return setup, Judge(setup, load_tensors(layout.references(setting, seed, root)))


def references_part(params: dict, setting: str, seed: int, features: str, root: str = ".") -> None:
    dec.check_seed(params, seed)
    setup = dec.make_setup(params, setting, seed, features)
    judge = Judge(setup)
    log.info("%s seed %d: RMIA %s, reference models' train accuracy %s", setting, seed, judge.mode,
             [round(a, 3) for a in judge.reference_accuracy])
    save_tensors(layout.references(setting, seed, root), judge.references(), {"header": dec.header(setup, judge)})


def original_part(params: dict, setting: str, seed: int, family: str, features: str, root: str = ".") -> None:
    setup, judge = _judge(params, setting, seed, features, root)
    ctx = dec.context(params, setting, seed, features, setup, Path(layout.family_root(setting, seed, root)))
    orig = families.train(family, ctx)
    families.save(family, orig, ctx)
    row = dec.original_row(judge, family, orig)
    save_tensors(layout.original(setting, seed, family, root), judge.score_counts(), {"row": row})
    write_json(layout.original_timing(setting, seed, family, root), {"seconds": orig.cost.wall_time_s})


def method_part(params: dict, setting: str, method: str, features: str, root: str = ".", info=None,
                seeds: list[int] | None = None) -> None:
    """Method `method` (its registered declaration, or `info`: any MethodInfo) on every seed (or `seeds`)."""
    info = dec.configured_methods(params, setting, [method])[method] if info is None else info
    budget = config(params)["budget"]
    tensors, rows, evidence, seconds = {}, {}, {}, {}
    for seed in config(params)["decentralized"]["seeds"] if seeds is None else seeds:
        setup, judge = _judge(params, setting, seed, features, root)
        state = families.load(info.original, dec.context(params, setting, seed, features, setup,
                                                     Path(layout.family_root(setting, seed, root))))
        mcfg = dec.method_config(state.setup.cfg, budget, info)
        rows[seed], res = dec.run_method(judge, info, state, mcfg, budget)
        ev = dec.audit_evidence(info, state, mcfg, res, rows[seed]["claimed"])
        if "noiseless" in ev:
            tensors[f"s{seed}.noiseless"] = ev.pop("noiseless")
        if method == "retrain":  # the audit's reference
            tensors[f"s{seed}.models"], ev["models_clients"] = res.theta, list(res.clients)
        tensors[f"s{seed}.scores"] = judge.score_counts()[method]
        evidence[seed], seconds[seed] = ev, res.cost.wall_time_s
    save_tensors(layout.method(setting, method, root), tensors, {"method": method, "label": info.label,
                                                                 "original": info.original, "rows": rows,
                                                                 "evidence": evidence})
    write_json(layout.method_timing(setting, method, root), {"seconds": seconds, "threads": torch.get_num_threads(),
                                                             "device": str(setup.device)})


def combine_part(params: dict, setting: str, root: str = ".", names: list[str] | None = None,
                 seeds: list[int] | None = None) -> None:
    """Every seed's result, scores and timing from the parts of the setting's methods (or `names`); the audits
    against retraining computed here."""
    cfg = dec.setting_config(params, setting)
    names = cfg["methods"] if names is None else names
    delta = config(params)["budget"]["delta"]
    parts = {m: (load_metadata(layout.method(setting, m, root)), layout.method(setting, m, root)) for m in names}
    for m, (meta, path) in parts.items():
        if meta.get("method") != m:
            raise ValueError(f"{path}: holds method {meta.get('method')!r}, not {m!r}; re-run its job")
    fams = list(dict.fromkeys(meta["original"] for meta, _ in parts.values()))
    timings = {m: json.loads(Path(layout.method_timing(setting, m, root)).read_text()) for m in names}
    tensors = {m: load_tensors(path) for m, (_, path) in parts.items()}
    for seed in cfg["seeds"] if seeds is None else seeds:
        key = str(seed)  # JSON keys
        head = load_metadata(layout.references(setting, seed, root))["header"]
        scores, originals, seconds = {}, {}, {}
        for family in fams:
            path = layout.original(setting, seed, family, root)
            originals[family] = load_metadata(path)["row"]
            scores.update(load_tensors(path))
            seconds[f"original {family}"] = json.loads(
                Path(layout.original_timing(setting, seed, family, root)).read_text())["seconds"]
        retrain = None
        if "retrain" in parts:
            retrain = (parts["retrain"][0]["evidence"][key]["models_clients"], tensors["retrain"][f"s{seed}.models"])
        rows = {}
        for m, (meta, _) in parts.items():
            rows[m] = dict(meta["rows"][key])
            ev = {k: v for k, v in meta["evidence"][key].items() if k != "models_clients"}
            if "clients" in ev:
                ev["noiseless"] = tensors[m][f"s{seed}.noiseless"]
            rows[m]["audit"] = dec.audit_row(ev, retrain, rows[m]["claimed"], delta)
            scores[m] = tensors[m][f"s{seed}.scores"]
            seconds[m] = timings[m]["seconds"][key]
        result = dec.assemble(params, setting, seed, head, originals, rows, {m: meta["label"] for m, (meta, _) in
                                                                         parts.items()})
        save_tensors(layout.scores(setting, seed, root), scores, dec.score_metadata(setting, seed, result))
        write_json(layout.result(setting, seed, root), result)
        first = timings[names[0]]
        write_json(layout.timing(setting, seed, root), {"setting": setting, "seed": seed, "seconds": seconds,
                                                        "threads": first["threads"], "device": first["device"]})


def run_setting(params: dict, setting: str, features: str, root: str, methods: dict | None = None,
                seeds: list[int] | None = None) -> None:
    """The setting's jobs one after another in this process, their files under `root`: the references and originals
    of every seed (or `seeds`), each method, the put-together. `methods`: {name: MethodInfo} (default: the setting's
    configured ones; any MethodInfo, registered or not)."""
    key = f"common.decentralized.{setting}.methods"
    infos = dec.configured_methods(params, setting) if methods is None else dec.checked(key, setting, methods)
    seeds = config(params)["decentralized"]["seeds"] if seeds is None else seeds
    for seed in seeds:
        dec.check_seed(params, seed)
        references_part(params, setting, seed, features, root)
        for family in dict.fromkeys(info.original for info in infos.values()):
            original_part(params, setting, seed, family, features, root)
    for name, info in infos.items():
        method_part(params, setting, name, features, root, info, seeds)
    combine_part(params, setting, root, list(infos), seeds)


def one_class_check(params: dict, setting: str, method: str, features: str, out: str, root: str = ".",
                    seeds: list[int] | None = None) -> None:
    """`method` re-run on every seed from the originals stored under `root` (a run's working directory), and each
    remaining model's share of test predictions in its most predicted class, as the judge computes it
    (`top_class_shares`), with its test accuracy: the one-class check of a result written before the judge kept the
    shares. common-report --one-class reads the file."""
    info = dec.configured_methods(params, setting, [method])[method]
    budget, shares = config(params)["budget"], {}
    for seed in config(params)["decentralized"]["seeds"] if seeds is None else seeds:
        dec.check_seed(params, seed)
        setup = dec.make_setup(params, setting, seed, features)
        state = families.load(info.original, dec.context(params, setting, seed, features, setup,
                                                         Path(layout.family_root(setting, seed, root))))
        res = info(state, setup.request, dec.method_config(state.setup.cfg, budget, info))
        fns = res.predict or [lambda x, row=row, setup=setup: torch.cat(list(logits_in_batches(setup, row, x)))
                              for row in res.theta]
        predicted = [f(setup.x_test).argmax(1) for f in fns]
        shares[str(seed)] = {"top_class_shares": [float(torch.bincount(p).max() / len(p)) for p in predicted],
                             "test_accuracy": [float((p == setup.y_test).float().mean()) for p in predicted]}
        log.info("%s seed %d, %s: top-class shares %s", setting, seed, method,
                 [round(s, 3) for s in shares[str(seed)]["top_class_shares"]])
    write_json(out, {"setting": setting, "method": method, "seeds": shares, "config": config_record(params)})
