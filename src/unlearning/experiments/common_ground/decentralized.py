"""Common ground, decentralized settings (issue 16): one D-SGD task, one client or 10 % of every client's data
removed, every decentralized method of the five papers from the same data, theta^0, graphs and seed.

The task is `common.decentralized` (the spine's keys: dataset, model, clients, partition, topology, train), the
setting's `forget` request merged in. The setting's `methods` are any registered methods (methods/__init__.py's
`register`, docs/extending.md); each starts from the trained state its module declares (its `original`, a family
of families/), the one its paper assumes:

- retrain, fine-tune, DU (CDFL Algorithm 1 / eq. 5-6): the D-SGD run of `train.mixing` (model mixing);
- PDUDT, PDUDT(ES): the same task trained by PDUDT's Eq. 2 (gradient mixing), its gradient history stored;
- FedRecovery: full-participation FedSGD (every round's graph complete, Eq. 2), every client's g^t stored;
- FATS-Unl: FedAvg over `fats.clients_per_round` sampled clients; HDUS-approx: main and seed models;
- RR-DU: a token walking the same shards (Algorithm 2, Adam), then Algorithm 4 with D_f = the leaving client's data.

Every one of these trained states is evaluated too (the `originals`): what it carried of the forget set is what
its methods had to remove. Each model is judged as the remaining clients judge it: every remaining client's model
(or ensemble, or the one global model) on the test set, the forget set and two attacks, averaged over clients:

- the paper-style attack: the loss threshold (Yeom et al.) on class-matched forget and test samples;
- the strong per-sample attack: RMIA (evaluate/attacks/rmia.py), online by default: reference models trained by
  the target's own D-SGD recipe on halves of the candidates and population (see `Judge`); members = the forget set,
  non-members = held-out test samples; TPR at 1 % and 0.1 % FPR and AUC, every model's scores stored.

The workflow runs a setting as small jobs (parts.py: references, each original, each method, then the setting put
together), from the pieces below; one process (`judge_methods`: the Python API, the common-method command, the
tests) runs the same jobs one after another.

Costs: wall time, per-sample gradient evaluations, bytes read from stored histories, and floats communicated
(D-SGD: every edge of every round's graph carries a d-vector each way; FedAvg: each participant's model down and
up; DU: its flood). Claimed epsilon: what the method's certificate states at `common.budget`, or why it has none.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from pathlib import Path

import numpy as np
import torch

from ... import families
from ...config import deep_merge
from ...evaluate.attacks.protocol import columns
from ...experiment import Setup, build_setup, make_split
from ...families import FAMILIES, Context, Original
from ...files import load_tensors, write_json
from ...methods import METHODS, MethodInfo, TrainedState, Unlearned
from ...privacy import audit
from ...report.claims import UNINFORMATIVE
from ...resolved import config_record
from . import config
from .judge import Judge
from .layout import SETTINGS, not_applying

log = logging.getLogger("unlearning")


def setting_config(params: dict, setting: str) -> dict:
    """`common.decentralized` with the setting's `forget` and `methods` merged in: a spine-shaped config."""
    if setting not in SETTINGS:
        raise KeyError(f"common.decentralized: setting {setting!r}: unknown; valid: {', '.join(SETTINGS)}")
    d = config(params)["decentralized"]
    return deep_merge({k: v for k, v in d.items() if k not in SETTINGS}, d[setting])


def make_setup(params: dict, setting: str, seed: int, features: str, mixing: str | None = None) -> Setup:
    """The setting's Setup for `seed` (the global seed of every generator); `mixing` overrides train.mixing with
    the same data, theta^0 and graphs."""
    params = {**params, "seed": seed}
    cfg = setting_config(params, setting)
    if mixing is not None:
        cfg = deep_merge(cfg, {"train": {"mixing": mixing}})
    name = f"common-{setting}"
    split = make_split(params, name, load_tensors(features)["y_train"], cfg)
    return build_setup(params, name, cfg, features, split)


def context(params: dict, setting: str, seed: int, features: str, setup: Setup, root: Path) -> Context:
    """The families' context: the setup, its Eq. 2 twin built on first use, the folder of their directories."""
    twin: list[Setup] = []

    def gradient_setup() -> Setup:
        if not twin:
            twin.append(make_setup(params, setting, seed, features, mixing="gradient"))
        return twin[0]

    return Context(setup, gradient_setup, root)


