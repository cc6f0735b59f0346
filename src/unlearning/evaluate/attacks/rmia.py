"""RMIA, the relative membership inference attack (Zarifzadeh, Liu, Mittal and Shokri, ICML 2024): a per-sample
likelihood-ratio test strong with as few as 1-4 reference models, reported as TPR at a low FPR (1 %, 0.1 %).

For a candidate x with label y, the signal is a model's probability of the true label, p(x | theta).
- Pr(x): the reference models' p(x | theta_ref), averaged. Online (references trained with and without x,
  `ref_member` given): the mean over all of them. Offline (every reference trained without x): the paper's linear
  approximation of the missing IN half, Pr(x) = ((1 + a) mean_OUT + (1 - a)) / 2 (its eq. 10; `a` is the
  attack's one constant, 0.3 by default, a parameter).
- Pairwise likelihood ratio against population samples z (never trained on by the target):
  LR(x, z) = (p(x | theta) / Pr(x)) / (p(z | theta) / Pr(z)).
- Score(x) = the fraction of z with LR(x, z) >= gamma (gamma = 1 by default). Higher = more likely a member.

No maintained library packages it for this stack: Privacy Meter's PyPI release (1.0, 2023) predates RMIA and
depends on TensorFlow; the attack is a few array operations, written here with numpy and scikit-learn's ROC.

Behind the `attacks.Attack` interface (`RMIA`): `fit` takes the references' probabilities of the population (and,
where known, which reference trained on which population sample), once per set of references; `attack` then judges
one target model from its probabilities of the candidates and the population. The functions `marginal`, `scores`
and `metrics` are its parts.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..roc import roc_auc, roc_curve
from .protocol import Fitted, References, reference_attack

DEFAULT_A, DEFAULT_GAMMA = 0.3, 1.0
A_GRID = tuple(round(0.1 * i, 1) for i in range(11))  # tune_a's candidates for a
FPRS = (0.01, 0.001)


def _array(x, name: str, ndim: int) -> np.ndarray:
    a = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"rmia: {name} has {a.ndim} dimensions; valid: {ndim}")
    if not np.isfinite(a).all():
        raise ValueError(f"rmia: {name} holds non-finite probabilities; valid: values in [0, 1]")
    return a


def true_label_probs(logits, labels) -> np.ndarray:
    """p(x | theta): the softmax probability of each sample's true label, [n] (float64)."""
    import torch

    probs = torch.softmax(logits.detach().double().cpu(), dim=1)
    return probs.gather(1, labels.long().cpu()[:, None])[:, 0].numpy()


def marginal(p_ref: np.ndarray, ref_member: np.ndarray | None = None, a: float = DEFAULT_A) -> np.ndarray:
    """Pr(x) per sample from reference probabilities [k, n]: the mean over references that include IN models
    (online), else the offline approximation ((1 + a) mean_OUT + (1 - a)) / 2."""
    if not 0 <= a <= 1:
        raise ValueError(f"rmia: a = {a!r}; valid: a number in [0, 1]")
    mean = p_ref.mean(0)
    if ref_member is None:
        return ((1 + a) * mean + (1 - a)) / 2
    ref_member = np.asarray(ref_member, dtype=bool)
    if ref_member.shape != p_ref.shape:
        raise ValueError(f"rmia: ref_member has shape {ref_member.shape}; valid: p_ref's {p_ref.shape}")
    has_in = ref_member.any(0)
    out_mean = np.where(~ref_member, p_ref, 0).sum(0) / np.maximum((~ref_member).sum(0), 1)
    return np.where(has_in, mean, ((1 + a) * out_mean + (1 - a)) / 2)


