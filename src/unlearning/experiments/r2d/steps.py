"""The Rewind-to-Delete experiment's steps (Mu & Klabjan 2025, Section 4 and Appendix D): one learning run per
(data set, seed) shared by every rewind K and every epsilon, then the baselines (HF, CNS) per data set.

`step_run` (rule r2d_run), on one data set and seed:
1. the data: a stand-in (`r2d.stand_ins`: the synthetic eICU-like / Lacuna-like generators of
   data/user_synthetic.py, or the Fashion-MNIST user set of data/user_images.py) or a real set on disk (eICU,
   Lacuna-100: data/r2d_real.py); the forget request = all training samples of `forget_users` users drawn by the
   seed (Lacuna-like: half per label); OOD = samples of users never trained on, subsampled to the forget set's
   positive rate (the MIA's non-members);
2. learning (Algorithm 1 as run in Section 4.2): shuffled minibatch SGD, lr0 gamma^epoch, a checkpoint after every
   epoch (artifacts/r2d/<data>/s<seed>/), the epoch count E_sel with the lowest validation error, G (the largest
   minibatch gradient norm) and L (the largest gradient change over `L_samples` perturbations at theta_T);
3. R2D (Algorithm 2) for every rewind fraction f of `rewind`: K_ep = round(f (E_sel - 1)) epochs rewound and re-run
   on D' with the schedule continuing from the checkpoint; f = 1 is the retrain from the initial weights (E_sel
   epochs, sigma 0); noise sigma(K, epsilon) from Theorem 3.1 with K = K_ep S, T = (E_sel - 1) S and eta the last
   step size, on one N(0, I) vector per seed rescaled for every (K, epsilon) (seed s; the learning-side vector of
   the original model uses s + 1000);
4. every published model (unlearned, the original theta_T + sigma xi_pre at the same sigma, and the noised retrain)
   is evaluated: error on the test set, on D' and on Z, balanced test error, and the MIA of evaluate/attacks/
   logit_loss.py (Z against OOD).

`step_baselines` (rule r2d_baselines): HF and CNS (methods/r2d_baselines.py) with their own training runs on the
same data, forget request and seed, their noise at every epsilon of `table_epsilons`, evaluated the same way;
CNS's noise uses R2D's estimates of L and G (as the authors' code), read from the run's result.

Results files are deterministic; wall times go to the timing files (learning time = the training epochs only).
"""

from __future__ import annotations

import logging
import time

import torch

from ...config import section_config
from ...data import user_synthetic as us
from ...experiment import pick_device
from ...files import load_tensors, read_json, write_json
from ...history import CheckpointStore
from ...methods import r2d
from ...methods import r2d_baselines as rb
from ...models import SmeluMLP, SmoothResNet18
from ...privacy import r2d_baselines as rbn
from ...privacy import r2d_noise as rn
from ...resolved import config_record
from ...seeding import derive_seed, deterministic_algorithms
from ...train import checkpointed_sgd as cs
from ...train.flat import FlatSpec

log = logging.getLogger("unlearning")
SECTION = "r2d"
LIKES = ("eicu", "lacuna")


def config(params: dict) -> dict:
    """The r2d section with its scale override merged in."""
    return section_config(params, SECTION)


def dataset_config(cfg: dict, dataset: str) -> dict:
    """One data set's settings: the stand-in's (or the real set's) entry."""
    if dataset in cfg["stand_ins"]:
        return cfg["stand_ins"][dataset]
    if dataset in cfg["real"]:
        return cfg["real"][dataset]
    valid = ", ".join([*cfg["stand_ins"], *cfg["real"]])
    raise KeyError(f"r2d.datasets: {dataset!r} is neither in r2d.stand_ins nor r2d.real; valid: {valid}")


def per_like(value, like: str):
    """A setting given per paper data set ({eicu: .., lacuna: ..}) or once for both."""
    return value[like] if isinstance(value, dict) else value


# ---------------------------------------------------------------------------------------------- data

