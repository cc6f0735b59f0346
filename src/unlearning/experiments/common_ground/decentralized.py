"""Common ground, decentralized settings (issue 16): one D-SGD task, one client or 10 % of every client's data
removed, every decentralized method of the five papers from the same data, theta^0, graphs and seed.

The task is `common.decentralized` (the spine's keys: dataset, model, clients, partition, topology, train), the
setting's `forget` request merged in. Each method starts from the trained state its paper assumes:

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

import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ... import floatmath
from ...config import deep_merge
from ...evaluate.attacks import rmia
from ...evaluate.attacks.loss_threshold import loss_threshold_auc
from ...evaluate.attacks.references import train_references
from ...evaluate.attacks.shadow import stratified_halves, train_shadows
from ...evaluate.forward import logits_in_batches
from ...evaluate.metrics import class_matched_pairs
from ...experiment import Setup, build_setup, make_split
from ...files import load_tensors, save_tensors, write_json
from ...history import CheckpointStore, HistoryWriter
from ...methods import Cost, TrainedState, Unlearned, get_method
from ...resolved import config_record
from ...seeding import generator
from ...topology import graph_for_round
from ...train.dsgd import train
from . import config

log = logging.getLogger("unlearning")

SETTINGS = ("client", "sample")
METHODS = {"client": ("retrain", "finetune", "du", "pdudt", "pdudt_es", "fedrecovery", "fats", "hdus", "rrdu"),
           "sample": ("retrain", "finetune", "du")}
# Why a listed method has no row in a setting: said in the report
DOES_NOT_APPLY = {
    ("sample", "pdudt"): "PDUDT removes one whole client (its Eq. 7 drops the target's rows of W)",
    ("sample", "pdudt_es"): "PDUDT(ES) removes one whole client (its Eq. 7 drops the target's rows of W)",
    ("sample", "fedrecovery"): "FedRecovery removes one client's gradient residuals",
    ("sample", "fats"): "FATS-Unl is built here for client unlearning (its sample variant needs per-sample draws)",
    ("sample", "hdus"): "HDUS drops a removed client's seed models; samples have none",
    ("sample", "rrdu"): "RR-DU's Algorithm 4 unlearns a forget set held by one client u (the walk's restart node); "
                        "this setting's lies at every client",
}
TRAINED_BY = {"retrain": "dsgd", "finetune": "dsgd", "du": "dsgd", "pdudt": "eq2", "pdudt_es": "eq2",
              "fedrecovery": "fedsgd", "fats": "fats", "hdus": "hdus", "rrdu": "walk"}
ORIGINALS = {"dsgd": "D-SGD (train.mixing)", "eq2": "D-SGD by PDUDT's Eq. 2 (gradient mixing)",
             "fedsgd": "FedSGD, every client every round (FedRecovery)",
             "fats": "FedAvg over sampled clients (FATS)", "hdus": "HDUS main and seed models",
             "walk": "a token walking the clients with Adam (RR-DU's Algorithm 2)"}


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


# ----------------------------------------------------------------------------------------------- costs

def dsgd_floats(setup: Setup, clients: list[int], rounds: range) -> int:
    """Floats D-SGD sends over `rounds`: every edge among `clients` carries a d-vector each way."""
    sched = setup.schedule()
    if sched.topology == "complete":
        return 2 * len(rounds) * len(clients) * (len(clients) - 1) // 2 * setup.spec.dim
    edges = 0
    for t in rounds:
        graph = graph_for_round(sched.topology, sched.graph_nodes, sched.p_edge, sched.seed, t,
                                without=sched.keep_connected_without)
        edges += graph.subgraph(clients).number_of_edges()
    return 2 * edges * setup.spec.dim


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
        self.cand_member = cand_member
        self.rmia = rmia.RMIA(rmia.DEFAULT_A if self.a is None else self.a).fit({"p_ref_pop": p_ref_pop,
                                                                                  "pop_member": pop_member})
        self.pairs = class_matched_pairs(self.y_forget, setup.y_test.cpu(), a["mia_samples"],
                                         generator(setup.seed, setup.name, "mia"))
        self.scores: dict[str, np.ndarray] = {}

    def describe(self) -> dict:
        """What the strong attack was, for the result file."""
        return {"references": self.mode, "reference_models": len(self.p_ref), "a": self.a,
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
        return {"scores": score, "test_accuracy": float((p_test.argmax(1) == y_test).float().mean()),
                "forget_accuracy": float((p_forget.argmax(1) == self.y_forget).float().mean()),
                "loss_threshold_auc": loss_threshold_auc(nll(p_forget, self.y_forget)[self.pairs[0]],
                                                         nll(p_test, y_test)[self.pairs[1]]),
                "rmia_auc": r["auc"], "rmia_tpr_at_1pct_fpr": r["tpr_at_0.01_fpr"],
                "rmia_tpr_at_0.1pct_fpr": r["tpr_at_0.001_fpr"] if r["resolved_0.001"] else None}

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

def _trained(setup: Setup, directory: Path, history: bool) -> tuple[TrainedState, Cost]:
    """The original D-SGD run of `setup`: final checkpoint (fine-tuning starts there) and, with `history`, every
    round's gradients and graphs (PDUDT)."""
    rounds, clients = setup.cfg["train"]["rounds"], list(range(setup.cfg["clients"]))
    store = CheckpointStore(directory / "checkpoints")
    writer = (HistoryWriter(directory / "history", rounds, clients, setup.spec.dim,
                            setup.params["engine"]["history_dtype"]) if history else None)
    theta, train_log = train(setup.model, setup.spec, setup.theta0.expand(len(clients), -1).clone(), setup.data,
                             clients, setup.schedule(), range(rounds), setup.strategy, history=writer)
    if writer is not None:
        writer.close()
    store.save(rounds, theta, clients)
    cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0, dsgd_floats(setup, clients, range(rounds)))
    return TrainedState(setup, theta, clients, rounds, directory), cost


