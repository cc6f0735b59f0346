"""A balanced, classifier-based membership inference attack calibrated on the target model.

Features per sample (x, y) with p = softmax(model(x)): [cross-entropy loss, p_y, max_k p_k, entropy(p)],
standardised; a logistic regression (sklearn, max_iter 1000) is fitted on samples the model trained on
(members: retained training data) against held-out samples (non-members: test half A), and evaluated on a
balanced set: s members (the forget set) against s non-members (test half B, or only its samples of the
forgotten class for a class-wise request). Accuracy = correct / (2s); 50 % = the attack cannot tell.

This is the construction Wu et al. 2026 (Sec. VI, "MIA Acc") leave unstated, made concrete: the paper gives the
purpose and the ideal (50 %), not the attack. With 2s evaluation samples the accuracy's standard error is
about 50 / sqrt(2s) points, so the 95 % binomial interval is reported with it (`gate_min` says from which 2s a
tolerance on it means something).
"""

from __future__ import annotations

import numpy as np
import torch

from ...seeding import generator
from ..gates import GATE_MIN

FEATURES = ("loss", "p_true", "p_max", "entropy")


def features(probs: torch.Tensor, labels: torch.Tensor, floor: float = 1e-12) -> np.ndarray:
    """[n, 4] attack features from softmax outputs [n, classes] and true labels [n]."""
    p = probs.double().clamp_min(floor)
    p_true = p.gather(1, labels.long().view(-1, 1)).squeeze(1)
    out = torch.stack([-p_true.log(), p_true, p.max(1).values, -(p * p.log()).sum(1)], dim=1)
    return out.numpy()


def binomial_interval(correct: int, total: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """The Wilson score interval of correct / total, in %, from scipy's exact binomial test object."""
    if total == 0:
        return None, None
    from scipy.stats import binomtest

    ci = binomtest(correct, total).proportion_ci(confidence_level=level, method="wilson")
    return 100 * ci.low, 100 * ci.high


def draw(n: int, k: int, seed: int, *keys) -> torch.Tensor:
    """k of range(n) without replacement (all of them, shuffled, when k >= n), seeded."""
    return torch.randperm(n, generator=generator(seed, "mia-classifier", *keys))[: min(k, n)]


def balanced_eval_sets(forget_idx: torch.Tensor, pool_idx: torch.Tensor,
                       seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """s = min(|forget|, |pool|) forget samples and s pool samples (indices into each), seeded."""
    s = min(len(forget_idx), len(pool_idx))
    members = forget_idx[draw(len(forget_idx), s, seed, "eval-members")]
    return members, pool_idx[draw(len(pool_idx), s, seed, "eval-nonmembers")]


class ClassifierAttack:
    """The attack behind `attacks.Attack`: `fit` on {member_probs, member_labels, nonmember_probs,
    nonmember_labels}; `member_scores` = P(member) of the fitted classifier; `metrics` = balanced accuracy at
    the 0.5 threshold with its 95 % interval (equal numbers of members and non-members expected)."""

    def __init__(self, seed: int, max_iter: int = 1000):
        self.seed, self.max_iter, self.model = seed, max_iter, None

    def fit(self, shadow: dict[str, torch.Tensor], classes: list[int] | None = None) -> ClassifierAttack:
        from sklearn.linear_model import LogisticRegression  # scikit-learn costs ~1.5 s at start-up
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        members = features(shadow["member_probs"], shadow["member_labels"])
        others = features(shadow["nonmember_probs"], shadow["nonmember_labels"])
        if len(members) == 0 or len(others) == 0:
            raise ValueError(f"classifier attack: {len(members)} members and {len(others)} non-members to fit on; "
                             "valid: at least one of each")
        x = np.concatenate([members, others])
        y = np.concatenate([np.ones(len(members)), np.zeros(len(others))])
        self.model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=self.max_iter,
                                                                        random_state=self.seed % 2**32))
        self.model.fit(x, y)
        return self

    def member_scores(self, outputs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
        if self.model is None:
            raise RuntimeError("classifier attack: member_scores before fit")
        if len(outputs) == 0:
            return np.zeros(0)
        return self.model.predict_proba(features(outputs, labels))[:, 1]

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray, gate_min: int = GATE_MIN) -> dict:
        """{"accuracy": % correct at threshold 0.5, "correct", "samples" (= 2s), "ci_low"/"ci_high" (95 %
        Wilson, %), "gated": whether 2s >= gate_min}; accuracy None when either side is empty."""
        total = len(members) + len(nonmembers)
        if len(members) == 0 or len(nonmembers) == 0:
            return {"accuracy": None, "correct": 0, "samples": total, "ci_low": None, "ci_high": None, "gated": False}
        correct = int((members > 0.5).sum() + (nonmembers <= 0.5).sum())
        low, high = binomial_interval(correct, total)
        return {"accuracy": 100 * correct / total, "correct": correct, "samples": total, "ci_low": low,
                "ci_high": high, "gated": total >= gate_min}