def load_data(params: dict, dataset: str, processed: str | None = None) -> dict[str, torch.Tensor]:
    """The data set's tensors {x, y, user, train, val, test, ood} (data/user_synthetic.py's layout)."""
    cfg = config(params)
    dc = dataset_config(cfg, dataset)
    seed = derive_seed(params["seed"], SECTION, dataset, "data")
    if dataset in cfg["real"]:
        from ...data import r2d_real

        return r2d_real.load(dataset, dc, seed, cfg["val_frac"])
    if dc["kind"] == "images":
        from ...data.user_images import user_image_dataset

        if processed is None:
            raise ValueError(f"r2d.stand_ins.{dataset}: an image stand-in needs --processed (the processed "
                             f"{dc['source']} tensors)")
        return user_image_dataset(load_tensors(processed), seed, tuple(dc["pair"]), dc["users"], dc["per_user"],
                                  dc["ood_users"], dc["ood_per_user"], dc["signature_scale"], dc["test_frac"],
                                  cfg["val_frac"], flatten=dc.get("model", "mlp") != "resnet18")
    extra = {"per_user": dc["per_user"]} if "per_user" in dc else {}
    return us.user_dataset(seed, f"{dc['like']}-like", dc["users"], dc["dim"], ood_users=dc["ood_users"],
                           ood_per_user=dc["ood_per_user"], test_frac=dc["test_frac"], val_frac=cfg["val_frac"],
                           **extra)


def matched_ood(data: dict[str, torch.Tensor], forget: torch.Tensor, seed: int) -> torch.Tensor:
    """The OOD samples subsampled (seeded) so that their positive rate equals the forget set's (Appendix D: the
    MIA compares members and non-members of the same class balance); as many as that allows."""
    ood = data["ood"]
    rate = float(data["y"][forget].float().mean())
    pos, neg = ood[data["y"][ood] == 1], ood[data["y"][ood] == 0]
    g = torch.Generator().manual_seed(seed)
    if rate in (0.0, 1.0):
        keep = pos if rate == 1.0 else neg
    else:
        total = min(len(pos) / rate, len(neg) / (1 - rate))
        keep = torch.cat([pos[torch.randperm(len(pos), generator=g)[:round(total * rate)]],
                          neg[torch.randperm(len(neg), generator=g)[:round(total * (1 - rate))]]])
    return torch.sort(keep).values


def forget_request(params: dict, dataset: str, data: dict, seed: int) -> tuple[list[int], torch.Tensor]:
    """The forgotten users (drawn by the seed; Lacuna-like: half per label) and Z, their training samples."""
    dc = dataset_config(config(params), dataset)
    users = us.forget_users(data, dc["forget_users"], derive_seed(params["seed"], SECTION, dataset, seed, "forget"),
                            per_class=dc["like"] == "lacuna")
    return users, us.forget_indices(data, users)


def build_model(cfg: dict, dc: dict, in_features: int) -> torch.nn.Module:
    """The paper's smooth models: the SmeLU MLP (hidden widths r2d.model.widths) or, for image tensors and
    `model: resnet18`, the smooth ResNet-18 (`in_features` = the channels)."""
    if dc.get("model", "mlp") == "resnet18":
        return SmoothResNet18(in_features, 2, cfg["model"]["beta"])
    return SmeluMLP((in_features, *cfg["model"]["widths"], 2), cfg["model"]["beta"])


def fresh_model(params: dict, dataset: str, seed: int, in_features: int, device, purpose: str = "init"):
    cfg = config(params)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(params["seed"], SECTION, dataset, seed, purpose))
        model = build_model(cfg, dataset_config(cfg, dataset), in_features)
    return model.to(device)


# ---------------------------------------------------------------------------------------------- evaluation