def _ensembles(setup: Setup, ensembles: dict) -> list:
    from ...methods.hdus import ensemble_probabilities

    return [lambda x, e=e: ensemble_probabilities(setup, e, x) for e in ensembles.values()]


def rrdu_run(setup: Setup, r: dict, budget: dict) -> tuple[torch.Tensor, Cost, Unlearned]:
    """RR-DU on the setting's shards: the token trained by `r.train` hops of Algorithm 2 from theta^0, then
    Algorithm 4 (lightweight) for `r.unlearn.hops` with D_f = the leaving client's data, at the common budget.
    Returns the original token's parameters, its cost, and the unlearned token."""
    import copy

    from ...methods import rrdu
    from ...seeding import derive_seed
    from ...train.optim import LocalOptimizer
    from ...train.random_walk import Streams, TensorClient, Token, uniform_neighbour, walk

    u = setup.request.removed[0]
    clients = [TensorClient(setup.data.x[idx.to(setup.data.x.device)].cpu(),
                            setup.data.y[idx.to(setup.data.x.device)].cpu()) for idx in setup.data.indices]
    token = Token(copy.deepcopy(setup.model).cpu(), r["train"]["lr"], LocalOptimizer("adam"))
    token.set_theta(setup.theta0.cpu())  # the same theta^0 as every other training run
    batch = setup.cfg["train"]["batch_size"]
    torch.manual_seed(derive_seed(setup.seed, setup.name, "rrdu-torch"))
    start = time.perf_counter()
    walk(token, clients, r["train"]["hops"], uniform_neighbour(len(clients)),
         Streams.from_seed(derive_seed(setup.seed, setup.name, "rrdu-train")), batch, r["train"]["epochs"])
    trained = Cost(time.perf_counter() - start, token.examples, 0, r["train"]["hops"] * token.dim)
    original = token.theta()
    un = r["unlearn"]
    cfg = rrdu.RRDUConfig(u=u, p=un["p"], T_u=un["hops"], s=un["s"], batch_size=batch, L=un["L"], rho=un["rho"],
                          epsilon=budget["epsilon"], delta=budget["delta"], mode="lightweight",
                          semantics=un["semantics"])
    token.lr, token.examples = float(un["lr"]), 0
    start = time.perf_counter()
    hops = rrdu.unlearn(token, clients, clients[u], len(clients[u]), cfg,
                        Streams.from_seed(derive_seed(setup.seed, setup.name, "rrdu-unlearn")))
    cert = cfg.certificate(len(clients))
    certificate = {"epsilon": budget["epsilon"], "delta": budget["delta"], "sigma": cfg.noise(len(clients)),
                   "semantics": un["semantics"], "u_visits": sum(h.at_u for h in hops), "clipped": cfg.clip,
                   "certified": cfg.certified, "forget_grad_norm_max": max((h.grad_norm for h in hops if h.at_u),
                                                                           default=None),
                   "nominal_epsilon": None if cert is None else cert.as_dict()}
    cost = Cost(time.perf_counter() - start, token.examples, 0, un["hops"] * token.dim)
    return original, trained, Unlearned(token.theta()[None].to(setup.device), [-1], cost, certificate)


