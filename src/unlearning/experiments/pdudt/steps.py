"""The PDUDT experiment's own steps (specs/pdudt.md 4-5), after the shared split, pretrain and retrain.

Model files of this experiment hold one or more *variants*: `theta.<k>` [clients, d] for each noise level
in the metadata's `variants` list (sigma null = no noise), plus the `clients` row ids. Noise is added after
training, so one training and one retraining run serve every sigma (spec 4.2, Efficiency).

- checkpoint A: the models right after unlearning at t1;
- checkpoint B: after `subsequent.rounds` more rounds of the experiment's D-SGD (its `train.mixing`: model mixing by
  default, gradient mixing in the Eq. 2 candidates) without the target (Eq. 10), on fresh graphs of rounds
  t1 .. t1 + T - 1 (the same for every method); Origin continues with all n and their data.
"""

from __future__ import annotations

import logging
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from ... import families, floatmath
from ...config import experiment_config
from ...experiment import Setup, load_setup
from ...files import load_metadata, load_tensors, read_json, save_tensors, write_json
from ...history import History
from ...methods import METHODS, Cost, TrainedState
from ...methods.pdudt import add_noise, client_correction, client_noise
from ...resolved import config_record
from ...seeding import generator
from ...train.dsgd import train
from ..common.io import load_models, write_cost
from . import layout

log = logging.getLogger("unlearning")

ON_CPU = {  # what stays on the CPU whatever the device, and why (said in the step's log line)
    "pdudt": "replays the memory-mapped history on the CPU", "pdudt_es": "replays the memory-mapped history on the CPU",
    "noise_only": "adds CPU-drawn noise on the CPU", "fedrecovery": "replays the memory-mapped history on the CPU",
    "perturbed_retrain": "adds CPU-drawn noise on the CPU",
}


def save_variants(path: Path, thetas: list[torch.Tensor], clients: list[int], sigmas: list, meta: dict) -> None:
    tensors = {f"theta.{k}": t.contiguous() for k, t in enumerate(thetas)}
    tensors["clients"] = torch.tensor(clients)
    save_tensors(path, tensors, {**meta, "variants": [{"sigma": s} for s in sigmas]})


def load_variants(path: str | Path) -> tuple[list[tuple[float | None, torch.Tensor]], list[int], dict]:
    """[(sigma, theta)] of a variants file, or of a plain models file (one variant, sigma None)."""
    tensors, meta = load_tensors(path), load_metadata(path)
    clients = tensors["clients"].tolist()
    if "theta" in tensors:
        return [(None, tensors["theta"])], clients, meta
    return [(v["sigma"], tensors[f"theta.{k}"]) for k, v in enumerate(meta["variants"])], clients, meta


def _state(setup: Setup, directory: str | Path) -> TrainedState:
    theta, clients, meta = load_models(str(Path(directory) / "models.safetensors"), setup.device)
    return TrainedState(setup, theta, clients, meta["rounds"], Path(directory))


def step_server(params: dict, name: str, kinds: list[str], features: str, split: str) -> None:
    """The baselines' own training runs, one job for all of `kinds` (issue 40): each method's training family
    (unlearning/families/, its declared `original`) on the experiment's task, in layout.server_dir: its store under
    history/, its models (models.safetensors) and cost."""
    setup = load_setup(params, name, features, split)
    ctx = families.Context(setup, lambda: setup, Path(layout.server_root(name)))  # the server schedules its mixing
    for kind in kinds:
        orig = families.train(METHODS[kind].original, ctx)
        out, state = Path(layout.server_dir(name, kind)), orig.state
        save_tensors(out / "models.safetensors", {"theta": state.theta, "clients": torch.tensor(state.clients)},
                     {"rounds": state.rounds})
        write_cost(Cost(orig.cost.wall_time_s, orig.cost.grad_evals), out / "cost.json",
                   layout.timing(name, f"server_{kind}"))


def step_variants(params: dict, name: str, methods: list[str], features: str, split: str) -> None:
    """The unlearning methods of an experiment, one job for all of `methods` (issue 40); each method's models in
    layout.unlearn_dir, its wall time in layout.timing."""
    for method in methods:
        _variants(params, name, method, features, split, layout.trained_dir(name, method),
                  Path(layout.unlearn_dir(name, method)), layout.timing(name, method))