class Evaluator:
    """Errors and the MIA of a flat parameter vector on the fixed sets of one run."""

    def __init__(self, model, X, y, sets: dict[str, torch.Tensor], ood: torch.Tensor, attack_seed: int, mia: dict):
        from ...evaluate.attacks.logit_loss import LogitLossAttack

        self.model, self.spec, self.X, self.y, self.sets, self.ood = model, FlatSpec.of(model), X, y, sets, ood
        self.attack = LogitLossAttack(attack_seed, mia["n_splits"], mia["n_repeats"], mia["class_weight"])

    @torch.no_grad()
    def logits(self, idx: torch.Tensor) -> torch.Tensor:
        self.model.eval()
        out = torch.cat([self.model(self.X[idx[i:i + 4096]]) for i in range(0, len(idx), 4096)])
        self.model.train()
        return out.cpu()

    def __call__(self, theta: torch.Tensor, mia: bool = True) -> dict:
        cs.set_flat(self.model, self.spec, theta)
        out = {}
        logits = {}
        for name, idx in (*self.sets.items(), ("ood", self.ood)):
            logits[name] = self.logits(idx)
            if name == "ood":
                continue
            pred, y = logits[name].argmax(1), self.y[idx].cpu()
            out[f"{name}_error"] = float((pred != y).float().mean()) if len(y) else None
            if name == "test":
                rates = [float((pred[y == c] != c).float().mean()) for c in (0, 1) if bool((y == c).any())]
                out["balanced_test_error"] = sum(rates) / len(rates)
                out["test_predicted_positive"] = float((pred == 1).float().mean())
        if mia:
            z, o = self.sets["unlearned"], self.ood
            res = self.attack.metrics(self.attack.member_scores(logits["unlearned"], self.y[z].cpu()),
                                      self.attack.member_scores(logits["ood"], self.y[o].cpu()))
            out["mia_auc"] = res["auc"]
        return out


def sigma_of(cfg: dict, eps: float, K: int, T: int, eta: float, L: float, G: float, m: int, n: int) -> float:
    return rn.sigma(eps, cfg["noise"]["delta"], K, T, eta, L, G, m, n, cfg["noise"]["mechanism"])


def rewind_epochs(fractions: list[float], E_sel: int) -> list[tuple[float, int]]:
    """(f, K_ep) for each rewind fraction: K_ep = round(f (E_sel - 1)) within 1 .. E_sel - 1 for f < 1 (a rewind
    that leaves the noise accounting's T = (E_sel - 1) S), E_sel for f = 1 (the retrain)."""
    out = []
    for f in fractions:
        k = E_sel if f >= 1 else min(max(1, round(f * (E_sel - 1))), max(E_sel - 1, 1))
        out.append((f, k))
    return out


# ---------------------------------------------------------------------------------------------- steps

def _prepare(params: dict, dataset: str, seed: int, processed: str | None):
    cfg = config(params)
    if seed not in cfg["seeds"]:
        raise KeyError(f"r2d.seeds: {seed} is not in it; valid: {', '.join(map(str, cfg['seeds']))}")
    dc = dataset_config(cfg, dataset)
    device = pick_device(params["device"])
    deterministic_algorithms()
    data = load_data(params, dataset, processed)
    users, Z = forget_request(params, dataset, data, seed)
    train = data["train"]
    keep = train[~torch.isin(train, Z)]
    ood = matched_ood(data, Z, derive_seed(params["seed"], SECTION, dataset, seed, "ood"))
    X, y = data["x"].to(device), data["y"].to(device)
    return cfg, dc, device, data, users, Z, keep, ood, X, y


def _summary(data: dict, users: list[int], Z: torch.Tensor, keep: torch.Tensor, ood: torch.Tensor) -> dict:
    return {"n": len(data["train"]), "m": len(Z), "retained": len(keep), "validation": len(data["val"]),
            "test": len(data["test"]), "ood": len(ood), "users": len(torch.unique(data["user"][data["train"]])),
            "forget_users": users, "dim": int(data["x"][0].numel()),
            "positive_rate_forget": float(data["y"][Z].float().mean()),
            "positive_rate_ood": float(data["y"][ood].float().mean()) if len(ood) else None}


