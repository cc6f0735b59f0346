"""RR-DU's experiment (Lamri & Maniatakos 2025, Sec. 6, Tables 3 and 14-17, Figure 1): two steps per dataset.

The setting (Sec. 6.1, App. D): N clients on a complete graph, IID equal shards; client u holds, besides its
clean shard, m BadNets copies of its own images whose label is not the target (a 3x3 white trigger at the lower
right, stamped after augmentation and before normalisation, relabelled to the target); the forget set D_f is
exactly those m copies, so D minus D_f is the clean training data. One token (the model and its Adam state)
walks the graph for T hops (Alg. 2), one local epoch of minibatch Adam steps per hop, on the poisoned data: the
original theta_0. Every unlearning method then starts from theta_0 and its Adam state.

- `step_seed` (one per seed): the original, then Table 3: RR-DU (Alg. 4) with p in rrdu.table3.ps, no noise and
  no projection (sigma = 0, rho = infinity), T_u hops each, the same routing / minibatch / noise streams and
  dropout draws for every p; then the same runs under each other optimizer semantics of rrdu.table3.semantics
  (spec 2.4; `table3_semantics`). Writes the original's checkpoint (theta_0, BN buffers, Adam state).
- `step_ablation_part` (the first seed; four independent jobs joined by `merge_ablations`): the "baseline" RR-DU
  run at the defaults (p, s, rho, L, epsilon, delta; sigma from Cor. 5.2), shared by Tables 14-17 and Figure 1;
  Tables 14-17 (rho, L, epsilon, delta: one value changed, sigma recomputed, the baseline's streams); Spec A1's
  sensitivity reading (one local epoch per non-u hop); the baselines of Figure 1 on D minus D_f (fine-tuning,
  DDP, DP-SGD; methods/rrdu_baselines.py) and retraining from scratch (Alg. 2 on D minus D_f from the original's
  initialisation and walk streams, T and 2T hops).

Metrics (Sec. 6.1, App. D.1): clean test accuracy (%) in eval mode, and the ASR (%): the share of a fixed
triggered test set (rrdu.backdoor.test_size images of all classes, the target's too, so a clean model scores
about 1/classes) classified as the target. Diagnostics: the ASR on the set's non-target images, the share of
D_f (triggered) classified as the target, ||theta - theta_0||, the u-visits and the projections.

The results files are deterministic; wall times (training / unlearning computation, evaluation excluded) go to
the timing files. A run whose loss or weights stop being finite stops at once, naming the run and the hop.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from ...config import section_config
from ...data.backdoor import BackdoorClient, attack_success_rate, poison, poison_count, triggered_test_set
from ...data.partition import partition
from ...data.sources import DATASETS
from ...experiment import pick_device
from ...files import load_metadata, load_tensors, read_json, save_tensors, write_json
from ...methods import rrdu
from ...methods import rrdu_baselines as rb
from ...models import FLNet, resnet18_cifar
from ...privacy import rrdu_noise
from ...resolved import config_record
from ...seeding import derive_seed, deterministic_algorithms
from ...train.optim import LocalOptimizer, OptState
from ...train.random_walk import Hop, Streams, Token, uniform_neighbour, walk
from .layout import ablation_parts

log = logging.getLogger("unlearning")

SECTION = "rrdu"
SWEEPS = ("rho", "L", "epsilon", "delta")          # Tables 14, 15, 16, 17
ASR_GATE = 15.0                                   # "forgets": the first round with ASR <= 15 % (spec 8)
CIFAR_MEAN_STD = "the training set's channel mean and std"


def config(params: dict) -> dict:
    """The rrdu section with its scale override merged in."""
    return section_config(params, SECTION)


# ----------------------------------------------------------------------------------------------- setup

@dataclass
class Setup:
    """One (dataset, seed): the clients' data (pixel space, trigger stamped per batch), the forget set, the
    evaluation sets and the model's initialisation."""

    params: dict
    cfg: dict
    dataset: str
    seed: int
    name: str
    u: int
    target: int
    clients: list[BackdoorClient]      # D_v; client u with its m poisoned copies appended
    retained: list[BackdoorClient]     # D minus D_f
    forget: BackdoorClient             # D_f
    x_test: torch.Tensor               # clean evaluation images (normalised)
    y_test: torch.Tensor
    x_trigger: torch.Tensor            # the fixed triggered set (normalised)
    y_trigger: torch.Tensor            # its true labels
    build: Callable[[], torch.nn.Module]
    data: str = ""                     # the dataset of the processed file: "mnist_5k" where the subset serves MNIST
    device: torch.device = torch.device("cpu")  # the token's model and steps (the data and the streams: CPU)

    @property
    def n_u(self) -> int:
        return len(self.clients[self.u])

    @property
    def m(self) -> int:
        return len(self.forget)

    def run_seed(self, *keys) -> int:
        return derive_seed(self.params["seed"], self.name, *keys)


def dataset_cfg(cfg: dict, dataset: str) -> dict:
    if dataset not in cfg["datasets"]:
        raise KeyError(f"rrdu.datasets: {dataset!r} is not in it; valid: {', '.join(cfg['datasets'])}")
    return cfg["datasets"][dataset]