def check_seed(params: dict, seed: int) -> None:
    seeds = config(params)["decentralized"]["seeds"]
    if seed not in seeds:
        raise KeyError(f"common.decentralized.seeds: {seed} is not in it; valid: {', '.join(map(str, seeds))}")


# ----------------------------------------------------------------------------------------------- methods

def configured_methods(params: dict, setting: str, names_: list[str] | None = None) -> dict[str, MethodInfo]:
    """The setting's `methods` (or `names_`), each a registered method (methods/__init__.py), applying to the
    setting and starting from a training family that exists: else an error naming the key and what is valid."""
    key = f"common.decentralized.{setting}.methods"
    names_ = setting_config(params, setting)["methods"] if names_ is None else names_
    return checked(key, setting, {m: METHODS[m] for m in names_})


def checked(key: str, setting: str, infos: dict[str, MethodInfo]) -> dict[str, MethodInfo]:
    for m, info in infos.items():
        if setting in info.does_not_apply:
            raise KeyError(f"{key}: {m!r} does not apply to this setting ({info.does_not_apply[setting]})")
        if info.original not in FAMILIES:
            raise KeyError(f"{key}: {m!r} starts from the original {info.original!r} ({info.module}); valid: "
                           f"{', '.join(FAMILIES.names())}")
    return infos


def method_config(cfg: dict, budget: dict, info: MethodInfo) -> dict:
    """The method's params block of the setting's config, the common budget added where it takes one."""
    mcfg = cfg.get(info.block, {})
    return {**mcfg, "epsilon": budget["epsilon"], "delta": budget["delta"]} if info.takes_budget else mcfg


# ----------------------------------------------------------------------------------------------- rows

def header(setup: Setup, judge: Judge) -> dict:
    """What a setting's result states once per seed, besides its rows."""
    return {"clients": setup.cfg["clients"], "forget": setup.cfg["forget"], "forget_samples": len(judge.y_forget),
            "dim": setup.spec.dim, "rmia": judge.describe()}


def original_row(judge: Judge, family: str, orig: Original) -> dict:
    """The trained state judged as its remaining clients hold it, with what its training cost."""
    fns = orig.predict if orig.predict is not None else judge.models(orig.rows)
    return {**judge(fns, f"original {family}"), "trained_by": FAMILIES[family].label,
            "gradient_evaluations": orig.cost.grad_evals, "communication_floats": orig.cost.communication_floats}


def run_method(judge: Judge, info: MethodInfo, state: TrainedState, mcfg: dict, budget: dict
               ) -> tuple[dict, Unlearned]:
    """The method on its original's state, judged: its row (without the audit) and its result."""
    res = info(state, state.setup.request, mcfg)
    fns = res.predict if res.predict is not None else judge.models(res.theta)
    row = {**judge(fns, info.name), "label": info.label, "trained_by": info.original,
           "gradient_evaluations": res.cost.grad_evals, "bytes_read": res.cost.bytes_read,
           "communication_floats": res.cost.communication_floats, "claimed": info.claim(res, budget)}
    log.info("%s seed %d %s: test %.3f, forget %.3f, RMIA TPR@1%% %.3f (%.2f s)", state.setup.name,
             state.setup.seed, info.name, row["test_accuracy"], row["forget_accuracy"], row["rmia_tpr_at_1pct_fpr"],
             res.cost.wall_time_s)
    return row, res


def audit_evidence(info: MethodInfo, state: TrainedState, mcfg: dict, res: Unlearned, claim: dict) -> dict:
    """What the audit of a method's claim reads from its run: the audit row itself where no comparison with
    retraining is needed, else its noiseless output (`noiseless`, rows as `clients`) and each row's noise std
    (`stds`) from its module's `audit_pair` (a Gaussian mechanism around deterministic outputs)."""
    eps = claim.get("epsilon")
    if eps is None:
        return {"status": "no certificate" if claim.get("sigma") is None else
                "no epsilon claimed: its sigma's epsilon is not computed (see its claim)", "exact_epsilon": None}
    if info.name == "retrain":
        return {"status": "reference: exact retraining", "exact_epsilon": 0.0}
    if info.audit_pair is None:
        sampled = ("its canary audit (canary.py) is the setting's canary table" if info.takes_budget else
                   "and no canary audit runs for a method that does not take the common budget")
        return {"status": f"{UNINFORMATIVE}: no exact audit for this mechanism (its noise is not added around one "
                          f"deterministic output); {sampled}", "exact_epsilon": None}
    noiseless, stds = info.audit_pair(state, state.setup.request, mcfg, res)
    return {"clients": list(res.clients), "stds": [float(s) for s in stds], "noiseless": noiseless}