def _variants(params: dict, name: str, method: str, features: str, split: str, trained_dir: str, out: Path,
              timing: str) -> None:
    """One noised method at every sigma of the grid, or an un-noised baseline once (fats; hdus writes its
    ensembles). `trained_dir` holds what it starts from: the D-SGD run (pdudt, pdudt_es, noise_only), the
    retrain output (perturbed_retrain) or the baseline's own training run (fedrecovery, fats, hdus)."""
    setup = load_setup(params, name, features, split)
    cfg = setup.cfg
    if method == "hdus":
        return _step_hdus(setup, trained_dir, out, timing)
    thetas, certificates, total = [], [], Cost(0.0, 0)
    for sigma in cfg["sigmas"] if layout.noised(method) else [None]:
        if method == "perturbed_retrain":
            start = time.perf_counter()
            variants, clients, _ = load_variants(Path(trained_dir) / "models.safetensors")
            theta = variants[0][1]
            theta = add_noise(theta.cpu(), clients, cfg["clients"], sigma, setup.seed, setup.name)
            cost, cert = Cost(time.perf_counter() - start, 0), {"sigma": sigma, "reference": "PDUDT Eq. 5"}
        else:
            params_m = {"sigma": sigma, **cfg.get(method, {})}
            result = METHODS[method](_state(setup, trained_dir), setup.request, params_m)
            theta, clients, cost, cert = result.theta.cpu(), result.clients, result.cost, result.certificate
        thetas.append(theta)
        certificates.append(cert)
        total = Cost(total.wall_time_s + cost.wall_time_s, 0, total.bytes_read + cost.bytes_read)
    save_variants(out / "models.safetensors", thetas, clients, cfg["sigmas"] if layout.noised(method) else [None],
                  {"method": method, "certificates": certificates})
    write_cost(total, out / "cost.json", timing)
    log.info("%s: %d sigmas in %.2f s (%s)", method, len(thetas), total.wall_time_s,
             ON_CPU.get(method, f"on {setup.device}"))


def _step_hdus(setup: Setup, trained_dir: str, out: Path, timing: str) -> None:
    """HDUS-approx unlearning: every remaining client's re-fitted ensemble; the time is the busiest client's."""
    from ...methods import hdus

    ensembles, busiest, seconds = hdus.unlearn(setup, Path(trained_dir) / "history", setup.cfg["hdus"]["refit_lr"])
    hdus.save_ensembles(out / "models.safetensors", ensembles,
                        {"method": "hdus", "busiest_client": busiest,
                         "members": {str(c): len(w) for c, (_, w) in ensembles.items()}})
    write_cost(Cost(seconds, 0), out / "cost.json", timing)
    log.info("hdus: client %d (most seeds) re-fitted in %.3f s", busiest, seconds)


