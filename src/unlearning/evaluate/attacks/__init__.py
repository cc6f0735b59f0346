"""Membership inference attacks behind one interface.

An attack is fitted on the attacker's shadow data (`fit`), turns a model's outputs on samples into
membership scores (`member_scores`: higher = more likely a member), and turns the scores of members and
non-members into its metrics (`metrics`). A new attack is one class with these three methods.

- `LossThreshold` (Yeom et al. 2018): nothing to fit; outputs are per-sample losses; metric: ROC AUC.
- `ClassifierAttack`: a logistic regression on [loss, p_y, max p, entropy] calibrated on the target model
  (retained training data vs held-out data); metric: balanced accuracy with its 95 % binomial interval.
- `ShadowModels` (Shokri et al. 2017): per-class random forests fitted on shadow models' softmax vectors;
  outputs are softmax vectors; metrics over balanced resamples (`shadow.repeated_attack`).
- `LogitLossAttack` (Shokri-style, as Mu & Klabjan 2025 use it): a logistic regression on [logits, loss] of the
  target model, members vs samples of unseen users; metric: mean ROC AUC over repeated stratified K-fold.
- `RMIA` (Zarifzadeh et al. 2024): the per-sample relative likelihood-ratio test against reference models and
  population samples; metrics: ROC AUC and TPR at 1 % and 0.1 % FPR (the strong attack beside the papers' own).

The common ground's judge runs the attacks of `common.decentralized.attack.scores`, each a *reference-model attack*:
a module of this package declares it once with `@reference_attack(name, label=...)` (protocol.py) on its
`fit(References) -> Fitted` (RMIA in rmia.py, LiRA in lira.py); nothing else lists them (docs/extending.md).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from .classifier import ClassifierAttack
from .logit_loss import LogitLossAttack
from .loss_threshold import LossThreshold
from .rmia import RMIA
from .shadow import ShadowModels

__all__ = ["Attack", "ClassifierAttack", "LogitLossAttack", "LossThreshold", "RMIA", "ShadowModels"]


class Attack(Protocol):
    def fit(self, shadow: dict[str, torch.Tensor] | None, classes: list[int]) -> Attack: ...

    def member_scores(self, outputs: torch.Tensor, labels: torch.Tensor) -> np.ndarray: ...

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray, **options) -> dict: ...