def scores(p_target, p_ref, p_target_pop, p_ref_pop, ref_member=None, a: float = DEFAULT_A,
           gamma: float = DEFAULT_GAMMA, pop_marginal: np.ndarray | None = None) -> np.ndarray:
    """RMIA scores of n candidates: p_target [n] and p_ref [k, n] the target's and the references' probability
    of each candidate's true label; p_target_pop [m], p_ref_pop [k, m] the same for m population samples;
    ref_member [k, n] (optional) whether each reference trained on each candidate; pop_marginal [m] (optional)
    Pr(z) when the references' membership of the population is known (`marginal` with it), else offline.
    Returns [n] in [0, 1]."""
    pt, pr = _array(p_target, "p_target", 1), _array(p_ref, "p_ref", 2)
    pz, prz = _array(p_target_pop, "p_target_pop", 1), _array(p_ref_pop, "p_ref_pop", 2)
    if pr.shape != (pr.shape[0], len(pt)) or prz.shape != (pr.shape[0], len(pz)):
        raise ValueError(f"rmia: shapes p_target {pt.shape}, p_ref {pr.shape}, p_target_pop {pz.shape}, p_ref_pop "
                         f"{prz.shape}; valid: p_ref [k, n] and p_ref_pop [k, m] with the same k")
    if gamma <= 0:
        raise ValueError(f"rmia: gamma = {gamma!r}; valid: > 0")
    tiny = np.finfo(np.float64).tiny
    ratio_x = pt / np.maximum(marginal(pr, ref_member, a), tiny)
    pr_z = marginal(prz, None, a) if pop_marginal is None else _array(pop_marginal, "pop_marginal", 1)
    ratio_z = np.sort(pz / np.maximum(pr_z, tiny))
    # LR(x, z) >= gamma  <=>  ratio_z <= ratio_x / gamma
    return np.searchsorted(ratio_z, ratio_x / gamma, side="right") / len(ratio_z)


def tune_a(p_ref: np.ndarray, ref_member: np.ndarray, grid=A_GRID,
           gamma: float = DEFAULT_GAMMA) -> tuple[float, dict[float, float]]:
    """The offline constant `a` as Zarifzadeh et al. choose it (Sec. 4, App. B.2): each reference in turn plays the
    target, its own training samples the members and the rest the non-members (also its population z), the
    others its references, each sample's Pr from those others that did not train on it (eq. 10 at a). Returns
    the `a` of `grid` with the highest mean ROC AUC (the first on ties) and every a's mean AUC.
    p_ref, ref_member: [k, n] the references' probabilities of n samples and whether each trained on each."""
    p_ref, member = _array(p_ref, "p_ref", 2), np.asarray(ref_member, dtype=bool)
    if member.shape != p_ref.shape or len(p_ref) < 2:
        raise ValueError(f"rmia: tune_a needs p_ref and ref_member of one shape [k >= 2, n]; got {p_ref.shape} and "
                         f"{member.shape}")
    aucs: dict[float, list[float]] = {float(a): [] for a in grid}
    for i in range(len(p_ref)):
        others, out = np.delete(p_ref, i, 0), ~np.delete(member, i, 0)
        usable = out.any(0)
        if not (member[i] & usable).any() or not (~member[i] & usable).any():
            continue
        out_mean = np.where(out, others, 0).sum(0)[usable] / out.sum(0)[usable]
        target, is_member = p_ref[i][usable], member[i][usable]
        for a in aucs:
            ratio = target / np.maximum(((1 + a) * out_mean + (1 - a)) / 2, np.finfo(np.float64).tiny)
            ratio_z = np.sort(ratio[~is_member])
            score = np.searchsorted(ratio_z, ratio / gamma, side="right") / len(ratio_z)
            aucs[a].append(roc_auc(is_member, score))
    if not any(aucs.values()):
        raise ValueError("rmia: tune_a found no reference with both members and non-members among the others' OUT "
                         "samples; valid: references trained on different halves")
    mean = {a: float(np.mean(v)) for a, v in aucs.items()}
    return max(mean, key=lambda a: (mean[a], -a)), mean