def step_gaps(params: dict, name: str, features: str, split: str, pretrain_dir: str, retrain_models: str,
              out: str) -> None:
    """Spec 7-N: how much the correction itself contributes. Without noise, the gap between the averaged
    corrected models and the averaged retrained models, ||avg theta-bar - avg theta-tilde||, for PDUDT, PDUDT(ES),
    no correction (noise only) and the plain sum of the residuals in place of Eq. 9's weights (pdudt_sum, an
    ablation), the mean per-client gap, the correction's norm relative to the true gap ||avg theta^{t1} - avg
    theta-tilde|| (the uncorrected one), the averaged model's accuracy on the target's class and on the others,
    and the epsilon each gap implies at every sigma (Def. 4.3, beta = privacy.delta): the empirical Delta_emp of
    spec 2.5, a diagnostic, not a certificate."""
    from ...evaluate.metrics import per_sample_loss_and_pred
    from ...methods import pdudt
    from ...privacy.gaussian import epsilon

    setup = load_setup(params, name, features, split)
    cfg, beta = setup.cfg, params["privacy"]["delta"]
    state = _state(setup, pretrain_dir)
    retrained, clients, _ = load_variants(retrain_models)
    retrained = retrained[0][1].cpu()
    target_class, y_test = cfg["forget"]["class"], setup.y_test.cpu()
    runs = {method: METHODS[method](state, setup.request, {"sigma": 0.0, **cfg.get(method, {})})
            for method in ("pdudt", "pdudt_es", "noise_only")}
    runs["pdudt_sum"] = pdudt.unlearn(state, setup.request, 0.0, None, weights="sum")
    original = runs["noise_only"].theta.cpu()  # the remaining clients' models at t1, uncorrected
    true_gap = float((original.mean(0) - retrained.mean(0)).norm())
    rows = {}
    for method, result in runs.items():
        if result.clients != clients:
            raise ValueError(f"{retrain_models}: clients {clients}, but {method} kept {result.clients}")
        corrected = result.theta.cpu()
        gap = float((corrected.mean(0) - retrained.mean(0)).norm())
        pred = per_sample_loss_and_pred(setup, corrected.mean(0).to(setup.device), setup.x_test, setup.y_test)[1]
        right = pred.cpu() == y_test
        rows[method] = {"averaged_model_gap": gap,
                        "client_gap_mean": float((corrected - retrained).norm(dim=1).mean()),
                        "correction_over_gap": float((original - corrected).mean(0).norm()) / true_gap
                        if true_gap else None,
                        "test_accuracy": float(right.float().mean()),
                        "target_class_accuracy": float(right[y_test == target_class].float().mean()),
                        "other_classes_accuracy": float(right[y_test != target_class].float().mean()),
                        "implied_epsilon": {str(sigma): epsilon(gap, sigma, beta) for sigma in cfg["sigmas"]}}
        log.info("%s: ||avg corrected - avg retrained|| = %.5f (uncorrected %.5f), correction / gap %.3g", method,
                 gap, true_gap, rows[method]["correction_over_gap"] or 0.0)
    write_json(out, {"experiment": name, "beta": beta, "checkpoint": "A, before noise", "methods": rows,
                     "gradient_norms": gradient_norms(History(Path(pretrain_dir) / "history"),
                                                      cfg["forget"]["client"]),
                     "class_curve": class_curve(read_json(Path(pretrain_dir) / "class_curve.json"),
                                                cfg["forget"]["client"]),
                     "config": config_record(params)})


def class_curve(curve: dict, target: int) -> dict:
    """Per training round, the target's class accuracy of the target's model, and the mean and the largest over the
    other clients' models (the pretrain's class_curve.json: issue 37, item 2)."""
    row = curve["clients"].index(target)
    others = [[a for j, a in enumerate(accs) if j != row] for accs in curve["accuracy"]]
    return {"class": curve["class"], "target": [accs[row] for accs in curve["accuracy"]],
            "others_mean": [sum(o) / len(o) for o in others], "others_max": [max(o) for o in others]}


def gradient_norms(history: History, target: int) -> dict:
    """Per training round, the l2 norm of the target's pseudo-gradient and the mean norm of the others' (issue 15:
    with gradient mixing each g_j is taken at client j's own model; where the target owns a class, its model fits
    that class alone and its g shrinks, while the others' g keep pushing that class's logit down)."""
    clients = history.meta["clients"]
    row = clients.index(target)
    target_norm, others_norm = [], []
    for k in range(len(history)):
        norms = history.grads(k).norm(dim=1)
        target_norm.append(float(norms[row]))
        others_norm.append(float(torch.cat([norms[:row], norms[row + 1:]]).mean()))
    return {"target": target_norm, "others_mean": others_norm}