def step_run(params: dict, dataset: str, seed: int, out: str, timing: str, checkpoints: str,
             processed: str | None = None) -> None:
    """Learning, R2D at every rewind and epsilon, the noised retrain, the evaluation (module docstring)."""
    start_all = time.perf_counter()
    cfg, dc, device, data, users, Z, keep, ood, X, y = _prepare(params, dataset, seed, processed)
    like = dc["like"]
    train, val, test = data["train"], data["val"], data["test"]
    model = fresh_model(params, dataset, seed, X.shape[1], device)
    spec = FlatSpec.of(model)
    tc = cfg["train"]
    sched = cs.Schedule(tc["lr0"], tc["gamma"], per_like(tc["batch_size"], like),
                        derive_seed(params["seed"], SECTION, dataset, seed, "shuffle"))
    log.info("%s seed %d: n %d, m %d (%d users), d %d", dataset, seed, len(train), len(Z), len(users), spec.dim)
    # at least 2 epochs: the noise accounting's T = (E_sel - 1) S must be a step or more
    res = cs.train(model, X[train], y[train], X[val], y[val], sched, tc["max_epochs"], checkpoints, min_selected=2)
    E_sel, G = res.selected, res.G
    clock = time.perf_counter()
    est = cfg["estimate"]
    L = cs.estimate_smoothness(model, X[train], y[train], est["batch"], est["L_samples"], est["L_std"],
                               derive_seed(params["seed"], SECTION, dataset, seed, "smoothness"))
    L_seconds = time.perf_counter() - clock
    theta_T = spec.flatten(model).clone()
    n, m, S = len(train), len(Z), sched.steps_per_epoch(len(train))
    eta = sched.lr(E_sel - 1)
    T = (E_sel - 1) * S
    log.info("E_sel %d (of %d), G %.4g, L %.4g, eta %.4g, T %d steps", E_sel, tc["max_epochs"], G, L, eta, T)
    sets = {"test": test, "train": keep, "unlearned": Z}
    evaluate = Evaluator(model, X, y, sets, ood, derive_seed(params["seed"], SECTION, dataset, seed, "mia") % 2**31,
                         {**cfg["mia"], "n_splits": per_like(cfg["mia"]["n_splits"], like)})
    unit = r2d.unit_noise(model, derive_seed(params["seed"], SECTION, dataset, seed, "noise"))
    unit_pre = r2d.unit_noise(model, derive_seed(params["seed"], SECTION, dataset, seed + 1000, "noise"))
    store = CheckpointStore(checkpoints)
    rewinds, seconds = [], {}
    models = {}
    for f, K_ep in rewind_epochs(per_like(cfg["rewind"], like), E_sel):
        clock = time.perf_counter()
        r2d.rewind(model, store, X[keep], y[keep], sched, E_sel, K_ep)
        theta = spec.flatten(model).clone()
        seconds[f"{f:g}"] = time.perf_counter() - clock
        models[f] = theta
        rewinds.append((f, K_ep))
    retrain = models.get(1.0)
    clock = time.perf_counter()
    noiseless = {"original": evaluate(theta_T)}
    for f, _ in rewinds:
        noiseless[f"{f:g}"] = evaluate(models[f])
    cells = []
    for f, K_ep in rewinds:
        if f >= 1:
            continue
        K = K_ep * S
        Delta = rn.sensitivity(K, T, eta, L, G, m, n)
        for eps in cfg["epsilons"]:
            sigma = sigma_of(cfg, eps, K, T, eta, L, G, m, n)
            cell = {"rewind": f, "K_ep": K_ep, "K": K, "K_over_T": K / T, "epsilon": eps, "Delta": Delta,
                    "sigma": sigma, "unlearned": evaluate(r2d.noised(models[f], unit, sigma)),
                    "original": evaluate(r2d.noised(theta_T, unit_pre, sigma), mia=False)}
            if retrain is not None:  # the authors' later README table: the retrain with the same noise
                cell["retrain_noised"] = evaluate(r2d.noised(retrain, unit, sigma),
                                                  mia=eps in cfg["table_epsilons"])
            cells.append(cell)
    eval_seconds = time.perf_counter() - clock
    result = {"experiment": f"r2d_{dataset}_s{seed}", "dataset": dataset, "like": like, "seed": seed,
              "stand_in": dataset in cfg["stand_ins"], "scale": params["scale"], "d": spec.dim,
              **_summary(data, users, Z, keep, ood),
              "learning": {"E_sel": E_sel, "max_epochs": tc["max_epochs"], "val_errors": res.val_errors,
                           "grad_norms": res.grad_norms, "G": G, "L": L, "eta": eta, "steps_per_epoch": S, "T": T,
                           "batch_size": sched.batch_size},
              "noise": {"delta": cfg["noise"]["delta"], "mechanism": cfg["noise"]["mechanism"]},
              "rewinds": [{"rewind": f, "K_ep": K_ep, "K": K_ep * S, "retrain": f >= 1} for f, K_ep in rewinds],
              "noiseless": noiseless, "cells": cells, "config": config_record(params)}
    write_json(out, result)
    learn_s = sum(res.epoch_seconds[:E_sel])
    write_json(timing, {"experiment": result["experiment"], "learning_s": learn_s,
                        "epoch_seconds": res.epoch_seconds, "all_epochs_s": sum(res.epoch_seconds),
                        "smoothness_s": L_seconds, "unlearning_s": seconds,
                        "K_ep": {f"{f:g}": k for f, k in rewinds}, "E_sel": E_sel, "evaluation_s": eval_seconds,
                        "threads": torch.get_num_threads(), "wall_time_s": time.perf_counter() - start_all})


