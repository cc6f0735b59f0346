"""The shadow-model membership inference attack (Shokri et al. 2017), as in FATS' code.

Shokri et al. (2017) in the lineage of the FATS code (`utils.mia_attack`):
- the test set splits into stratified halves, H_shadow (the attacker's) and H_eval (negatives);
- S shadow models of the target's architecture train centrally with the target's SGD recipe, each on a
  random half of H_shadow ("in"), the other half "out"; their softmax vectors, labelled in = 1 and out = 0,
  are the attack's training data (stored as safetensors, never pickled);
- one RandomForestClassifier(100) per class, refitted from that data under a fixed seed wherever used;
- positives = the target client's training samples, negatives = H_eval samples of the same classes;
  100 repetitions draw m = min(|M|, |N|, max_samples) of each and report precision TP / (TP + FP),
  with recall, accuracy and ROC AUC beside it (mean and std over repetitions, ddof = 0).
- Precision is undefined (None) when the attack flags fewer than `precision_floor` samples as members per
  draw (mean over repetitions, reported as `predicted_members_mean`): with a handful of predicted members it
  jumps between 0 and 100 on the last bit of a float. The attacked model's balanced accuracy, ROC AUC and TPR
  at a fixed FPR (sklearn.metrics) are defined at any count.
"""

from __future__ import annotations

import numpy as np
import torch

from ...experiment import Setup
from ...models import build_model
from ...seeding import derive_seed, generator
from ...train.autodiff import grad
from ...train.dsgd import ClientData, Schedule, local_pseudo_gradients, make_loss, round_batches
from ...train.flat import FlatSpec
from ..forward import logits_in_batches