def continue_training(setup: Setup, theta: torch.Tensor, clients: list[int], start: int, rounds: int, lr: float,
                      eval_every: int, with_forget_set: bool = False) -> tuple[torch.Tensor, list[dict]]:
    """Eq. (10): `rounds` more rounds of the experiment's D-SGD among `clients`, from `theta`, on the retained data
    (`with_forget_set`: on all of it, as Origin continues with the target and its data); the averaged model's test
    accuracy every `eval_every` rounds."""
    from ...evaluate.metrics import accuracy, per_sample_loss_and_pred

    data = setup.data if with_forget_set else setup.data.retained(setup.request.masks)
    sched = setup.schedule(lr=lr)
    theta = theta.to(setup.device)

    def point(t: int) -> dict:
        _, pred = per_sample_loss_and_pred(setup, theta.mean(0), setup.x_test, setup.y_test)
        return {"round": t, "test_accuracy": accuracy(pred, setup.y_test)}

    curve, done = [point(0)], 0
    while done < rounds:
        step = min(eval_every, rounds - done)
        theta, _ = train(setup.model, setup.spec, theta, data, clients, sched,
                         range(start + done, start + done + step), setup.strategy)
        done += step
        curve.append(point(done))
    return theta, curve


def step_continue(params: dict, name: str, methods: list[str], features: str, split: str) -> None:
    """Checkpoint B of each of `methods` (layout.continued): its checkpoint-A models trained on for the subsequent
    rounds (Eq. 10), in one job (issue 40); each method's models and accuracy curve in its own folder."""
    setup = load_setup(params, name, features, split)
    sub = setup.cfg["subsequent"]
    for method in methods:
        variants, clients, meta = load_variants(layout.models_a(name, method))
        out, thetas, curves = Path(layout.subsequent_dir(name, method)), [], []
        for sigma, theta in variants:
            theta, curve = continue_training(setup, theta, clients, setup.cfg["train"]["rounds"], sub["rounds"],
                                             sub["lr"], sub["eval_every"], with_forget_set=method == "original")
            thetas.append(theta.cpu())
            curves.append({"sigma": sigma, "curve": curve})
            log.info("%s sigma=%s: test accuracy %.4f after %d rounds", method, sigma, curve[-1]["test_accuracy"],
                     sub["rounds"])
        save_variants(out / "models.safetensors", thetas, clients, [s for s, _ in variants], {"method": method})
        write_json(out / "curve.json", curves)


def step_attack(params: dict, name: str, features: str, split: str, out: str) -> None:
    """Shadow models once per dataset and seed; their softmax vectors are the attack's training data."""
    from ...evaluate.attacks.shadow import stratified_halves, train_shadows

    setup = load_setup(params, name, features, split)
    mia = setup.cfg["mia"]
    shadow_idx, _ = stratified_halves(setup.y_test.cpu(), setup.seed)
    data = train_shadows(setup, shadow_idx, mia["shadow_models"], mia["shadow_epochs"])
    save_tensors(out, data, {"experiment": name, **mia})
    log.info("shadow models (trained on %s) train accuracy: %s", setup.device,
             [round(a, 3) for a in data["shadow_train_accuracy"].tolist()])