def _normaliser(kind: str, x_train: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """Table 9: 28x28 sets rescaled to [0, 1] only; CIFAR-10 channel-wise mean / std of the training set."""
    if kind == "unit":
        return None
    mean = x_train.mean(dim=(0, 2, 3), keepdim=True)
    std = x_train.std(dim=(0, 2, 3), keepdim=True)
    return lambda x: (x - mean) / std


def crop_flip(x: torch.Tensor, pad: int = 4) -> torch.Tensor:
    """Table 9's CIFAR augmentation per image: a random 32x32 crop of the zero-padded image and a horizontal flip
    with probability 1/2 (torch's global generator, reset per run like dropout's)."""
    n, _, h, w = x.shape
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,))
    dx = torch.randint(0, 2 * pad + 1, (n,))
    flip = torch.rand(n) < 0.5
    out = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])
    out[flip] = out[flip].flip(-1)
    return out


def build_model(name: str, shape: tuple[int, int, int], classes: int) -> torch.nn.Module:
    """FLNet for 28x28 images (Table 10), the CIFAR ResNet-18 with BatchNorm for 32x32."""
    if name == "flnet":
        return FLNet(shape[0], classes, shape[1])
    return resnet18_cifar(shape[0], classes, norm="batch")


def make_setup(params: dict, dataset: str, seed: int, processed: str) -> Setup:
    """Data, poison, evaluation sets and the model factory of one (dataset, seed); every generator derives from
    (global seed, "rrdu", dataset, seed)."""
    cfg = config(params)
    dcfg = dataset_cfg(cfg, dataset)
    if seed not in cfg["seeds"]:
        raise KeyError(f"rrdu.seeds: {seed} is not in it; valid: {', '.join(map(str, cfg['seeds']))}")
    deterministic_algorithms()
    device = pick_device(params["device"])
    classes, shape, _ = DATASETS[dataset].info
    raw = load_tensors(processed)
    x_train, y_train = raw["x_train"].float() / 255, raw["y_train"]
    x_test_all, y_test_all = raw["x_test"].float() / 255, raw["y_test"]
    if tuple(x_train.shape[1:]) != shape:
        raise ValueError(f"{processed}: images of shape {tuple(x_train.shape[1:])}, expected {shape} for {dataset}")
    name = f"rrdu_{dataset}_s{seed}"
    base = derive_seed(params["seed"], name)
    bd = cfg["backdoor"]
    u, target = bd["client"], bd["target"]
    if target >= classes:
        raise ValueError(f"rrdu.backdoor.target: {target} is not a class of {dataset}; valid: 0..{classes - 1}")
    norm = _normaliser(dcfg["preprocess"], x_train)
    augment = crop_flip if dcfg["preprocess"] == "cifar" else None
    shards = partition(y_train, cfg["clients"], "iid", base, per_client=cfg["train_per_client"])
    clients, retained = [], []
    for c, idx in enumerate(shards):
        x, y = x_train[idx], y_train[idx]
        clean = BackdoorClient(x, y, torch.zeros(len(y), dtype=torch.bool), augment, norm)
        retained.append(clean)
        if c != u:
            clients.append(clean)
            continue
        m = bd["poisoned"] if bd["poisoned"] is not None else poison_count(len(y))
        eligible = int((y != target).sum())
        if not 1 <= m <= eligible:
            raise ValueError(f"rrdu.backdoor.poisoned: {m} poisoned copies, but client {u} holds {eligible} images "
                             f"whose label is not the target {target}; valid: 1..{eligible} (or null: "
                             f"{poison_count(len(y))}, a sixth of its {len(y)} images)")
        px, py, _ = poison(x, y, m, target, derive_seed(base, "poison"))
        mask = torch.cat([torch.zeros(len(y), dtype=torch.bool), torch.ones(m, dtype=torch.bool)])
        clients.append(BackdoorClient(torch.cat([x, px]), torch.cat([y, py]), mask, augment, norm))
    forget = clients[u].subset(clients[u].poisoned)
    keep = torch.arange(len(y_test_all))
    if cfg["eval"]["test_images"] is not None and cfg["eval"]["test_images"] < len(keep):
        rng = np.random.default_rng(derive_seed(params["seed"], "rrdu", dataset, "test-images"))
        keep = torch.as_tensor(np.sort(rng.choice(len(keep), cfg["eval"]["test_images"], replace=False)))
    if bd["test_size"] > len(y_test_all):
        raise ValueError(f"rrdu.backdoor.test_size: {bd['test_size']} exceeds the {len(y_test_all)} test images of "
                         f"{dataset}; valid: at most {len(y_test_all)}")
    x_trig, y_trig, _ = triggered_test_set(x_test_all, y_test_all, bd["test_size"], bd["test_seed"])
    ident = (lambda x: x) if norm is None else norm
    init_seed = derive_seed(base, "init")

    def build() -> torch.nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            return build_model(dcfg["model"], shape, classes).to(device)  # initialised on the CPU: the same weights

    return Setup(params, cfg, dataset, seed, name, u, target, clients, retained, forget, ident(x_test_all[keep]),
                 y_test_all[keep], ident(x_trig), y_trig, build,
                 load_metadata(processed).get("dataset", dataset), device)


# ----------------------------------------------------------------------------------------------- evaluation