def claimed(method: str, result: Unlearned, budget: dict) -> dict:
    """What the method's certificate claims at the common budget, or why it claims nothing."""
    cert = result.certificate
    if method == "retrain":
        return {"epsilon": 0.0, "basis": "exact: the same training without the forget set"}
    if method == "fats":
        return {"epsilon": 0.0, "basis": "exact in distribution: FedAvg re-run from the first round the target "
                                          f"was sampled (round {cert.get('rollback_round')})"}
    if method == "du":
        return {"epsilon": cert["epsilon"], "delta": cert["delta"], "sigma": cert["sigma"],
                "basis": f"DU Theorem 1 (C_eff noise at epsilon {budget['epsilon']:g}); assumes {cert['assumes']}, "
                         "which this model is not"}
    if method == "rrdu":
        from ...privacy.rrdu_noise import WHY

        return {"epsilon": cert["epsilon"], "delta": cert["delta"], "sigma": cert["sigma"],
                "basis": "RR-DU Cor. 5.2 at the common budget" + ("" if cert["certified"] else f" (nominal: {WHY})")}
    if method in ("pdudt", "pdudt_es", "fedrecovery"):
        return {"epsilon": None, "sigma": cert["sigma"],
                "basis": "its paper's sigma; the epsilon of Theorem 4.9 (PDUDT) or of FedRecovery's Theorem needs "
                         "smoothness and gradient-variance constants no paper gives for this model: not computed"}
    return {"epsilon": None, "basis": "no certificate (an approximate method)"}