def attack_samples(setup: Setup, eval_idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Spec 5.3: positives = the target's training samples, negatives = H_eval samples of the same classes;
    inputs on the device, labels on the CPU."""
    y_test = setup.y_test.cpu()
    forget_idx = setup.request.samples(setup.data.indices).to(setup.data.x.device)
    x_members, y_members = setup.data.x[forget_idx], setup.data.y[forget_idx].cpu()
    negatives = eval_idx[torch.isin(y_test[eval_idx], y_members.unique())]
    return x_members, y_members, setup.x_test[negatives.to(setup.device)], y_test[negatives]


CLIENT_MEAN_KEYS = ("precision_mean", "accuracy_mean", "predicted_members_mean")


def rmia_references(setup: Setup, shadow: dict[str, torch.Tensor], shadow_idx: torch.Tensor,
                    eval_idx: torch.Tensor) -> dict:
    """The strong attack's fixed part (attacks/rmia.py), shared by every attacked model: the shadow models as
    RMIA's reference models (trained on halves of H_shadow, so OUT for every candidate), their probability of the
    true label on the candidates (the forget set, then attack_samples' negatives from H_eval) and on the
    population (H_shadow, never trained on by the target; online: each shadow's own members known)."""
    from ...evaluate.attacks.rmia import true_label_probs
    from ...evaluate.forward import logits_in_batches

    if "shadow_theta" not in shadow:
        raise KeyError("the attack file has no shadow_theta (written before the strong attack); valid: re-run its "
                       "pdudt_attack rule")
    x_members, y_members, x_neg, y_neg = attack_samples(setup, eval_idx)
    x_pop, y_pop = setup.x_test[shadow_idx.to(setup.device)], setup.y_test[shadow_idx.to(setup.device)]

    def probs(theta, x, y):
        return true_label_probs(torch.cat(list(logits_in_batches(setup, theta.to(setup.device), x))), y)

    thetas = shadow["shadow_theta"]
    x, y = torch.cat([x_members, x_neg]), torch.cat([y_members, y_neg])
    return {"members": len(y_members), "x": x, "y": y, "x_pop": x_pop, "y_pop": y_pop.cpu(),
            "p_ref": np.stack([probs(t, x, y) for t in thetas]),
            "p_ref_pop": np.stack([probs(t, x_pop, y_pop.cpu()) for t in thetas]),
            "pop_member": shadow["shadow_trained_on"][:, shadow_idx].numpy()}


def rmia_attack(setup: Setup, flat: torch.Tensor, refs: dict, a: float) -> dict:
    """RMIA on one model: AUC and TPR at 1 % and 0.1 % FPR, members = the forget set, non-members = the
    H_eval negatives."""
    from ...evaluate.attacks.rmia import RMIA, true_label_probs
    from ...evaluate.forward import logits_in_batches

    def probs(x, y):
        return true_label_probs(torch.cat(list(logits_in_batches(setup, flat, x))), y)

    p_pop = probs(refs["x_pop"], refs["y_pop"])
    attack = RMIA(a).fit({"p_ref_pop": refs["p_ref_pop"], "pop_member": refs["pop_member"]})
    return {**attack.attack(probs(refs["x"], refs["y"].cpu()), refs["p_ref"], p_pop, refs["members"]),
            "references": len(refs["p_ref"]), "population": len(p_pop), "a": a}


def evaluate_variant(setup: Setup, theta: torch.Tensor, clients: list[int], attack, eval_idx: torch.Tensor,
                     seed_keys: tuple, refs: dict | None = None) -> dict:
    """Accuracies (per client, averaged model, per class), forget accuracy, loss-threshold AUC and the shadow
    attack on the averaged model (primary) and on each client's model (mean, secondary); with `refs`
    (rmia_references) also RMIA on the averaged model."""
    from ...evaluate.attacks.shadow import mean_over, softmax
    from ...evaluate.metrics import evaluate

    cfg = setup.cfg
    theta = theta.to(setup.device)
    base = evaluate(setup, theta, clients, cfg["eval"]["mia_samples"])
    x_members, y_members, x_neg, y_neg = attack_samples(setup, eval_idx)

    # every attacked model (each client's, then the averaged one) through the forests in one call per side
    attacked = [*theta, theta.mean(0)]
    keys = [*(str(c) for c in clients), "averaged"]
    p_in = np.split(attack.member_scores(torch.cat([softmax(setup, f, x_members) for f in attacked]),
                                         y_members.repeat(len(attacked))), len(attacked))
    p_out = np.split(attack.member_scores(torch.cat([softmax(setup, f, x_neg) for f in attacked]),
                                          y_neg.repeat(len(attacked))), len(attacked))
    attacks = {key: attack.metrics(p_in[k], p_out[k], cfg["mia"]["repetitions"], cfg["mia"]["max_samples"],
                                    generator(setup.seed, setup.name, "mia-reps", *seed_keys, key),
                                    with_auc=key == "averaged", precision_floor=cfg["mia"]["precision_floor"],
                                    fpr=cfg["mia"]["fpr"]) for k, key in enumerate(keys)}
    client_mean = mean_over([attacks[str(c)] for c in clients])
    return {
        "client_mean_test_accuracy": sum(base["per_client_test_accuracy"].values()) / len(clients),
        "averaged_model_test_accuracy": base["test_accuracy"],
        "per_class_accuracy_averaged_model": base["per_class_accuracy"],
        "per_class_accuracy_client_mean": base["per_class_accuracy_client_mean"],
        "per_client_test_accuracy": base["per_client_test_accuracy"],
        "forget_accuracy": base["forget_accuracy"],
        "per_client_forget_accuracy": base["per_client_forget_accuracy"],
        "per_client_own_data_accuracy": base["per_client_own_data_accuracy"],
        "mia_loss_threshold_auc": base["mia_loss_threshold_auc"],
        "mia_shadow": attacks["averaged"],
        "mia_shadow_client_mean": {key: client_mean[key] for key in CLIENT_MEAN_KEYS},
        "mia_rmia": None if refs is None else rmia_attack(setup, theta.mean(0), refs, cfg["mia"]["rmia_a"]),
    }


def evaluate_ensembles(setup: Setup, ensembles: dict, attack, eval_idx: torch.Tensor) -> dict:
    """HDUS: the metrics of evaluate_variant on every remaining client's ensemble output, averaged over the
    clients (spec 5.3-5: there is no averaged model; the attack targets each client's ensemble)."""
    from ...evaluate.attacks.loss_threshold import loss_threshold_auc
    from ...evaluate.attacks.shadow import mean_over
    from ...evaluate.metrics import accuracy, class_matched_pairs
    from ...methods.hdus import ensemble_probabilities

    cfg, y_test = setup.cfg, setup.y_test.cpu()
    x_members, y_members, x_neg, y_neg = attack_samples(setup, eval_idx)
    pairs = class_matched_pairs(y_members, y_test, cfg["eval"]["mia_samples"], generator(setup.seed, setup.name, "mia"))
    nll = lambda p, y: -floatmath.log(p.gather(1, y.view(-1, 1)).squeeze(1).clamp_min(1e-12))  # noqa: E731
    per_client, per_class, forget_acc, auc, softmax_in, softmax_out = {}, [], [], [], [], []
    for c, ensemble in ensembles.items():
        p_test = ensemble_probabilities(setup, ensemble, setup.x_test)
        p_members = ensemble_probabilities(setup, ensemble, x_members)
        pred = p_test.argmax(1)
        per_client[str(c)] = accuracy(pred, y_test)
        per_class.append({str(k): accuracy(pred[y_test == k], y_test[y_test == k]) for k in range(setup.classes)})
        forget_acc.append(accuracy(p_members.argmax(1), y_members))
        auc.append(loss_threshold_auc(nll(p_members, y_members)[pairs[0]], nll(p_test, y_test)[pairs[1]]))
        softmax_in.append(p_members)
        softmax_out.append(ensemble_probabilities(setup, ensemble, x_neg))
    k = len(ensembles)
    p_in = np.split(attack.member_scores(torch.cat(softmax_in), y_members.repeat(k)), k)
    p_out = np.split(attack.member_scores(torch.cat(softmax_out), y_neg.repeat(k)), k)
    attacks = [attack.metrics(p_in[i], p_out[i], cfg["mia"]["repetitions"], cfg["mia"]["max_samples"],
                               generator(setup.seed, setup.name, "mia-reps", "A", None, str(c)), with_auc=True,
                               precision_floor=cfg["mia"]["precision_floor"], fpr=cfg["mia"]["fpr"])
               for i, c in enumerate(ensembles)]
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    shadow = mean_over(attacks)
    return {
        "client_mean_test_accuracy": mean(list(per_client.values())),
        "averaged_model_test_accuracy": None,
        "per_class_accuracy_averaged_model": {},
        "per_class_accuracy_client_mean": {k: mean([p[k] for p in per_class]) for k in per_class[0]},
        "per_client_test_accuracy": per_client,
        "forget_accuracy": mean(forget_acc),
        "mia_loss_threshold_auc": mean(auc),
        "mia_shadow": {**shadow, "attacked": "each client's ensemble, mean over clients"},
        "mia_shadow_client_mean": {key: shadow[key] for key in CLIENT_MEAN_KEYS},
    }


def served_by(features: str) -> str:
    """The dataset whose features an experiment trained on: "mnist_5k" where the 5,000-digit subset serves MNIST's
    column (the workflow's features_path), else the experiment's own."""
    return load_metadata(features)["dataset"]


def step_evaluate(params: dict, name: str, methods: list[str], features: str, split: str, attack: str,
                  checkpoint: str) -> None:
    """Every one of `methods` evaluated at `checkpoint` in one job (issue 40: the attack's forests and RMIA's
    references are fitted once for all of them). A: the models right after unlearning, with their cost, in a job
    of its own so that Table 3's A rows need no subsequent rounds (issue 37). B: the whole result, A read back from
    A's job (the same numbers) and B, after the subsequent rounds, added where the method continues (none does
    where the experiment sets `subsequent.rounds: 0`: B is then A's result alone)."""
    if checkpoint not in ("A", "B"):
        raise ValueError(f"--checkpoint {checkpoint!r}: valid: A, B")
    continues = experiment_config(params, name)["subsequent"]["rounds"] > 0
    context = None
    for method in methods:
        if checkpoint == "B":
            result = {k: v for k, v in read_json(layout.result_a(name, method)).items() if k != "config"}
            if (result["method"], result["experiment"], set(result["checkpoints"])) != (method, name, {"A"}):
                raise ValueError(f"{layout.result_a(name, method)}: not checkpoint A alone of {method} in {name}")
            models = layout.models_b(name, method) if continues else None
        else:
            result = {"method": method, "experiment": name, "data": served_by(features), "scale": params["scale"],
                      "checkpoints": {}}
            if method == "original":
                result["all_clients"] = {}
            models = layout.models_a(name, method)
        if models is not None:  # none at B for a method without subsequent rounds (layout.CONTINUED)
            context = context or _evaluation_context(params, name, features, split, attack)
            _evaluate_checkpoint(context, method, checkpoint, models, result)
        if checkpoint == "A" and (cost := layout.cost(name, method)) is not None:
            result["cost"] = read_json(cost)
        write_json(layout.result_a(name, method) if checkpoint == "A" else layout.result(name, method),
                   {**result, "config": config_record(params)})
        log.info("%s evaluated at %s: models on %s, the attack's random forests on the CPU (scikit-learn)", method,
                 checkpoint, context[0].device if context else "-")


def _evaluation_context(params: dict, name: str, features: str, split: str, attack: str) -> tuple:
    """What every evaluation of an experiment shares: its setup, H_eval, the shadow attack's forests and RMIA's
    references."""
    from ...evaluate.attacks import ShadowModels
    from ...evaluate.attacks.shadow import stratified_halves

    setup = load_setup(params, name, features, split)
    shadow_idx, eval_idx = stratified_halves(setup.y_test.cpu(), setup.seed)
    forest_classes = setup.data.y[setup.request.samples(setup.data.indices).to(setup.data.x.device)].unique()
    shadow_data = load_tensors(attack)
    shadow = ShadowModels(setup.seed).fit(shadow_data, forest_classes.tolist())
    return setup, eval_idx, shadow, rmia_references(setup, shadow_data, shadow_idx, eval_idx)


def _evaluate_checkpoint(context: tuple, method: str, checkpoint: str, path: str, result: dict) -> None:
    """One method's models at one checkpoint into `result` (Origin also as the whole system, all n clients)."""
    setup, eval_idx, shadow, refs = context
    if method == "hdus":
        from ...methods.hdus import load_ensembles

        result["checkpoints"][checkpoint] = [{"sigma": None, **evaluate_ensembles(
            setup, load_ensembles(Path(path)), shadow, eval_idx)}]
        return
    variants, clients, _ = load_variants(path)
    if method == "fedrecovery_original":  # the FedAvg server's w^{t1}: its rows are equal, the model is their mean
        variants, clients = [(s, t.mean(0, keepdim=True)) for s, t in variants], [-1]
    if method == "original":
        # Origin is judged on the same remaining clients as every method, and also as the whole system
        # before unlearning: all n clients, the target's model included (its average is the global model)
        result["all_clients"][checkpoint] = [
            {"sigma": sigma, **evaluate_variant(setup, theta, clients, shadow, eval_idx, (checkpoint, "all"), refs)}
            for sigma, theta in variants]
        keep = [i for i, c in enumerate(clients) if c not in setup.request.removed]
        variants, clients = [(s, t[keep]) for s, t in variants], [clients[i] for i in keep]
    result["checkpoints"][checkpoint] = [
        {"sigma": sigma, **evaluate_variant(setup, theta, clients, shadow, eval_idx, (checkpoint, sigma), refs)}
        for sigma, theta in variants]


def max_history_client(history: History, remaining: list[int]) -> int:
    """Spec 5.2: the remaining client with the largest stored history, max_i sum_t |N^t_i|."""
    w = history.mixing["W"]
    stored = history.meta["clients"]
    sizes = {c: int((w[:, stored.index(c)] != 0).sum()) for c in remaining}
    return max(remaining, key=lambda c: (sizes[c], -c))


def _median_time(fn, repeats: int) -> tuple[float, list[float]]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def step_timing(params: dict, name: str, features: str, split: str, pretrain_dir: str, out: str) -> None:
    """Table 2 the paper's way (spec 5.2), every method in this one job so that all run under the same
    conditions: PDUDT and PDUDT(ES) on the client with the largest history, from the stored history, and
    FedRecovery on the server, each a warm-up then the median of `timing.repeats`; Retrain (the t1 rounds
    without the target), FATS-Unl (the server's rollback retraining) and HDUS-approx (the re-fit on the client
    holding the most seeds) once each, as they take minutes at the paper's sizes."""
    from ...methods import hdus

    setup = load_setup(params, name, features, split)
    cfg = setup.cfg
    target = setup.request.removed[0]
    remaining = [c for c in range(cfg["clients"]) if c != target]
    history = History(Path(pretrain_dir) / "history")
    client = max_history_client(history, remaining)
    row, lr, n, sigma = history.meta["clients"].index(client), cfg["train"]["lr"], cfg["clients"], cfg["default_sigma"]
    repeats = cfg["timing"]["repeats"]

    def pdudt_on_client(horizon: int):
        def run():
            h = History(Path(pretrain_dir) / "history")  # read from the store each time
            return client_correction(h, row, lr, horizon) + client_noise(h.dim, n, sigma, setup.seed, "timing")
        return run

    result = {"experiment": name, "data": served_by(features), "client": client, "device": str(setup.device),
              "repeats": repeats,
              "threads": torch.get_num_threads(), "methods": {}}
    for method, horizon in (("pdudt", len(history)), ("pdudt_es", min(cfg["pdudt_es"]["es_rounds"], len(history)))):
        median, times = _median_time(pdudt_on_client(horizon), repeats)
        result["methods"][method] = {"seconds": median, "runs": times, "how": "median after warm-up, one client"}
    methods = cfg["methods"]
    if "fedrecovery" in methods:
        state, fedrecovery = _state(setup, layout.server_dir(name, "fedrecovery")), METHODS["fedrecovery"]
        median, times = _median_time(lambda: fedrecovery(state, setup.request, {"sigma": sigma}), repeats)
        result["methods"]["fedrecovery"] = {"seconds": median, "runs": times, "how": "median after warm-up, server"}
    if "retrain" in methods:
        seconds = METHODS["retrain"](_state(setup, pretrain_dir), setup.request, {}).cost.wall_time_s
        result["methods"]["retrain"] = {"seconds": seconds, "how": "the t1 retraining rounds, all clients in one "
                                        "process, one run"}
    if "fats" in methods:
        seconds = METHODS["fats"](_state(setup, layout.server_dir(name, "fats")), setup.request,
                                  cfg["fats"]).cost.wall_time_s
        result["methods"]["fats"] = {"seconds": seconds, "how": "server rollback retraining r0 .. t1-1, one run"}
    if "hdus" in methods:
        _, busiest, seconds = hdus.unlearn(setup, Path(layout.server_dir(name, "hdus")) / "history",
                                           cfg["hdus"]["refit_lr"])
        result["methods"]["hdus"] = {"seconds": seconds, "client": busiest,
                                     "how": "ensemble re-fit on the client holding the most seeds, one run"}
    write_json(out, {**result, "config": config_record(params)})
    log.info("timed on %s; PDUDT, PDUDT(ES) and FedRecovery replay the memory-mapped history on the CPU",
             setup.device)