def audit_row(evidence: dict, retrain: tuple[list[int], torch.Tensor] | None, claim: dict, delta: float) -> dict:
    """The audit of one method's claim in a decentralized setting, in the centralized tables' words: for a
    Gaussian mechanism around deterministic outputs (`audit_evidence`), the exact epsilon at `delta` of each
    remaining client's model against the same client's retrained model (`retrain`: its clients and rows) under
    the same noise (the claim read per model, as the tables judge each client's model), the largest over clients;
    "violated" above the claim, else "not faulted: exact"."""
    if "status" in evidence:
        return {"status": evidence["status"], "exact_epsilon": evidence["exact_epsilon"]}
    if retrain is None:
        return {"status": "missing: no retraining to compare with (add retrain to the setting's methods)",
                "exact_epsilon": None}
    reference = dict(zip(retrain[0], retrain[1]))
    per_client = []
    for row, (client, std) in enumerate(zip(evidence["clients"], evidence["stds"])):
        diff = (evidence["noiseless"][row] - reference[client]).double().cpu().numpy()
        gap = math.sqrt(math.fsum(diff * diff))  # exactly summed: the same at any thread count
        eps_c = audit.exact_epsilon(gap, std, delta) if std > 0 else (0.0 if gap == 0 else math.inf)
        # 6 significant digits: a model's last float32 bits follow the thread count (GEMM splits), which moves this
        # epsilon in its 9th digit; the file stays the same at any thread count
        per_client.append(float(f"{eps_c:.6g}"))
    worst, eps = max(per_client), claim["epsilon"]
    shown = "above 1e6 (audit.exact_epsilon's range)" if math.isinf(worst) else f"{worst:.3g}"
    text = f"exact epsilon {shown} (the largest of {len(per_client)} clients' models) vs claimed {eps:g}"
    return {"status": f"{audit.VIOLATED}: exact: {text}" if worst > eps else f"{audit.NOT_FAULTED}: exact: {text}",
            "exact_epsilon": worst, "exact_epsilon_per_client": per_client}


def assemble(params: dict, setting: str, seed: int, head: dict, originals: dict, methods: dict,
             labels: dict[str, str]) -> dict:
    """A setting's result for one seed (what the workflow's put-together writes): every method the other setting lists
    that does not apply here named with its reason (layout.not_applying)."""
    others = {m: METHODS[m] for m in not_applying(config(params)["decentralized"], setting)}
    return {"setting": setting, "seed": seed, "scale": params["scale"], "clients": head["clients"],
            "forget": head["forget"], "forget_samples": head["forget_samples"], "dim": head["dim"],
            "rmia": head["rmia"], "originals": originals, "methods": methods,
            "does_not_apply": {m: d.does_not_apply[setting] for m, d in others.items()},
            "labels": {**{m: d.label for m, d in others.items()}, **labels}, "config": config_record(params)}


# ----------------------------------------------------------------------------------------------- one process

def judge_methods(params: dict, setting: str, seed: int, features: str,
                  methods: dict[str, MethodInfo] | None = None) -> tuple[dict, dict[str, float], Judge]:
    """Run `methods` (default: the setting's configured ones; any MethodInfo, registered or not: your own callable
    wrapped as `MethodInfo(name, fn, label)`) on the setting's task for `seed`, each from its own original, and
    judge every model: the result (what the workflow's put-together writes), the wall seconds and the Judge (its
    references; `score_counts` holds no scores). The Python entry point of docs/extending.md: the workflow's jobs
    (parts.py) one after another in a temporary folder."""
    from . import layout, parts

    check_seed(params, seed)
    with tempfile.TemporaryDirectory(prefix="common-ground-") as tmp:
        parts.run_setting(params, setting, features, tmp, methods, [seed])
        result = json.loads(Path(layout.result(setting, seed, tmp)).read_text())
        seconds = json.loads(Path(layout.timing(setting, seed, tmp)).read_text())["seconds"]
        judge = Judge(make_setup(params, setting, seed, features), load_tensors(layout.references(setting, seed, tmp)))
    return result, seconds, judge