def step_decentralized(params: dict, setting: str, seed: int, features: str, out: str, timing: str,
                       scores: str) -> None:
    """Every method of the setting for one seed, each beside the original it starts from (see the module); every
    judged model's RMIA scores go to `scores` (safetensors: one [models, candidates] tensor per row, members
    first; `original <kind>` for the originals; each score = count / the metadata's population)."""
    seeds = config(params)["decentralized"]["seeds"]
    if seed not in seeds:
        raise KeyError(f"common.decentralized.seeds: {seed} is not in it; valid: {', '.join(map(str, seeds))}")
    setup = make_setup(params, setting, seed, features)
    cfg, budget = setup.cfg, config(params)["budget"]
    methods, request = cfg["methods"], setup.request
    judge = Judge(setup)
    log.info("%s seed %d: RMIA %s, reference models' train accuracy %s", setting, seed, judge.mode,
             [round(a, 3) for a in judge.reference_accuracy])
    removed = set(request.removed)
    result = {"setting": setting, "seed": seed, "scale": params["scale"], "clients": cfg["clients"],
              "forget": cfg["forget"], "forget_samples": len(judge.y_forget), "dim": setup.spec.dim,
              "rmia": judge.describe(), "originals": {}, "methods": {},
              "does_not_apply": {m: why for (s, m), why in DOES_NOT_APPLY.items() if s == setting},
              "config": config_record(params)}
    seconds: dict[str, float] = {}

    def keep(theta: torch.Tensor, clients: list[int]) -> torch.Tensor:
        return theta[[i for i, c in enumerate(clients) if c not in removed]]

    def record(method: str, res: Unlearned, probs_fns: list) -> None:
        result["methods"][method] = {**judge(probs_fns, method), "trained_by": TRAINED_BY[method],
                                     "gradient_evaluations": res.cost.grad_evals, "bytes_read": res.cost.bytes_read,
                                     "communication_floats": res.cost.communication_floats,
                                     "claimed": claimed(method, res, budget)}
        seconds[method] = res.cost.wall_time_s
        m = result["methods"][method]
        log.info("%s seed %d %s: test %.3f, forget %.3f, RMIA TPR@1%% %.3f (%.2f s)", setting, seed, method,
                 m["test_accuracy"], m["forget_accuracy"], m["rmia_tpr_at_1pct_fpr"], res.cost.wall_time_s)

    def original(kind: str, theta: torch.Tensor | list, clients: list[int], cost: Cost) -> None:
        fns = theta if isinstance(theta, list) else judge.models(keep(theta, clients))
        result["originals"][kind] = {**judge(fns, f"original {kind}"), "trained_by": ORIGINALS[kind],
                                     "gradient_evaluations": cost.grad_evals,
                                     "communication_floats": cost.communication_floats}
        seconds[f"original {kind}"] = cost.wall_time_s

    with tempfile.TemporaryDirectory(prefix="common-ground-") as tmp:
        root = Path(tmp)
        state, cost = _trained(setup, root / "dsgd", history=False)
        original("dsgd", state.theta, state.clients, cost)
        for method in ("retrain", "finetune", "du"):
            if method not in methods:
                continue
            mcfg = cfg.get(method, {})
            if method == "du":
                mcfg = {**mcfg, "epsilon": budget["epsilon"], "delta": budget["delta"]}
            res = get_method(method)(state, request, mcfg)
            if method != "du":  # DU's flood is counted by DU; the others re-run D-SGD
                start = state.rounds if method == "finetune" else 0
                rounds = range(start, start + (mcfg["rounds"] if method == "finetune" else state.rounds))
                res.cost.communication_floats = dsgd_floats(setup, res.clients, rounds)
            record(method, res, judge.models(res.theta))
        # PDUDT's and FedRecovery's training: the same task by Eq. 2 (gradient mixing)
        eq2 = (make_setup(params, setting, seed, features, mixing="gradient")
               if {"pdudt", "pdudt_es", "fedrecovery"} & set(methods) else None)
        if {"pdudt", "pdudt_es"} & set(methods):
            state2, cost2 = _trained(eq2, root / "eq2", history=True)
            original("eq2", state2.theta, state2.clients, cost2)
            for method in ("pdudt", "pdudt_es"):
                if method in methods:
                    res = get_method(method)(state2, request, cfg["pdudt"])
                    record(method, res, judge.models(res.theta))
        if "fedrecovery" in methods:
            from ...methods.fedrecovery import train_server

            n, rounds = cfg["clients"], cfg["train"]["rounds"]
            writer = HistoryWriter(root / "fedsgd" / "history", rounds, list(range(n)), eq2.spec.dim,
                                   params["engine"]["history_dtype"])
            theta, train_log = train_server(eq2, rounds, writer)
            writer.close()
            fed_cost = Cost(train_log.wall_time_s, train_log.grad_evals, 0, 2 * rounds * n * eq2.spec.dim)
            original("fedsgd", judge.models(theta[:1]), [-1], fed_cost)
            res = get_method("fedrecovery")(TrainedState(eq2, theta, list(range(n)), rounds, root / "fedsgd"),
                                            request, cfg["fedrecovery"])
            record("fedrecovery", res, judge.models(res.theta))
        if "fats" in methods:
            from ...methods.fats import train_fats

            k, rounds = cfg["fats"]["clients_per_round"], cfg["train"]["rounds"]
            (root / "fats" / "history").mkdir(parents=True)
            start = time.perf_counter()
            w, grads = train_fats(setup, root / "fats" / "history", k)
            original("fats", judge.models(w[None]), [-1],
                     Cost(time.perf_counter() - start, grads, 0, 2 * rounds * k * setup.spec.dim))
            res = get_method("fats")(TrainedState(setup, w[None], [-1], rounds, root / "fats"), request, cfg["fats"])
            floats = 2 * (rounds - res.certificate["rollback_round"]) * k * setup.spec.dim
            res.cost.communication_floats = floats
            record("fats", res, judge.models(res.theta))
        if "hdus" in methods:
            from ...methods import hdus

            (root / "hdus").mkdir()
            start = time.perf_counter()
            _, grads = hdus.train_hdus(setup, root / "hdus", cfg["hdus"]["public_fraction"])
            trained_s = time.perf_counter() - start
            # before unlearning: every remaining client's ensemble with every seed it holds, weights fitted alike
            before, _, _ = hdus.unlearn(setup, root / "hdus", cfg["hdus"]["refit_lr"], removed=())
            original("hdus", _ensembles(setup, {c: e for c, e in before.items() if c not in removed}), [],
                     Cost(trained_s, grads))
            ensembles, _, busiest_s = hdus.unlearn(setup, root / "hdus", cfg["hdus"]["refit_lr"])
            record("hdus", Unlearned(torch.zeros(0), list(ensembles), Cost(busiest_s, 0)),
                   _ensembles(setup, ensembles))
        if "rrdu" in methods:
            original_token, walk_cost, res = rrdu_run(setup, cfg["rrdu"], budget)
            original("walk", judge.models(original_token[None]), [-1], walk_cost)
            record("rrdu", res, judge.models(res.theta))
    save_tensors(scores, judge.score_counts(),
                 {"members": len(judge.y_forget), "nonmembers": len(judge.y_out), "population": len(judge.y_pop),
                  "setting": setting, "seed": seed, "score": "count / population"})
    write_json(out, result)
    write_json(timing, {"setting": setting, "seed": seed, "seconds": seconds, "threads": torch.get_num_threads(),
                        "device": str(setup.device)})
