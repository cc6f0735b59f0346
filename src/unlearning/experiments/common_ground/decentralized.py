"""Common ground, decentralized settings (issue 16): one D-SGD task, one client or 10 % of every client's data
removed, every decentralized method of the five papers from the same data, theta^0, graphs and seed.

The task is `common.decentralized` (the spine's keys: dataset, model, clients, partition, topology, train), the
setting's `forget` request merged in. The setting's `methods` are any registered methods (methods/__init__.py's
`register`, docs/extending.md); each starts from the trained state its module declares (its `original`, a family
of originals.py), the one its paper assumes:

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

Costs: wall time, per-sample gradient evaluations, bytes read from stored histories, and floats communicated
(D-SGD: every edge of every round's graph carries a d-vector each way; FedAvg: each participant's model down and
up; DU: its flood). Claimed epsilon: what the method's certificate states at `common.budget`, or why it has none.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import tempfile
from pathlib import Path

import numpy as np
import torch

from ... import floatmath
from ...config import deep_merge
from ...evaluate.attacks import lira, rmia
from ...evaluate.attacks.loss_threshold import loss_threshold_auc
from ...evaluate.attacks.references import train_references
from ...evaluate.attacks.shadow import stratified_halves, train_shadows
from ...evaluate.forward import logits_in_batches
from ...evaluate.metrics import class_matched_pairs
from ...experiment import Setup, build_setup, make_split
from ...files import load_tensors, save_tensors, write_json
from ...methods import MethodInfo, Unlearned, registry
from ...privacy import audit
from ...report.claims import UNINFORMATIVE
from ...resolved import config_record
from ...seeding import generator
from . import config
from .originals import FAMILIES, Context

log = logging.getLogger("unlearning")

SETTINGS = ("client", "sample")


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


# ----------------------------------------------------------------------------------------------- judging

class Judge:
    """Test and forget accuracy, the loss-threshold attack and RMIA, for any list of per-client probability
    functions; the reference models are trained once per setup (`attack.references`):

    - online (RMIA as its paper runs it): `reference_models` references trained by the target's own D-SGD recipe
      (evaluate/attacks/references.py) on complementary halves of a pool of the candidates (members: the forget
      set; non-members: held-out test samples) and population samples z (the other test half), so that every
      candidate and every z is a member of exactly half of them; Pr(x) and Pr(z) are the mean over all of them.
      The pool is at most twice the target's training set, so that a reference trains on at most the target's
      amount of data: non-members and z are min(half the test set, (2 n_target - |forget|) / 2) each.
    - offline (cheaper, labelled): references trained centrally for `reference_epochs` on halves of half the test
      set (never on a candidate), Pr(x) by RMIA's eq. 10 with `a` chosen on the references themselves (rmia.tune_a);
      non-members and z: the two test halves whole.

    Every model's scores are kept (`scores`: per judged row, [models, candidates], members first; stored as
    `score_counts`)."""

    def __init__(self, setup: Setup):
        a = setup.cfg["attack"]
        self.setup, self.mode = setup, a["references"]
        forget = setup.request.samples(setup.data.indices).to(setup.data.x.device)
        self.x_forget, self.y_forget = setup.data.x[forget], setup.data.y[forget].cpu()
        pop_idx, eval_idx = stratified_halves(setup.y_test.cpu(), setup.seed)
        if self.mode == "online":
            n_target = sum(int(k.sum()) for k in setup.data.keep)
            m = min(len(pop_idx), len(eval_idx), (2 * n_target - len(self.y_forget)) // 2)
            if m < 1:
                raise ValueError(f"{setup.name}: attack.references = online leaves no non-member candidates (the "
                                 f"forget set, {len(self.y_forget)}, fills the pool of twice the training set, "
                                 f"{n_target}); valid: references: offline")
            gen = generator(setup.seed, setup.name, "rmia-subsample")
            pop_idx = pop_idx[torch.randperm(len(pop_idx), generator=gen)[:m]].sort().values
            eval_idx = eval_idx[torch.randperm(len(eval_idx), generator=gen)[:m]].sort().values
        self.x_pop, self.y_pop = setup.x_test[pop_idx.to(setup.device)], setup.y_test.cpu()[pop_idx]
        self.x_out, self.y_out = setup.x_test[eval_idx.to(setup.device)], setup.y_test.cpu()[eval_idx]
        x_cand, y_cand = torch.cat([self.x_forget, self.x_out]), torch.cat([self.y_forget, self.y_out])
        if self.mode == "online":
            refs = train_references(setup, torch.cat([x_cand, self.x_pop]), torch.cat([y_cand, self.y_pop]),
                                    a["reference_models"])
            thetas, member = refs["theta"], refs["member"].numpy()
            cand_member, pop_member = member[:, :len(y_cand)], member[:, len(y_cand):]
            self.a, self.a_auc = None, None
            self.reference_accuracy = refs["train_accuracy"].tolist()
        else:
            refs = train_shadows(setup, pop_idx, a["reference_models"], a["reference_epochs"])
            thetas, cand_member = refs["shadow_theta"], None
            pop_member = refs["shadow_trained_on"][:, pop_idx].numpy()
            self.reference_accuracy = refs["shadow_train_accuracy"].tolist()
        self.p_ref = np.stack([self._true(self._flat(t), x_cand, y_cand) for t in thetas])
        p_ref_pop = np.stack([self._true(self._flat(t), self.x_pop, self.y_pop) for t in thetas])
        if self.mode == "offline":
            self.a, self.a_auc = rmia.tune_a(p_ref_pop, pop_member)
        self.cand_member, self.p_ref_pop, self.pop_member = cand_member, p_ref_pop, pop_member
        # LiRA beside RMIA on the same references: one pooled variance per side below 64 references (its Sec. VI.C)
        self.lira_variance = "global" if len(thetas) < 64 else "per_example"
        self.rmia = rmia.RMIA(rmia.DEFAULT_A if self.a is None else self.a).fit({"p_ref_pop": p_ref_pop,
                                                                                  "pop_member": pop_member})
        self.pairs = class_matched_pairs(self.y_forget, setup.y_test.cpu(), a["mia_samples"],
                                         generator(setup.seed, setup.name, "mia"))
        self.scores: dict[str, np.ndarray] = {}

    def with_references(self, k: int) -> "Judge":
        """This judge with its first `k` references only (complementary pairs: the first k of a larger set are
        the k a run with `reference_models: k` trains), RMIA refitted on them (offline: `a` tuned again)."""
        if not 2 <= k <= len(self.p_ref) or k % 2:
            raise ValueError(f"common.decentralized.attack.reference_counts: {k}; valid: even numbers from 2 to "
                             f"reference_models' largest, {len(self.p_ref)}")
        sub = copy.copy(self)
        sub.p_ref, sub.p_ref_pop = self.p_ref[:k], self.p_ref_pop[:k]
        sub.cand_member = None if self.cand_member is None else self.cand_member[:k]
        sub.pop_member = self.pop_member[:k]
        sub.lira_variance = "global" if k < 64 else "per_example"
        if self.mode == "offline":
            sub.a, sub.a_auc = rmia.tune_a(sub.p_ref_pop, sub.pop_member)
        sub.rmia = rmia.RMIA(rmia.DEFAULT_A if sub.a is None else sub.a).fit({"p_ref_pop": sub.p_ref_pop,
                                                                                "pop_member": sub.pop_member})
        sub.scores = {}
        return sub

    def describe(self) -> dict:
        """What the strong attack was, for the result file."""
        return {"references": self.mode, "reference_models": len(self.p_ref), "a": self.a,
                "lira": ("online" if self.cand_member is not None else "offline") + f", {self.lira_variance} variance",
                "a_mean_auc": self.a_auc, "members": len(self.y_forget), "nonmembers": len(self.y_out),
                "population": len(self.y_pop), "reference_train_accuracy": self.reference_accuracy}

    def score_counts(self) -> dict[str, torch.Tensor]:
        """The kept scores exactly and compactly: each is (the number of population samples z it beats) / |z|,
        so the counts (int16 where |z| allows) are stored and a score is count / population."""
        m = len(self.y_pop)
        out = {}
        for key, s in self.scores.items():
            counts = np.rint(s * m)
            assert np.array_equal(counts / m, s), key  # a score is a fraction of the population, exactly
            out[key] = torch.from_numpy(counts.astype(np.int16 if m < 2**15 else np.int32))
        return out

    def _flat(self, theta: torch.Tensor):
        setup = self.setup
        return lambda x: torch.cat(list(logits_in_batches(setup, theta.to(setup.device), x))).softmax(1).cpu()

    @staticmethod
    def _true(probs_fn, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        return probs_fn(x).double().gather(1, y.long()[:, None])[:, 0].numpy()

    def models(self, theta: torch.Tensor) -> list:
        """One probability function per row of stacked flat models."""
        return [self._flat(row) for row in theta]

    def one(self, probs_fn) -> dict:
        """The metrics of one model (a function x -> softmax probabilities on the CPU)."""
        s = self.setup
        y_test = s.y_test.cpu()
        p_test, p_forget = probs_fn(s.x_test), probs_fn(self.x_forget)
        nll = lambda p, y: -floatmath.log(p.gather(1, y.long()[:, None])[:, 0].clamp_min(1e-12))  # noqa: E731
        p_cand = np.r_[self._true(probs_fn, self.x_forget, self.y_forget), self._true(probs_fn, self.x_out, self.y_out)]
        score = self.rmia.member_scores({"p_target": p_cand, "p_ref": self.p_ref, "ref_member": self.cand_member,
                                         "p_target_pop": self._true(probs_fn, self.x_pop, self.y_pop)})
        members = len(self.y_forget)
        r = rmia.metrics(score[:members], score[members:])
        lira_score = lira.scores(p_cand, self.p_ref, self.cand_member, self.lira_variance)
        li = rmia.metrics(lira_score[:members], lira_score[members:])
        return {"scores": score, "test_accuracy": float((p_test.argmax(1) == y_test).float().mean()),
                "forget_accuracy": float((p_forget.argmax(1) == self.y_forget).float().mean()),
                "loss_threshold_auc": loss_threshold_auc(nll(p_forget, self.y_forget)[self.pairs[0]],
                                                         nll(p_test, y_test)[self.pairs[1]]),
                "rmia_auc": r["auc"], "rmia_tpr_at_1pct_fpr": r["tpr_at_0.01_fpr"],
                "rmia_tpr_at_0.1pct_fpr": r["tpr_at_0.001_fpr"] if r["resolved_0.001"] else None,
                "lira_auc": li["auc"], "lira_tpr_at_1pct_fpr": li["tpr_at_0.01_fpr"],
                "lira_tpr_at_0.1pct_fpr": li["tpr_at_0.001_fpr"] if li["resolved_0.001"] else None}

    def __call__(self, probs_fns: list, key: str) -> dict:
        """The mean over the remaining clients' models (one function each), with the spread over clients; their
        RMIA scores are kept under `key`."""
        rows = [self.one(f) for f in probs_fns]
        self.scores[key] = np.stack([r.pop("scores") for r in rows])
        out = {k: None if any(r[k] is None for r in rows) else float(np.mean([r[k] for r in rows])) for k in rows[0]}
        out["models"] = len(rows)
        out["forget_accuracy_min_max"] = [min(r["forget_accuracy"] for r in rows),
                                          max(r["forget_accuracy"] for r in rows)]
        return out


# ----------------------------------------------------------------------------------------------- runs

def configured_methods(params: dict, setting: str, names: list[str] | None = None) -> dict[str, MethodInfo]:
    """The setting's `methods` (or `names`), each declared by a module (methods/registry.py), applying to the
    setting and starting from a training family that exists: else a KeyError naming the key and what is valid."""
    key = f"common.decentralized.{setting}.methods"
    names = setting_config(params, setting)["methods"] if names is None else names
    registry.check(key, names)
    return checked(key, setting, {m: registry.load(m) for m in names})


def checked(key: str, setting: str, infos: dict[str, MethodInfo]) -> dict[str, MethodInfo]:
    for m, info in infos.items():
        if setting in info.does_not_apply:
            raise KeyError(f"{key}: {m!r} does not apply to this setting ({info.does_not_apply[setting]})")
        if info.original not in FAMILIES:
            raise KeyError(f"{key}: {m!r} starts from the original {info.original!r} ({info.module}); valid: "
                           f"{', '.join(FAMILIES)}")
    return infos


def judge_methods(params: dict, setting: str, seed: int, features: str,
                  methods: dict[str, MethodInfo] | None = None) -> tuple[dict, dict[str, float], "Judge"]:
    """Run `methods` (default: the setting's configured ones; any MethodInfo, registered or not: your own callable
    wrapped as `MethodInfo(name, fn, label)`) on the setting's task for `seed`, each from its own original, and
    judge every model: the result (what common-decentralized writes), the wall seconds and the Judge (its RMIA
    scores). The Python entry point of docs/extending.md."""
    seeds = config(params)["decentralized"]["seeds"]
    if seed not in seeds:
        raise KeyError(f"common.decentralized.seeds: {seed} is not in it; valid: {', '.join(map(str, seeds))}")
    methods = (configured_methods(params, setting) if methods is None else
               checked(f"common.decentralized.{setting}.methods", setting, methods))
    setup = make_setup(params, setting, seed, features)
    cfg, budget = setup.cfg, config(params)["budget"]
    request = setup.request
    judge = Judge(setup)
    log.info("%s seed %d: RMIA %s, reference models' train accuracy %s", setting, seed, judge.mode,
             [round(a, 3) for a in judge.reference_accuracy])
    registered = registry.load_all()
    result = {"setting": setting, "seed": seed, "scale": params["scale"], "clients": cfg["clients"],
              "forget": cfg["forget"], "forget_samples": len(judge.y_forget), "dim": setup.spec.dim,
              "rmia": judge.describe(), "originals": {}, "methods": {},
              "does_not_apply": {m: i.does_not_apply[setting] for m, i in registered.items()
                                 if setting in i.does_not_apply},
              "labels": {m: i.label for m, i in {**registered, **methods}.items()},
              "config": config_record(params)}
    seconds: dict[str, float] = {}

    def record(method: str, info: MethodInfo, res: Unlearned) -> None:
        fns = res.predict if res.predict is not None else judge.models(res.theta)
        result["methods"][method] = {**judge(fns, method), "label": info.label, "trained_by": info.original,
                                     "gradient_evaluations": res.cost.grad_evals, "bytes_read": res.cost.bytes_read,
                                     "communication_floats": res.cost.communication_floats,
                                     "claimed": info.claim(res, budget)}
        seconds[method] = res.cost.wall_time_s
        m = result["methods"][method]
        log.info("%s seed %d %s: test %.3f, forget %.3f, RMIA TPR@1%% %.3f (%.2f s)", setting, seed, method,
                 m["test_accuracy"], m["forget_accuracy"], m["rmia_tpr_at_1pct_fpr"], res.cost.wall_time_s)

    gradient: list[Setup] = []  # the Eq. 2 twin, built once if a family needs it

    def gradient_setup() -> Setup:
        if not gradient:
            gradient.append(make_setup(params, setting, seed, features, mixing="gradient"))
        return gradient[0]

    ran: dict[str, tuple] = {}  # method -> (its declaration, its original's state, its params, its result)
    with tempfile.TemporaryDirectory(prefix="common-ground-") as tmp:
        ctx = Context(setup, gradient_setup, Path(tmp))
        for family, (what, train_family) in FAMILIES.items():
            mine = [m for m, info in methods.items() if info.original == family]
            if not mine:
                continue
            orig = train_family(ctx)
            fns = orig.predict if orig.predict is not None else judge.models(orig.rows)
            result["originals"][family] = {**judge(fns, f"original {family}"), "trained_by": what,
                                           "gradient_evaluations": orig.cost.grad_evals,
                                           "communication_floats": orig.cost.communication_floats}
            seconds[f"original {family}"] = orig.cost.wall_time_s
            for method in mine:
                info = methods[method]
                mcfg = cfg.get(info.params_key or method, {})
                if info.takes_budget:
                    mcfg = {**mcfg, "epsilon": budget["epsilon"], "delta": budget["delta"]}
                ran[method] = (info, orig.state, mcfg, info(orig.state, request, mcfg))
                record(method, info, ran[method][3])
        for method, (info, state, mcfg, res) in ran.items():
            result["methods"][method]["audit"] = audit_row(info, state, request, mcfg, res, ran.get("retrain"),
                                                           result["methods"][method]["claimed"], budget["delta"])
    return result, seconds, judge


def audit_row(info: MethodInfo, state, request, params: dict, res: Unlearned, retrain: tuple | None, claim: dict,
              delta: float) -> dict:
    """The audit of one method's claim in a decentralized setting, in the centralized tables' words: for a
    Gaussian mechanism around deterministic outputs (its module's `audit_pair`), the exact epsilon at `delta` of
    each remaining client's model against the same client's retrained model under the same noise (the claim read
    per model, as the tables judge each client's model), the largest over clients; "violated" above the claim,
    else "not faulted: exact"."""
    eps = claim.get("epsilon")
    if eps is None:
        return {"status": "no certificate" if claim.get("sigma") is None else
                "no epsilon claimed: its sigma's epsilon is not computed (see its claim)", "exact_epsilon": None}
    if info.name == "retrain":
        return {"status": "reference: exact retraining", "exact_epsilon": 0.0}
    if info.audit_pair is None:
        return {"status": f"{UNINFORMATIVE}: no audit pair for this mechanism (its noise is not added around one "
                          "deterministic output) and no sampling audit runs in the decentralized settings",
                "exact_epsilon": None}
    if retrain is None:
        return {"status": "missing: no retraining to compare with (add retrain to the setting's methods)",
                "exact_epsilon": None}
    noiseless, stds = info.audit_pair(state, request, params, res)
    reference = dict(zip(retrain[3].clients, retrain[3].theta))
    per_client = []
    for row, (client, std) in enumerate(zip(res.clients, stds)):
        diff = (noiseless[row] - reference[client]).double().cpu().numpy()
        gap = math.sqrt(math.fsum(diff * diff))  # exactly summed: the same at any thread count
        eps_c = audit.exact_epsilon(gap, std, delta) if std > 0 else (0.0 if gap == 0 else math.inf)
        # 6 significant digits: a model's last float32 bits follow the thread count (GEMM splits), which moves this
        # epsilon in its 9th digit; the file stays the same at any thread count
        per_client.append(float(f"{eps_c:.6g}"))
    worst = max(per_client)
    shown = "above 1e6 (audit.exact_epsilon's range)" if math.isinf(worst) else f"{worst:.3g}"
    text = f"exact epsilon {shown} (the largest of {len(per_client)} clients' models) vs claimed {eps:g}"
    return {"status": f"{audit.VIOLATED}: exact: {text}" if worst > eps else f"{audit.NOT_FAULTED}: exact: {text}",
            "exact_epsilon": worst, "exact_epsilon_per_client": per_client}


def step_decentralized(params: dict, setting: str, seed: int, features: str, out: str, timing: str,
                       scores: str, methods: list[str] | None = None) -> None:
    """The setting's methods (or `methods`, names) for one seed, each beside the original it starts from (see the
    module); every judged model's RMIA scores go to `scores` (safetensors: one [models, candidates] tensor per row,
    members first; `original <kind>` for the originals; each score = count / the metadata's population)."""
    chosen = None if methods is None else configured_methods(params, setting, methods)
    result, seconds, judge = judge_methods(params, setting, seed, features, chosen)
    save_tensors(scores, judge.score_counts(),
                 {"members": len(judge.y_forget), "nonmembers": len(judge.y_out), "population": len(judge.y_pop),
                  "setting": setting, "seed": seed, "score": "count / population"})
    write_json(out, result)
    write_json(timing, {"setting": setting, "seed": seed, "seconds": seconds, "threads": torch.get_num_threads(),
                        "device": str(judge.setup.device)})


REFERENCE_METRICS = ("rmia_auc", "rmia_tpr_at_1pct_fpr", "lira_auc", "lira_tpr_at_1pct_fpr")


def reference_study(params: dict, setting: str, seed: int, features: str) -> dict:
    """How each attack's strength against the D-SGD original moves with the number of reference models (issue 56):
    `attack.reference_counts`' largest trained once, then RMIA and LiRA on the first k of them for each count k,
    against every remaining client's model of the original (the mean over them)."""
    counts = sorted(config(params)["decentralized"]["attack"]["reference_counts"])
    wide = json.loads(json.dumps(params))
    wide["common"].setdefault(params["scale"], {}).setdefault("decentralized", {}).setdefault("attack", {})[
        "reference_models"] = counts[-1]
    setup = make_setup(wide, setting, seed, features)
    judge = Judge(setup)
    with tempfile.TemporaryDirectory(prefix="common-references-") as tmp:
        orig = FAMILIES["dsgd"][1](Context(setup, None, Path(tmp)))
    fns = orig.predict if orig.predict is not None else judge.models(orig.rows)
    rows = []
    for k in counts:
        sub = judge.with_references(k)
        one = [sub.one(f) for f in fns]
        rows.append({"reference_models": k, **{m: float(np.mean([r[m] for r in one])) for m in REFERENCE_METRICS},
                     "a": sub.a})
        log.info("%s seed %d, %d references: RMIA AUC %.3f, LiRA AUC %.3f", setting, seed, k, rows[-1]["rmia_auc"],
                 rows[-1]["lira_auc"])
    return {"setting": setting, "seed": seed, "scale": params["scale"], "original": "dsgd", "models": len(fns),
            "attack": {**judge.describe(), "reference_models": counts[-1]}, "rows": rows,
            "config": config_record(params)}  # no wall time: results are compared byte for byte (its benchmark has it)


def step_references(params: dict, setting: str, seed: int, features: str, out: str) -> None:
    write_json(out, reference_study(params, setting, seed, features))


ROW = ("test_accuracy", "forget_accuracy", "loss_threshold_auc", "rmia_auc", "rmia_tpr_at_1pct_fpr", "lira_auc",
       "lira_tpr_at_1pct_fpr", "communication_floats")


def method_rows(params: dict, names: list[str], setting: str = "client", seed: int | None = None,
                features: str = "", out: str | None = None) -> str:
    """`names` (with retraining, to compare) on one seed of `setting`: their rows and their originals' as text, the
    full result to `out` (JSON) if given. `python -m unlearning common-method NAME ...`."""
    seed = config(params)["decentralized"]["seeds"][0] if seed is None else seed
    names = list(dict.fromkeys(["retrain", *names]))
    result, _, _ = judge_methods(params, setting, seed, features,
                                 configured_methods(params, setting, names))
    if out:
        write_json(out, result)
    lines = [f"{setting} setting, seed {seed} ({params['scale']} scale): " + ", ".join(ROW)]
    for group in ("originals", "methods"):
        for key, m in result[group].items():
            name = f"original {key}" if group == "originals" else m["label"]
            values = "  ".join(f"{m[k]:.4g}" if isinstance(m[k], float) else str(m[k]) for k in ROW)
            claim = "" if group == "originals" else f"  ({m['claimed']['basis']})"
            lines.append(f"{name:<24} {values}{claim}")
    return "\n".join(lines)