def score_metadata(setting: str, seed: int, judge_header: dict) -> dict:
    r = judge_header["rmia"]
    return {"members": r["members"], "nonmembers": r["nonmembers"], "population": r["population"],
            "setting": setting, "seed": seed, "score": "count / population"}


# ----------------------------------------------------------------------------------------------- reference study

def reference_study(params: dict, setting: str, seed: int, features: str, originals: str) -> dict:
    """How each attack's strength against the D-SGD original moves with the number of reference models (issue 56):
    `attack.reference_counts`' largest trained once, then RMIA and LiRA on the first k of them for each count k,
    against every remaining client's model of the original (the mean over them), read from `originals`, the folder of
    the setting's stored originals (layout.family_root)."""
    counts = sorted(config(params)["decentralized"]["attack"]["reference_counts"])
    wide = json.loads(json.dumps(params))
    wide["common"].setdefault(params["scale"], {}).setdefault("decentralized", {}).setdefault("attack", {})[
        "reference_models"] = counts[-1]
    setup = make_setup(wide, setting, seed, features)
    judge = Judge(setup)
    state = families.load("dsgd", Context(setup, None, Path(originals)))
    fns = judge.models(families.remaining(setup, state.theta, state.clients))
    metrics = [c for name in judge.attacks for c in columns(name)[:2]]  # each attack's AUC and TPR at 1 % FPR
    rows = []
    for k in counts:
        sub = judge.with_references(k)
        one = [sub.one(f) for f in fns]
        rows.append({"reference_models": k, **{m: float(np.mean([r[m] for r in one])) for m in metrics}, "a": sub.a})
        log.info("%s seed %d, %d references: %s", setting, seed, k,
                 ", ".join(f"{m} {rows[-1][m]:.3f}" for m in metrics))
    return {"setting": setting, "seed": seed, "scale": params["scale"], "original": "dsgd", "models": len(fns),
            "attack": {**judge.describe(), "reference_models": counts[-1]}, "rows": rows,
            "config": config_record(params)}  # no wall time: results are compared byte for byte (its benchmark has it)


def step_references(params: dict, setting: str, seed: int, features: str, out: str, originals: str) -> None:
    write_json(out, reference_study(params, setting, seed, features, originals))


def method_rows(params: dict, names: list[str], setting: str = "client", seed: int | None = None,
                features: str = "", out: str | None = None) -> str:
    """`names` (with retraining, to compare) on one seed of `setting`: their rows and their originals' as text, the
    full result to `out` (JSON) if given. `python -m unlearning common-method NAME ...`."""
    seed = config(params)["decentralized"]["seeds"][0] if seed is None else seed
    names = list(dict.fromkeys(["retrain", *names]))
    infos = configured_methods(params, setting, names)
    result, _, _ = judge_methods(params, setting, seed, features, infos)
    if out:
        write_json(out, result)
    row = ["test_accuracy", "forget_accuracy", "loss_threshold_auc",
           *(c for name in result["rmia"]["attacks"] for c in columns(name)[:2]), "communication_floats"]
    lines = [f"{setting} setting, seed {seed} ({params['scale']} scale): " + ", ".join(row)]
    order = {"originals": list(dict.fromkeys(info.original for info in infos.values())), "methods": names}
    for group in ("originals", "methods"):
        for key in order[group]:
            m = result[group][key]
            name = f"original {key}" if group == "originals" else m["label"]
            values = "  ".join(f"{m[k]:.4g}" if isinstance(m[k], float) else str(m[k]) for k in row)
            claim = "" if group == "originals" else f"  ({m['claimed']['basis']})"
            lines.append(f"{name:<24} {values}{claim}")
    return "\n".join(lines)