def step_baselines(params: dict, dataset: str, seed: int, run: str, out: str, timing: str,
                   processed: str | None = None) -> None:
    """HF and CNS on the run's data, forget request and seed (module docstring)."""
    start_all = time.perf_counter()
    cfg, dc, device, data, users, Z, keep, ood, X, y = _prepare(params, dataset, seed, processed)
    like = dc["like"]
    ref = read_json(run)
    if ref.get("dataset") != dataset or ref.get("seed") != seed:
        raise ValueError(f"{run}: the run of {ref.get('dataset')} seed {ref.get('seed')}, not {dataset} seed {seed}")
    L, G = ref["learning"]["L"], ref["learning"]["G"]
    train, val, test = data["train"], data["val"], data["test"]
    delta = cfg["noise"]["delta"]
    sets = {"test": test, "train": keep, "unlearned": Z}
    result = {"experiment": f"r2d_{dataset}_s{seed}_baselines", "dataset": dataset, "like": like, "seed": seed,
              "scale": params["scale"], "m": len(Z), "n": len(train), "R2D_L": L, "R2D_G": G}
    times = {"experiment": result["experiment"], "threads": torch.get_num_threads()}
    mia_seed = derive_seed(params["seed"], SECTION, dataset, seed, "mia") % 2**31
    mia = {**cfg["mia"], "n_splits": per_like(cfg["mia"]["n_splits"], like)}

    # HF
    hc = cfg["hf"]
    model = fresh_model(params, dataset, seed, X.shape[1], device)
    spec = FlatSpec.of(model)
    evaluate = Evaluator(model, X, y, sets, ood, mia_seed, mia)
    pos = {int(i): k for k, i in enumerate(train.tolist())}
    forget_local = torch.tensor([pos[int(i)] for i in Z.tolist()], dtype=torch.long)
    hf = rb.train_hf(model, X[train], y[train], forget_local, hc["lr0"], hc["decay"], hc["clip"], hc["l2"],
                     per_like(hc["batch_size"], like), per_like(hc["epochs"], like),
                     derive_seed(params["seed"], SECTION, dataset, seed, "hf"), hc["per_sample"],
                     0 if hc["per_sample"] else hc["timed_per_sample_steps"])
    cs.set_flat(model, spec, hf.theta)
    first = train[hf.first_batch].to(device)
    rho = rb.hf_rho(model, X[first], y[first], hc["clip"], hc["l2"], hc["rho_iterations"],
                    seed=derive_seed(params["seed"], SECTION, dataset, seed, "hf-rho"))
    b = rbn.hf_sensitivity(hc["lr0"], hc["clip"], hc["decay"], rho, len(train), per_like(hc["batch_size"], like),
                           per_like(hc["epochs"], like), len(Z))
    clock = time.perf_counter()
    theta_U = hf.theta + hf.approximator
    unlearn_s = time.perf_counter() - clock
    unit = r2d.unit_noise(model, derive_seed(params["seed"], SECTION, dataset, seed, "hf-noise"))
    hf_cells = []
    for eps in cfg["table_epsilons"]:
        sigma = rbn.sigma_for(eps, delta, b) if b > 0 else 0.0
        hf_cells.append({"epsilon": eps, "sigma": sigma, "unlearned": evaluate(r2d.noised(theta_U, unit, sigma)),
                         "original": evaluate(hf.theta)})
    result["hf"] = {"steps": hf.steps, "rho": rho, "Delta": b, "per_sample": hc["per_sample"],
                    "original": evaluate(hf.theta), "unlearned_noiseless": evaluate(theta_U), "cells": hf_cells}
    times["hf"] = {"learning_s": hf.train_seconds + hf.approximator_seconds, "training_s": hf.train_seconds,
                   "approximator_s": hf.approximator_seconds, "unlearning_s": unlearn_s}
    if hc["per_sample"]:
        times["hf"]["per_sample_learning_s"] = times["hf"]["learning_s"]
    elif hf.extra:  # the paper's variant: training + m products per step, timed over the first steps
        times["hf"] |= {"per_sample_timed_steps": hf.extra["per_sample_timed_steps"],
                        "per_sample_learning_s": hf.train_seconds + hf.extra["per_sample_step_s"] * hf.steps}
    log.info("HF: %d steps, rho %.4g, b %.4g, learning %.2f s", hf.steps, rho, b, times["hf"]["learning_s"])

    # CNS
    cc = cfg["cns"]
    model = fresh_model(params, dataset, seed, X.shape[1], device)
    evaluate = Evaluator(model, X, y, sets, ood, mia_seed, mia)
    R = per_like(cc["R"], like)
    tr = rb.train_cns(model, X[train], y[train], X[val], y[val], cc["lr"], cc["wd"], cc["batch_size"],
                      cc["epochs"], R, derive_seed(params["seed"], SECTION, dataset, seed, "cns"))
    li = cc["lissa"]
    nz = cc["noise"]
    Delta = rbn.cns_sensitivity(R, L, G, spec.dim, nz["lam"], nz["M"], nz["rho"], nz["lam_min"])
    result["cns"] = {"selected": tr.selected, "val_losses": tr.val_losses, "R": R, "Delta": Delta,
                     "original": evaluate(tr.theta)}
    times["cns"] = {"learning_s": sum(tr.epoch_seconds), "unlearning_s": None}
    gamma = per_like(li["gamma"], like)
    curvature = rb.regulariser_curvature(list(model.parameters()), cc["wd"] + gamma)
    scale = max(li["scale"], curvature) if li["stable_scale"] else li["scale"]
    result["cns"] |= {"lissa_scale": scale, "regulariser_curvature": curvature}
    clock = time.perf_counter()
    try:
        step = rb.lissa_newton_step(model, X[keep], y[keep], cc["wd"], gamma, li["s1"], li["s2"], li["bs"], scale,
                                    derive_seed(params["seed"], SECTION, dataset, seed, "lissa"))
    except rb.Diverged as err:  # CNS's own estimator failing is its result: its cells are missing, with the reason
        reason = (f"CNS's LiSSA Newton step diverged ({err}; scale {scale:g}, s2 {li['s2']}; the regulariser's "
                  f"curvature (lam + gamma) / min ||p|| = {curvature:.4g}"
                  + (", above 2 scale)" if curvature > 2 * scale else ")"))
        log.warning("%s", reason)
        result["cns"] |= {"missing": reason, "cells": [
            {"epsilon": eps, "sigma": rbn.sigma_for(eps, delta, Delta), "missing": reason}
            for eps in cfg["table_epsilons"]]}
    else:
        theta_U = tr.theta - step
        times["cns"]["unlearning_s"] = time.perf_counter() - clock
        unit = r2d.unit_noise(model, derive_seed(params["seed"], SECTION, dataset, seed, "cns-noise"))
        cns_cells = []
        for eps in cfg["table_epsilons"]:
            sigma = rbn.sigma_for(eps, delta, Delta)
            cns_cells.append({"epsilon": eps, "sigma": sigma,
                              "unlearned": evaluate(r2d.noised(theta_U, unit, sigma))})
        result["cns"] |= {"newton_step_norm": float(step.norm()), "unlearned_noiseless": evaluate(theta_U),
                          "cells": cns_cells}
    log.info("CNS: kept epoch %d, Delta %.4g, learning %.2f s, unlearning %s s", tr.selected, Delta,
             times["cns"]["learning_s"], times["cns"]["unlearning_s"])
    result["config"] = config_record(params)
    times["wall_time_s"] = time.perf_counter() - start_all
    write_json(out, result)
    write_json(timing, times)