class Evaluator:
    """Clean accuracy and ASR in eval mode; accumulates its own wall time (excluded from the methods')."""

    def __init__(self, setup: Setup, chunk: int = 500):
        self.setup, self.chunk, self.seconds = setup, chunk, 0.0

    def _predict(self, model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        was = model.training
        model.eval()
        device = next(model.parameters()).device  # the images stay on the CPU, a chunk at a time moves
        with torch.no_grad():
            out = torch.cat([model(x[i:i + self.chunk].to(device)).argmax(1).cpu()
                             for i in range(0, len(x), self.chunk)])
        model.train(was)
        return out

    def __call__(self, model: torch.nn.Module, clean: bool = True, full: bool = False) -> dict:
        start = time.perf_counter()
        s = self.setup
        pred = self._predict(model, s.x_trigger)
        out = {}
        if clean:
            out["clean"] = 100.0 * float((self._predict(model, s.x_test) == s.y_test).float().mean())
        out["asr"] = attack_success_rate(pred, s.target)
        if full:
            out["asr_nontarget"] = attack_success_rate(pred[s.y_trigger != s.target], s.target)
            fx, _ = s.forget.batch(np.arange(len(s.forget)))
            with torch.random.fork_rng(devices=[]):  # D_f's batch draws no augmentation randomness of the run
                out["forget_asr"] = attack_success_rate(self._predict(model, fx), s.target)
        self.seconds += time.perf_counter() - start
        return out


# ----------------------------------------------------------------------------------------------- tokens

@dataclass(frozen=True)
class Snapshot:
    """A token's state: the flat parameters, the BatchNorm buffers and the Adam state."""

    theta: torch.Tensor
    buffers: dict[str, torch.Tensor]
    state: OptState


def new_token(setup: Setup) -> Token:
    return Token(setup.build(), setup.cfg["train"]["lr"], LocalOptimizer("adam"))


def snapshot(token: Token) -> Snapshot:
    return Snapshot(token.theta(), {k: v.clone() for k, v in token.model.named_buffers()}, token.state)


def restore(token: Token, snap: Snapshot, unlearn: dict) -> Token:
    """The token back at `snap` for an unlearning run: rrdu.unlearn's step size, and a fresh optimizer state at
    every hop under `adam_fresh` semantics (the snapshot's state is never modified in place, so it is shared)."""
    token.lr = float(unlearn["lr"])
    token.fresh_per_hop = unlearn["semantics"] == "adam_fresh"
    token.set_theta(snap.theta)
    buffers = dict(token.model.named_buffers())
    with torch.no_grad():
        for k, v in snap.buffers.items():
            buffers[k].copy_(v)
    token.state = snap.state
    token.examples = 0
    return token


def save_checkpoint(path: str, snap: Snapshot, meta: dict) -> None:
    tensors = {"theta": snap.theta, "adam.steps": snap.state.steps, "adam.exp_avg": snap.state.exp_avg,
               "adam.exp_avg_sq": snap.state.exp_avg_sq, **{f"buffer.{k}": v for k, v in snap.buffers.items()}}
    save_tensors(path, tensors, meta)


def load_checkpoint(path: str, device: str | torch.device = "cpu") -> Snapshot:
    t = load_tensors(path, device)
    state = OptState(t["adam.steps"], exp_avg=t["adam.exp_avg"], exp_avg_sq=t["adam.exp_avg_sq"])
    return Snapshot(t["theta"], {k.removeprefix("buffer."): v for k, v in t.items() if k.startswith("buffer.")},
                    state)


def _check_finite(token: Token, what: str, t: int, loss: float | None = None) -> None:
    if (loss is not None and not math.isfinite(loss)) or not bool(torch.isfinite(token.theta()).all()):
        raise FloatingPointError(f"{what}: the loss or the weights are not finite at hop {t}; stopped")


class Recorder:
    """The on_hop callback of a run: the finiteness check every hop, the evaluation every `every` hops and at
    the last, rounds numbered from `offset`; the ASR after each hop of `asr_at` too (`asr`: hop -> ASR)."""

    def __init__(self, evaluator: Evaluator, what: str, hops: int, offset: int, every: int, clean: bool,
                 check_loss: bool = True, asr_at: frozenset[int] = frozenset()):
        self.evaluator, self.what, self.hops, self.offset = evaluator, what, hops, offset
        self.every, self.clean, self.check_loss, self.asr_at = every, clean, check_loss, asr_at
        self.curve: list[dict] = []
        self.asr: dict[int, float] = {}

    def __call__(self, hop, token: Token) -> None:
        _check_finite(token, self.what, hop.t, hop.loss if self.check_loss else None)
        point = None
        if self.every and (hop.t % self.every == 0 or hop.t == self.hops):
            point = {"round": self.offset + hop.t, **self.evaluator(token.model, clean=self.clean)}
            self.curve.append(point)
        if hop.t in self.asr_at:
            self.asr[hop.t] = point["asr"] if point else self.evaluator(token.model, clean=False)["asr"]


def first_round_below(curve: list[dict], gate: float = ASR_GATE) -> int | None:
    """The first evaluated round whose ASR is at most `gate` (None: never)."""
    return next((p["round"] for p in curve if p["asr"] <= gate), None)


TAIL = 20  # hops of the final stretch summarised beside the final hop (issue 34)


def summary_hops(hops: int, u_hops: list[int]) -> frozenset[int]:
    """The hops whose ASR asr_summary reads: the last TAIL, and those around u's visits."""
    return frozenset(range(max(1, hops - TAIL + 1), hops + 1)) | set(between(u_hops)) | set(after(u_hops, hops))


def between(u_hops: list[int]) -> list[int]:
    """The hops that end a stretch of descent hops between two u-visits: the hop before each later visit."""
    visits = set(u_hops)
    return [t - 1 for t in u_hops if t - 1 not in visits and any(v < t - 1 for v in u_hops)]


def after(u_hops: list[int], hops: int) -> list[int]:
    """The visits that end a run of consecutive u-visits (the ASR right after u's last step of each run)."""
    visits = set(u_hops)
    return [t for t in u_hops if t + 1 not in visits or t == hops]


def asr_summary(asr: dict[int, float], hops: int, u_hops: list[int]) -> dict:
    """What a walk's ASR did, not hanging on one hop: the final value; the mean and minimum over the last TAIL
    hops; the u-visits (hops) and the last; the ASR just before each u-visit that ends a stretch of descent
    hops after an earlier visit ("between visits") and just after each run of consecutive visits."""
    tail = [asr[t] for t in range(max(1, hops - TAIL + 1), hops + 1)]
    return {"final": asr[hops] if hops else None, "tail_hops": len(tail),
            "tail_mean": float(np.mean(tail)) if tail else None, "tail_min": min(tail, default=None),
            "u_visit_hops": u_hops, "last_u_visit": max(u_hops, default=None),
            "between_visits": [asr[t] for t in between(u_hops)], "after_visits": [asr[t] for t in after(u_hops, hops)]}


def planned_visits(rcfg: rrdu.RRDUConfig, n_clients: int, streams: Streams) -> list[int]:
    """The hops at which RR-DU's walk will visit u: the routing rule replayed on a copy of the routing stream,
    which nothing else draws from (so that the ASR around each visit is evaluated, not every hop's)."""
    rule, rng = rrdu.restart_rule(n_clients, rcfg.u, rcfg.p), copy.deepcopy(streams.route)
    return [t for t in range(1, rcfg.T_u + 1) if rule(None, rng) == rcfg.u]


def anatomy(hops: list[rrdu.UnlearnHop], rho: float | None, kick: float, L: float, clipped: bool) -> dict:
    """The u-steps of a run, averaged (issue 34): the ascent's norm against the noise's and the step's, the
    ascent's share of the step, the cosine of the step taken with the ascent direction, the largest forget-gradient
    norm beside L (clipped or not), the noise kick eta sigma sqrt(d) against rho, and how many steps projected."""
    steps = [h.ustep for h in hops if h.at_u]
    mean = lambda xs: float(np.mean(xs)) if xs else None  # noqa: E731
    return {"u_steps": len(steps), "ascent_norm": mean([x.ascent_norm for x in steps]),
            "noise_norm": mean([x.noise_norm for x in steps]), "step_norm": mean([x.step_norm for x in steps]),
            "ascent_share": mean([x.ascent_norm / x.step_norm for x in steps if x.step_norm > 0]),
            "cosine": mean([x.cosine for x in steps]), "projected": sum(x.projected for x in steps),
            "grad_norm_max": max((h.grad_norm for h in hops if h.at_u), default=None), "L": L, "clipped": clipped,
            "kick": kick, "kick_over_rho": None if rho is None else kick / rho}


# ----------------------------------------------------------------------------------------------- runs

def rrdu_config(setup: Setup, **changes) -> rrdu.RRDUConfig:
    """RR-DU at the defaults of rrdu.unlearn and the dataset's Table 12 values, with `changes`."""
    u, d = setup.cfg["unlearn"], dataset_cfg(setup.cfg, setup.dataset)
    base = dict(u=setup.u, p=u["p"], T_u=u["hops"], s=u["s"], batch_size=setup.cfg["train"]["batch_size"],
                L=d["L"], rho=d["rho"], epsilon=u["epsilon"], delta=u["delta"], sigma=None, mode=u["mode"],
                semantics=u["semantics"], descent_steps=u["descent_steps"], clip=u["clip"])
    return rrdu.RRDUConfig(**{**base, **changes})


def unlearn_streams(setup: Setup, stream: int) -> Streams:
    """Unlearning stream `stream` (routing, minibatches, noise) of this original, and the dropout draws with it:
    every method and variant on stream k shares them."""
    torch.manual_seed(setup.run_seed("unlearn-torch", stream))
    return Streams.from_seed(setup.run_seed("unlearn", stream))


def run_rrdu(setup: Setup, token: Token, snap: Snapshot, rcfg: rrdu.RRDUConfig, evaluator: Evaluator, what: str,
             every: int, clean_curve: bool, full: bool = False, stream: int = 0) -> tuple[dict, float]:
    """RR-DU from theta_0 on unlearning stream `stream`; returns its record and its wall time (evaluation
    excluded). Exact mode descends at u on u's retained data D_u minus D_f."""
    restore(token, snap, setup.cfg["unlearn"])
    streams = unlearn_streams(setup, stream)
    T = setup.cfg["train"]["hops"]
    planned = planned_visits(rcfg, len(setup.clients), streams)
    rec = Recorder(evaluator, f"{setup.name} {what}", rcfg.T_u, T, every, clean_curve,
                   asr_at=summary_hops(rcfg.T_u, planned))
    spent = evaluator.seconds
    start = time.perf_counter()
    hops = rrdu.unlearn(token, setup.clients, setup.forget, setup.n_u, rcfg, streams,
                        retained_u=setup.retained[setup.u], on_hop=rec)
    seconds = time.perf_counter() - start - (evaluator.seconds - spent)
    sigma = rcfg.noise(len(setup.clients))
    kick = token.lr * sigma * math.sqrt(token.dim)
    cert = rcfg.certificate(len(setup.clients))
    u_hops = [h.t for h in hops if h.at_u]
    assert u_hops == planned, f"{what}: the replayed routing {planned} differs from the walk's {u_hops}"
    record = {"stream": stream, "p": rcfg.p, "rho": rcfg.rho, "L": rcfg.L, "epsilon": rcfg.epsilon,
              "delta": rcfg.delta, "mode": rcfg.mode, "clipped": rcfg.clip, "descent_steps": rcfg.descent_steps,
              "certified": rcfg.certified, "sigma": sigma, "kick": kick,
              "nominal_epsilon": None if cert is None else cert.as_dict(),
              "final": evaluator(token.model, full=full), "curve": rec.curve,
              "first_round_asr_le_15": first_round_below(rec.curve),
              "u_visits": len(u_hops), "projected": sum(h.projected for h in hops),
              "anatomy": anatomy(hops, rcfg.rho, kick, rcfg.L, rcfg.clip),
              "distance": float(torch.linalg.vector_norm(token.theta() - snap.theta)),
              "max_distance": max((h.dist_after for h in hops), default=0.0),
              "examples": token.examples}
    record.update(asr_hops={str(t): v for t, v in sorted(rec.asr.items())},
                  summary=asr_summary(rec.asr, rcfg.T_u, u_hops))
    if what.startswith("baseline"):
        record["hops"] = [{"t": h.t, "node": h.node, "at_u": h.at_u, "loss": h.loss, "grad_norm": h.grad_norm,
                           "dist_before": h.dist_before, "dist_after": h.dist_after, "projected": h.projected,
                           **({"ascent_norm": h.ustep.ascent_norm, "noise_norm": h.ustep.noise_norm,
                               "step_norm": h.ustep.step_norm, "cosine": h.ustep.cosine} if h.ustep else {})}
                          for h in hops]
    log.info("%s %s stream %d: u-steps: ascent %.3g, noise %.3g, step %.3g (ascent share %s), max forget-gradient "
             "norm %s against L = %g (%s), kick %.3g against rho %s", setup.name, what, stream,
             *(record["anatomy"][k] or 0.0 for k in ("ascent_norm", "noise_norm", "step_norm")),
             record["anatomy"]["ascent_share"], record["anatomy"]["grad_norm_max"], rcfg.L,
             "clipped" if rcfg.clip else "not clipped", kick, rcfg.rho)
    return record, seconds


def train_original(setup: Setup, token: Token, evaluator: Evaluator, every: int, clients=None,
                   hops: int | None = None, marks: tuple[int, ...] = (), what: str = "original") -> tuple[dict, float]:
    """Alg. 2 for `hops` (default T) hops from the token's model: one local epoch of minibatch Adam steps per
    hop, the walk uniform over V minus the holder. The curve every `every` hops (0: only the marks and the last);
    `marks` are hops whose clean accuracy and ASR are recorded with the examples and time spent so far, and the
    mean and minimum ASR over the TAIL hops up to each (the ASR evaluated after every hop where there are marks)."""
    tc = setup.cfg["train"]
    hops = tc["hops"] if hops is None else hops
    torch.manual_seed(setup.run_seed("train-torch"))
    streams = Streams.from_seed(setup.run_seed("train"))
    rec = Recorder(evaluator, f"{setup.name} {what}", hops, 0, every, True,
                   asr_at=frozenset(t for m in marks for t in range(max(1, m - TAIL + 1), m + 1)))
    at_marks: list[dict] = []
    spent, start = evaluator.seconds, time.perf_counter()

    def on_hop(hop: Hop, tok: Token) -> None:
        rec(hop, tok)
        if hop.t in marks:
            seconds = time.perf_counter() - start - (evaluator.seconds - spent)
            tail = [rec.asr[t] for t in range(max(1, hop.t - TAIL + 1), hop.t + 1)]
            at_marks.append({"hops": hop.t, **evaluator(tok.model, full=True), "examples": tok.examples,
                             "tail_mean": float(np.mean(tail)), "tail_min": min(tail), "seconds": seconds})

    walked = walk(token, setup.clients if clients is None else clients, hops, uniform_neighbour(len(setup.clients)),
                  streams, tc["batch_size"], tc["epochs"], on_hop=on_hop)
    seconds = time.perf_counter() - start - (evaluator.seconds - spent)
    nodes = [h.node for h in walked]
    return {"hops": hops, "curve": rec.curve, "u_visits": nodes.count(setup.u),
            "last_u_visit": max((h.t for h in walked if h.node == setup.u), default=None),
            "final": evaluator(token.model, full=True), "examples": token.examples, "marks": at_marks}, seconds


def rho_heuristic(setup: Setup, theta0: torch.Tensor, draws: int = 10) -> float:
    """Spec A18's diagnostic: the mean over `draws` fresh initialisations of ||theta_0 - theta_rand|| / 3."""
    dists = []
    for k in range(draws):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(setup.run_seed("rho-heuristic", k))
            model = build_model(dataset_cfg(setup.cfg, setup.dataset)["model"], DATASETS[setup.dataset].info[1],
                                DATASETS[setup.dataset].info[0])
        flat = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
        dists.append(float(torch.linalg.vector_norm(theta0.cpu() - flat)) / 3)
    return float(np.mean(dists))


def _head(setup: Setup) -> dict:
    d = dataset_cfg(setup.cfg, setup.dataset)
    return {"dataset": setup.dataset, "seed": setup.seed, "scale": setup.params["scale"], "model": d["model"],
            "paper_column": d["paper_column"], "data": setup.data, "clients": len(setup.clients),
            "client_sizes": [len(c) for c in setup.clients],
            "u": setup.u, "target": setup.target, "m": setup.m, "n_u": setup.n_u,
            "test_images": len(setup.y_test), "trigger_images": len(setup.y_trigger),
            "T": setup.cfg["train"]["hops"], "T_u": setup.cfg["unlearn"]["hops"]}


# ----------------------------------------------------------------------------------------------- steps

def step_seed(params: dict, dataset: str, seed: int, processed: str, out: str, timing: str,
              checkpoint: str) -> None:
    """The original for one seed, its checkpoint, and Table 3's runs (see the module docstring)."""
    setup = make_setup(params, dataset, seed, processed)
    cfg = setup.cfg
    every = cfg["eval"]["every"]
    evaluator = Evaluator(setup)
    token = new_token(setup)
    init = evaluator(token.model)
    first = seed == cfg["seeds"][0]  # Figure 1's original curve: the first seed's
    original, train_s = train_original(setup, token, evaluator, every if first else 0)
    original["curve"] = [{"round": 0, **init}, *original["curve"]]
    snap = snapshot(token)
    save_checkpoint(checkpoint, snap, {"dataset": dataset, "seed": str(seed), "hops": str(original["hops"])})
    log.info("%s: original after %d hops: clean %.2f %%, ASR %.1f %% (%d u-visits, last at hop %s; %.1f s)",
             setup.name, original["hops"], original["final"]["clean"], original["final"]["asr"],
             original["u_visits"], original["last_u_visit"], train_s)
    result = {**_head(setup), "original": original, "rho_heuristic": rho_heuristic(setup, snap.theta),
              "dim": token.dim, "table3": [], "config": config_record(params)}
    times = {"original_s": train_s, "table3": {}}
    default = cfg["unlearn"]["semantics"]
    others = [x for x in cfg["table3"]["semantics"] if x != default]
    result["table3_semantics"] = []
    for semantics in [default, *others]:
        for p in cfg["table3"]["ps"]:
            for k in range(cfg["unlearn"]["streams"]):
                rcfg = rrdu_config(setup, p=p, sigma=0.0, rho=None, semantics=semantics)
                what = f"table3 p={p:g}" + ("" if semantics == default else f" {semantics}")
                record, seconds = run_rrdu(setup, token, snap, rcfg, evaluator, what, every, False, stream=k)
                if semantics == default:
                    result["table3"].append(record)
                    times["table3"][f"{p:g} stream {k}"] = seconds
                else:
                    result["table3_semantics"].append({"semantics": semantics, **record})
                log.info("%s %s stream %d: clean %.2f %%, ASR %.1f %% (last %d hops: mean %.1f; %d u-visits, last at "
                         "hop %s)", setup.name, what, k, record["final"]["clean"], record["final"]["asr"],
                         record["summary"]["tail_hops"], record["summary"]["tail_mean"], record["u_visits"],
                         record["summary"]["last_u_visit"])
    write_json(out, result)
    write_json(timing, {"experiment": setup.name, **times, "evaluation_s": evaluator.seconds})


def step_ablation_part(params: dict, dataset: str, processed: str, checkpoint: str, part: str, out: str,
                       timing: str) -> None:
    """One part of the ablations on the first seed's original (see the module docstring): "baseline" (the
    baseline RR-DU run on every stream and Tables 14-17), "sensitivity", "baselines" (Figure 1's) or "scratch".
    Each run seeds its own streams, so the parts are independent jobs and their results do not depend on order."""
    cfg = config(params)
    if part not in ablation_parts(cfg):
        raise ValueError(f"--part: {part!r} is not one of {', '.join(ablation_parts(cfg))} (rrdu.sensitivity: "
                         f"{str(cfg['sensitivity']).lower()})")
    setup = make_setup(params, dataset, cfg["seeds"][0], processed)
    every = cfg["eval"]["every"]
    evaluator = Evaluator(setup)
    if part == "scratch":
        result, times = {}, {}
        result["scratch"], times["scratch"] = scratch(setup, evaluator)
        _write_part(setup, evaluator, part, result, times, out, timing)
        return
    token = new_token(setup)
    snap = load_checkpoint(checkpoint, setup.device)
    restore(token, snap, cfg["unlearn"])
    default = rrdu_config(setup)
    if part == "sensitivity":
        result, times = {}, {}
        result["sensitivity"], times["sensitivity"] = sensitivity(setup, token, snap, evaluator, default)
    elif part == "baselines":
        result, times = {}, {}
        result["baselines"], times["baselines"] = baselines(setup, token, snap, evaluator, every,
                                                            cfg["unlearn"]["s"], cfg["train"]["batch_size"])
    else:
        result, times = baseline_and_sweeps(setup, token, snap, evaluator, default, every)
        result = {**_head(setup), **result, "config": config_record(params)}
    _write_part(setup, evaluator, part, result, times, out, timing)


def _write_part(setup: Setup, evaluator: Evaluator, part: str, result: dict, times: dict, out: str,
                timing: str) -> None:
    write_json(out, {"part": part, **result})
    write_json(timing, {"experiment": f"{setup.name}_ablations_{part}", "part": part, **times,
                        "evaluation_s": evaluator.seconds})


def baseline_and_sweeps(setup: Setup, token: Token, snap: Snapshot, evaluator: Evaluator, default: rrdu.RRDUConfig,
                        every: int) -> tuple[dict, dict]:
    """The baseline RR-DU run at the defaults on every unlearning stream, then Tables 14-17 (one value changed,
    sigma recomputed, stream 0)."""
    cfg = setup.cfg
    before = evaluator(token.model, full=True)
    runs = [run_rrdu(setup, token, snap, default, evaluator, "baseline", every if k == 0 else 0, k == 0,
                     full=True, stream=k) for k in range(cfg["unlearn"]["streams"])]
    baseline, base_s = runs[0]
    log.info("%s baseline RR-DU: clean %.2f %%, ASR %.1f %% (sigma %.4g)", setup.name, baseline["final"]["clean"],
             baseline["final"]["asr"], baseline["sigma"])
    result = {"before": before, "baseline": baseline, "sweeps": {},
              "baseline_streams": [_stream_fields(rec) for rec, _ in runs],
              "rrdu_cost": {"examples": baseline["examples"], "hops": cfg["unlearn"]["hops"]}}
    times = {"baseline_s": base_s, "baseline_streams_s": [t for _, t in runs], "sweeps": {}}
    for key in SWEEPS:
        result["sweeps"][key], times["sweeps"][key] = [], {}
        for value in cfg["sweeps"][key]:
            # Table 15 clips the forget gradient at its L (the paper's "additional clipping"); its baseline row
            # is the unclipped baseline run
            rcfg = replace(default, **{key: value}, **({"clip": True} if key == "L" else {}))
            if rcfg == default:  # the default row is the baseline run
                result["sweeps"][key].append({**_sweep_fields(baseline), "value": value, "is_baseline": True})
                continue
            record, seconds = run_rrdu(setup, token, snap, rcfg, evaluator, f"{key}={value:g}", 0, False)
            result["sweeps"][key].append({**_sweep_fields(record), "value": value, "is_baseline": False})
            times["sweeps"][key][f"{value:g}"] = seconds
            log.info("%s %s = %g: clean %.2f %%, ASR %.1f %%", setup.name, key, value, record["final"]["clean"],
                     record["final"]["asr"])
    return result, times


def merge_ablations(parts: list[str], timings: list[str], out: str, timing: str) -> None:
    """Join the parts' results (and timings) into the one ablations file the report reads; every part must be
    there once, the sensitivity reading where it ran (Snakemake gives them one configuration; the baseline part's
    record of it is kept). Without the reading, its entries are null."""
    results = {r["part"]: r for r in map(read_json, parts)}
    times = {t["part"]: t for t in map(read_json, timings)}
    for what, got in (("--parts", results), ("--timings", times)):
        wanted = ablation_parts({"sensitivity": "sensitivity" in got})
        if sorted(got) != sorted(wanted) or len(got) != len(parts):
            raise ValueError(f"{what}: need one file per part {', '.join(ablation_parts({'sensitivity': True}))} "
                             f"(the sensitivity reading where rrdu.sensitivity is on); got {sorted(got)}")
    base = results["baseline"]
    streams = base.pop("baseline_streams")
    finetune = results["baselines"]["baselines"]["finetune"]["streams"]
    merged = {k: v for k, v in base.items() if k not in ("part", "config")}
    merged.update(sensitivity=results["sensitivity"]["sensitivity"] if "sensitivity" in results else None,
                  baselines=results["baselines"]["baselines"],
                  streams=[{"stream": k, "rrdu": rec, "finetune": finetune[k]} for k, rec in enumerate(streams)],
                  scratch=results["scratch"]["scratch"], config=base["config"])
    t = times["baseline"]
    joined = {"experiment": t["experiment"].removesuffix("_baseline"), "baseline_s": t["baseline_s"],
              "baseline_streams_s": t["baseline_streams_s"], "sweeps": t["sweeps"],
              "sensitivity": times["sensitivity"]["sensitivity"] if "sensitivity" in times else None,
              "baselines": times["baselines"]["baselines"],
              "scratch": times["scratch"]["scratch"],
              "evaluation_s": sum(x["evaluation_s"] for x in times.values()),
              "clients": base["clients"], "T": base["T"]}
    write_json(out, merged)
    write_json(timing, joined)


def _sweep_fields(record: dict) -> dict:
    keep = ("p", "rho", "L", "epsilon", "delta", "clipped", "certified", "sigma", "kick", "nominal_epsilon", "final",
            "summary", "anatomy", "u_visits", "projected", "distance", "max_distance", "examples")
    return {k: record[k] for k in keep}


def _stream_fields(record: dict) -> dict:
    return {k: record[k] for k in ("final", "summary", "u_visits", "anatomy") if k in record}


def sensitivity(setup: Setup, token: Token, snap: Snapshot, evaluator: Evaluator,
                default: rrdu.RRDUConfig) -> tuple[list[dict], dict]:
    """Spec A1's sensitivity reading, on stream 0: one local epoch per non-u hop (as a training hop) instead of one
    update, for the baseline and for Table 3's p = 0 and p = 0.1 rows (no noise, no projection)."""
    rows, times = [], {}
    for name, rcfg in (("baseline", replace(default, descent_steps=rrdu.EPOCH)),
                       *((f"table3 p={p:g}", replace(default, p=p, sigma=0.0, rho=None, descent_steps=rrdu.EPOCH))
                         for p in (0.0, 0.1))):
        record, times[name] = run_rrdu(setup, token, snap, rcfg, evaluator, f"{name} epoch", 0, False)
        rows.append({"run": name, **_sweep_fields(record), "descent_steps": rrdu.EPOCH})
        log.info("%s %s, one local epoch per hop: clean %.2f %%, ASR %.1f %% (last %d hops: mean %.1f)", setup.name,
                 name, record["final"]["clean"], record["final"]["asr"], record["summary"]["tail_hops"],
                 record["summary"]["tail_mean"])
    return rows, times


def baselines(setup: Setup, token: Token, snap: Snapshot, evaluator: Evaluator, every: int, s: int,
              batch: int) -> tuple[dict, dict]:
    """Figure 1's baselines from theta_0 on D minus D_f, T_u hops each, the unlearning streams and dropout
    draws of RR-DU's runs (methods/rrdu_baselines.py)."""
    cfg = setup.cfg
    T, T_u = cfg["train"]["hops"], cfg["unlearn"]["hops"]
    u = cfg["unlearn"]
    b = cfg["baselines"]
    n_retain = sum(len(c) for c in setup.retained)
    out, times = {}, {}

    def run(name: str, fn, check_loss: bool = True, stream: int = 0) -> dict:
        restore(token, snap, u)
        streams = unlearn_streams(setup, stream)
        rec = Recorder(evaluator, f"{setup.name} {name}", T_u, T, every if stream == 0 else 0, True, check_loss,
                       asr_at=summary_hops(T_u, []))
        spent, start = evaluator.seconds, time.perf_counter()
        extra = fn(streams, rec)
        seconds = time.perf_counter() - start - (evaluator.seconds - spent)
        record = {"final": evaluator(token.model, full=True), "curve": rec.curve,
                  "summary": asr_summary(rec.asr, T_u, []), "distance": float(torch.linalg.vector_norm(token.theta() -
                                                                                                      snap.theta)),
                  "examples": token.examples, **extra}
        log.info("%s %s stream %d: clean %.2f %%, ASR %.1f %%", setup.name, name, stream, record["final"]["clean"],
                 record["final"]["asr"])
        if stream == 0:
            out[name], times[name] = record, seconds
        return record

    tune = lambda st, rec: (rb.finetune_walk(token, setup.retained, T_u, st, s, batch, rec), {})[1]  # noqa: E731
    run("finetune", tune)
    out["finetune"]["streams"] = [_stream_fields(out["finetune"])] + [
        _stream_fields(run("finetune", tune, stream=k)) for k in range(1, cfg["unlearn"]["streams"])]
    sigma_ddp = rb.ddp_sigma(b["ddp"]["L"], u["epsilon"], u["delta"])

    def ddp(st, rec):
        _, moved = rb.ddp_walk(token, setup.retained, T_u, st, sigma_ddp, snap.theta, s, batch, b["ddp"]["L"],
                               b["ddp"]["radius"], rec)
        return {"sigma": sigma_ddp, "L": b["ddp"]["L"], "radius": b["ddp"]["radius"], "projected": moved,
                "kick": token.lr * sigma_ddp * math.sqrt(token.dim)}

    run("ddp", ddp)
    q = min(1.0, s * batch / n_retain)
    z_lib, z_classic = rrdu_noise.dpsgd_noise_multiplier(q, T_u, u["epsilon"], u["delta"])
    z = z_lib if b["dpsgd"]["multiplier"] == "library" else z_classic

    def dpsgd(st, rec):
        rb.dpsgd_walk(token, setup.retained, T_u, st, z, s, batch, b["dpsgd"]["clip"], on_hop=rec)
        return {"z": z, "z_library": z_lib, "z_classic": z_classic, "multiplier": b["dpsgd"]["multiplier"],
                "sample_rate": q, "clip": b["dpsgd"]["clip"]}

    run("dpsgd", dpsgd, check_loss=False)
    return out, times


def scratch(setup: Setup, evaluator: Evaluator) -> tuple[dict, dict]:
    """Retraining from scratch (the certifier A(D minus D_f)): Alg. 2 on the clean data from the original's
    initialisation and walk streams, recorded at T x each factor of rrdu.baselines.scratch_factors."""
    T = setup.cfg["train"]["hops"]
    marks = tuple(T * f for f in setup.cfg["baselines"]["scratch_factors"])
    token = new_token(setup)
    record, seconds = train_original(setup, token, evaluator, 0, setup.retained, max(marks), marks, "scratch")
    at = {str(m["hops"]): {k: v for k, v in m.items() if k != "seconds"} for m in record["marks"]}
    times = {str(m["hops"]): m["seconds"] for m in record["marks"]}
    return {"marks": at, "u_visits": record["u_visits"]}, times