def tpr_at_fpr(members: np.ndarray, nonmembers: np.ndarray, fpr: float) -> float:
    """The highest TPR at a threshold whose FPR is at most `fpr` (no interpolation past it)."""
    y = np.r_[np.ones(len(members)), np.zeros(len(nonmembers))]
    f, t = roc_curve(y, np.r_[members, nonmembers])
    return float(t[f <= fpr].max())


def metrics(members: np.ndarray, nonmembers: np.ndarray, fprs: tuple[float, ...] = FPRS) -> dict:
    """ROC AUC and TPR at each FPR of `fprs`, with the sample counts (a TPR at FPR f is resolved only where
    nonmembers >= 1 / f: `resolved`)."""
    members, nonmembers = np.asarray(members, float), np.asarray(nonmembers, float)
    y = np.r_[np.ones(len(members)), np.zeros(len(nonmembers))]
    out = {"auc": roc_auc(y, np.r_[members, nonmembers]), "members": len(members),
           "nonmembers": len(nonmembers)}
    for f in fprs:
        out[f"tpr_at_{f:g}_fpr"] = tpr_at_fpr(members, nonmembers, f)
        out[f"resolved_{f:g}"] = len(nonmembers) * f >= 1
    return out


class RMIA:
    """RMIA behind the attacks.Attack interface: `fit` fixes the population's part (the references' probabilities
    of the population and Pr(z)) once per set of references; `member_scores` and `attack` judge one target."""

    def __init__(self, a: float = DEFAULT_A, gamma: float = DEFAULT_GAMMA):
        self.a, self.gamma = a, gamma
        self.population: dict | None = None

    def fit(self, shadow: dict, classes=None) -> RMIA:
        """shadow: {"p_ref_pop": [k, m] reference probabilities of the population samples, optional "pop_member":
        [k, m] whether each reference trained on each (online Pr(z); offline without it)}."""
        p_ref_pop = _array(shadow["p_ref_pop"], "p_ref_pop", 2)
        self.population = {"p_ref_pop": p_ref_pop,
                           "pop_marginal": marginal(p_ref_pop, shadow.get("pop_member"), self.a)}
        return self

    def member_scores(self, outputs: dict, labels=None) -> np.ndarray:
        """outputs: {"p_target": [n], "p_ref": [k, n], "p_target_pop": [m], optional "ref_member": [k, n]}."""
        if self.population is None:
            raise RuntimeError("rmia: fit() with the population's reference probabilities first")
        return scores(outputs["p_target"], outputs["p_ref"], outputs["p_target_pop"], self.population["p_ref_pop"],
                      outputs.get("ref_member"), self.a, self.gamma, self.population["pop_marginal"])

    def attack(self, p_target, p_ref, p_target_pop, members: int) -> dict:
        """`metrics` of one target whose candidates are `members` members first, then non-members: p_target [n]
        and p_ref [k, n] the target's and the references' probabilities of them, p_target_pop [m] the target's of
        the population."""
        s = self.member_scores({"p_target": p_target, "p_ref": p_ref, "p_target_pop": p_target_pop})
        return metrics(s[:members], s[members:])

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray, **options) -> dict:
        return metrics(members, nonmembers, **options)


@reference_attack("rmia", label="RMIA")
def fit_reference_attack(refs: References) -> Fitted:
    """The common ground's RMIA: Pr(z) from the references' population probabilities, online (each candidate's IN
    and OUT references) or offline (eq. 10 at the tuned `a`); probabilities are expit of the log-odds (float64)."""
    model = RMIA(DEFAULT_A if refs.a is None else refs.a).fit({"p_ref_pop": expit(refs.phi_ref_pop),
                                                               "pop_member": refs.pop_member})
    p_ref = expit(refs.phi_ref)
    return Fitted(lambda phi_cand, phi_pop: model.member_scores({"p_target": expit(phi_cand), "p_ref": p_ref,
                                                                 "ref_member": refs.cand_member,
                                                                 "p_target_pop": expit(phi_pop)}))