def stratified_halves(labels: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of H_shadow and H_eval: each class's samples shuffled and cut in half."""
    gen = generator(seed, "mia", "halves")
    shadow, held = [], []
    for c in labels.unique().tolist():
        idx = (labels == c).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=gen)]
        shadow.append(idx[: len(idx) // 2])
        held.append(idx[len(idx) // 2:])
    return torch.cat(shadow).sort().values, torch.cat(held).sort().values


@torch.no_grad()
def softmax(setup: Setup, flat: torch.Tensor, x: torch.Tensor, batch: int = 2048) -> torch.Tensor:
    out = [logits.softmax(1) for logits in logits_in_batches(setup, flat, x, batch)]
    return torch.cat(out).cpu() if out else torch.zeros(0, setup.classes)


def train_shadows(setup: Setup, shadow_idx: torch.Tensor, models: int, epochs: int) -> dict[str, torch.Tensor]:
    """Train `models` shadow models (stacked, one SGD epoch at a time) and return the attack's training
    data: softmax vectors of their in and out halves with membership and class labels; also the shadows'
    weights [models, d] and which test samples each trained on [models, n_test] (the reference models of the
    strong per-sample attack, attacks/rmia.py)."""
    cfg, seed = setup.cfg, derive_seed(setup.seed, setup.name, "shadow")
    gen = generator(seed, "in-out")
    halves = [shadow_idx[torch.randperm(len(shadow_idx), generator=gen)] for _ in range(models)]
    ins = [h[: len(h) // 2] for h in halves]
    outs = [h[len(h) // 2:] for h in halves]
    # the shadows share the target's architecture; only their initial values differ
    theta = torch.stack([init_like(setup, seed, s) for s in range(models)]).to(setup.device)
    data = ClientData(setup.x_test, setup.y_test, ins, [torch.ones(len(i), dtype=torch.bool) for i in ins])
    train = cfg["train"]
    sched = Schedule("gradient", train["lr"], train["batch_size"], 1, None, "complete", 1.0, seed, models)
    grad_fn = grad(make_loss(setup.model, setup.spec))
    for epoch in range(epochs):
        idx, weight = round_batches(data, list(range(models)), sched, epoch)
        theta = theta - train["lr"] * local_pseudo_gradients(theta, data, idx, weight, train["lr"], grad_fn,
                                                             setup.strategy)
    probs, member, label = [], [], []
    for s in range(models):
        for rows, flag in ((ins[s], 1), (outs[s], 0)):
            probs.append(softmax(setup, theta[s], setup.x_test[rows.to(setup.device)]))
            member.append(torch.full((len(rows),), flag))
            label.append(setup.y_test[rows.to(setup.device)].cpu())
    train_acc = [float((probs[2 * s].argmax(1) == label[2 * s]).float().mean()) for s in range(models)]  # "in" halves
    trained_on = torch.zeros(models, len(setup.y_test), dtype=torch.bool)
    for s in range(models):
        trained_on[s, ins[s]] = True
    return {"softmax": torch.cat(probs), "member": torch.cat(member), "label": torch.cat(label),
            "shadow_train_accuracy": torch.tensor(train_acc), "shadow_theta": theta.cpu(),
            "shadow_trained_on": trained_on}


def init_like(setup: Setup, seed: int, s: int) -> torch.Tensor:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "init", s))
        model = build_model(setup.cfg["model"], tuple(setup.x_test.shape[1:]), setup.classes, setup.cfg["mlp_hidden"])
    return FlatSpec.of(model).flatten(model)


def fit_attack(data: dict[str, torch.Tensor], classes: list[int], seed: int) -> dict:
    """One RandomForestClassifier(n_estimators=100) per class on that class's shadow softmax vectors."""
    from sklearn.ensemble import RandomForestClassifier

    forests = {}
    for c in classes:
        rows = data["label"] == c
        forest = RandomForestClassifier(n_estimators=100, random_state=derive_seed(seed, "forest", c) % 2**31,
                                        n_jobs=1)
        forests[c] = forest.fit(data["softmax"][rows].numpy(), data["member"][rows].numpy())
    return forests


def member_probability(forests: dict, probs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """P(in) from the attack model of each sample's class."""
    out = np.zeros(len(labels))
    for c, forest in forests.items():
        rows = (labels == c).numpy()
        if rows.any():
            col = list(forest.classes_).index(1) if 1 in forest.classes_ else None
            out[rows] = forest.predict_proba(probs[rows].numpy())[:, col] if col is not None else 0.0
    return out


def balanced_auc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """ROC AUC of each row (members `pos` [r, m] against non-members `neg` [r, m]) by the Mann-Whitney rank
    sum with average ranks for ties, all rows at once; equal to sklearn's roc_auc_score row by row."""
    from scipy.stats import rankdata

    m = pos.shape[1]
    ranks = rankdata(np.concatenate([pos, neg], axis=1), axis=1)
    return (ranks[:, :m].sum(1) - m * (m + 1) / 2) / (m * neg.shape[1])


def repeated_attack(p_members: np.ndarray, p_others: np.ndarray, repetitions: int, max_samples: int,
                    gen: torch.Generator, with_auc: bool = True, precision_floor: int = 0,
                    fpr: float = 0.1) -> dict:
    """Precision, recall and accuracy (in %) over `repetitions` balanced resamples, computed for all
    repetitions at once (predict "member" iff P(in) > 0.5), and when `with_auc` sklearn's ROC AUC, balanced
    accuracy and TPR at false-positive rate `fpr` (of the P(in) scores, interpolated on the ROC curve): mean and
    std (ddof = 0) of each. Precision (mean and std) is None when fewer than `precision_floor` samples per draw
    are predicted members on average; `predicted_members_mean` gives that count."""
    m = min(len(p_members), len(p_others), max_samples)
    pos = np.stack([p_members[torch.randperm(len(p_members), generator=gen)[:m].numpy()] for _ in range(repetitions)])
    neg = np.stack([p_others[torch.randperm(len(p_others), generator=gen)[:m].numpy()] for _ in range(repetitions)])
    tp, fp = (pos > 0.5).sum(1), (neg > 0.5).sum(1)
    scores = {"precision": np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0),  # zero_division = 0
              "recall": tp / m, "accuracy": (tp + m - fp) / (2 * m)}
    if with_auc:
        scores.update(_ranking_scores(pos, neg, fpr))
    out = {"samples_per_side": m, "repetitions": repetitions, "predicted_members_mean": float(np.mean(tp + fp)),
           "precision_floor": precision_floor}
    for key, values in scores.items():
        out[f"{key}_mean"] = 100 * float(np.mean(values))
        out[f"{key}_std"] = 100 * float(np.std(values))
    if with_auc:
        out["fpr"] = fpr
    if out["predicted_members_mean"] < precision_floor:
        out["precision_mean"] = out["precision_std"] = None
    return out


def _ranking_scores(pos: np.ndarray, neg: np.ndarray, fpr: float) -> dict[str, np.ndarray]:
    """Per repetition (rows of `pos` and `neg`): sklearn's balanced accuracy of the P(in) > 0.5 decision,
    ROC AUC (balanced_auc, equal to sklearn's roc_auc_score) and TPR at `fpr` on sklearn's roc_curve (its upper
    envelope, linear between the curve's points, i.e. ties broken at random in expectation)."""
    from sklearn.metrics import balanced_accuracy_score, roc_curve

    truth = np.r_[np.ones(pos.shape[1]), np.zeros(neg.shape[1])]
    balanced, tpr_at = [], []
    for a, b in zip(pos, neg):
        scores = np.r_[a, b]
        balanced.append(balanced_accuracy_score(truth, scores > 0.5))
        curve_fpr, curve_tpr, _ = roc_curve(truth, scores)
        top = np.r_[curve_fpr[1:] != curve_fpr[:-1], True]  # the highest TPR at each FPR the curve reaches
        tpr_at.append(np.interp(fpr, curve_fpr[top], curve_tpr[top]))
    return {"auc": balanced_auc(pos, neg), "balanced_accuracy": np.array(balanced), "tpr_at_fpr": np.array(tpr_at)}


def mean_over(attacks: list[dict]) -> dict:
    """The mean of each number over several attacked models; a precision undefined for any of them stays
    undefined (None). Counts and settings are taken from the first."""
    out = dict(attacks[0])
    for key in attacks[0]:
        if key.endswith(("_mean", "_std")):
            values = [a[key] for a in attacks]
            out[key] = None if any(v is None for v in values) else sum(values) / len(values)
    return out


class ShadowModels:
    """The attack behind `attacks.Attack`: `fit` = one forest per class (`fit_attack`), `member_scores` = P(in)
    (`member_probability`), `metrics` = balanced resamples (`repeated_attack`)."""

    def __init__(self, seed: int):
        self.seed, self.forests = seed, {}

    def fit(self, shadow: dict[str, torch.Tensor], classes: list[int]) -> ShadowModels:
        self.forests = fit_attack(shadow, classes, self.seed)
        return self

    def member_scores(self, outputs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
        return member_probability(self.forests, outputs, labels)

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray, repetitions: int, max_samples: int,
                gen: torch.Generator, with_auc: bool = True, **options) -> dict:
        """`options`: repeated_attack's precision_floor and fpr."""
        return repeated_attack(members, nonmembers, repetitions, max_samples, gen, with_auc, **options)
