"""A cross-validated black-box membership attack on [logits, loss] (Shokri et al. 2017's attack model, in the form
of Mu & Klabjan 2025, Section 4.1 and Appendix D): the attacker sees a model's logits and loss on two sets
(members: the data to be forgotten; non-members: samples from users the model never saw) and fits a logistic
regression to tell them apart; the score is its mean ROC AUC over repeated stratified K-fold (0.5 = chance).

- features per sample: [logit_0, ..., logit_{C-1}, cross-entropy loss] (3 for two classes), not normalised,
  NaN/inf mapped to finite numbers (`numpy.nan_to_num`);
- balance: the larger group is subsampled (seeded) to the size of the smaller;
- attack: scikit-learn `LogisticRegression()` with its defaults (`class_weight` optional);
- score: `RepeatedStratifiedKFold(n_splits, n_repeats, random_state=seed)`, mean of the folds' ROC AUC.

Behind the `attacks.Attack` interface: nothing to fit on shadow data (`fit` returns the attack),
`member_scores` returns the feature rows of a model's outputs, `metrics(members, nonmembers)` the score.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ...seeding import generator


def features(logits: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """[n, C + 1]: the logits and the per-sample cross-entropy loss, NaN/inf made finite."""
    logits = logits.detach().double().cpu()
    loss = F.cross_entropy(logits, labels.long().cpu(), reduction="none")
    return np.nan_to_num(torch.cat([logits, loss[:, None]], 1).numpy())


def balance(members: np.ndarray, nonmembers: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Both groups at the smaller group's size: the larger one subsampled without replacement (seeded)."""
    s = min(len(members), len(nonmembers))
    g = generator(seed, "mia-logit-loss", "balance")
    pick = [torch.randperm(len(x), generator=g)[:s].numpy() if len(x) > s else np.arange(len(x))
            for x in (members, nonmembers)]
    return members[pick[0]], nonmembers[pick[1]]


class LogitLossAttack:
    """The attack of the module docstring."""

    def __init__(self, seed: int, n_splits: int = 5, n_repeats: int = 10, class_weight: str | None = None):
        if isinstance(n_splits, bool) or not isinstance(n_splits, int) or n_splits < 2:
            raise ValueError(f"n_splits = {n_splits!r}: valid: an integer >= 2")
        if isinstance(n_repeats, bool) or not isinstance(n_repeats, int) or n_repeats < 1:
            raise ValueError(f"n_repeats = {n_repeats!r}: valid: an integer >= 1")
        self.seed, self.n_splits, self.n_repeats, self.class_weight = seed, n_splits, n_repeats, class_weight

    def fit(self, shadow=None, classes=None) -> LogitLossAttack:
        return self

    def member_scores(self, outputs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
        """The attack's input rows for logits `outputs` [n, C] and labels [n]."""
        return features(outputs, labels)

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray) -> dict:
        """{"auc": mean ROC AUC over the folds, "auc_std", "samples": per group after balancing, "folds"};
        auc None when a group has fewer samples than n_splits."""
        from sklearn.linear_model import LogisticRegression  # scikit-learn costs ~1.5 s at start-up
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RepeatedStratifiedKFold

        mem, non = balance(np.asarray(members), np.asarray(nonmembers), self.seed)
        s = len(mem)
        if s < self.n_splits:
            return {"auc": None, "auc_std": None, "samples": s, "folds": 0}
        x = np.concatenate([mem, non])
        y = np.concatenate([np.ones(s), np.zeros(s)])
        order = generator(self.seed, "mia-logit-loss", "shuffle")
        perm = torch.randperm(len(y), generator=order).numpy()
        x, y = x[perm], y[perm]
        folds = RepeatedStratifiedKFold(n_splits=self.n_splits, n_repeats=self.n_repeats,
                                        random_state=self.seed % 2**32)
        aucs = []
        for train, test in folds.split(x, y):
            clf = LogisticRegression(class_weight=self.class_weight).fit(x[train], y[train])
            aucs.append(roc_auc_score(y[test], clf.predict_proba(x[test])[:, 1]))
        return {"auc": float(np.mean(aucs)), "auc_std": float(np.std(aucs)), "samples": s, "folds": len(aucs)}
