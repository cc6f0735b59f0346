"""The loss-threshold membership inference attack (Yeom et al. 2018): a lower loss means "member"."""

from __future__ import annotations

import numpy as np
import torch

from ..roc import roc_auc


def loss_threshold_auc(member_loss: torch.Tensor, nonmember_loss: torch.Tensor) -> float | None:
    """ROC AUC of the score -loss separating members (1) from non-members (0); None if either is empty."""
    if len(member_loss) == 0 or len(nonmember_loss) == 0:
        return None
    labels = torch.cat([torch.ones(len(member_loss)), torch.zeros(len(nonmember_loss))])
    scores = -torch.cat([member_loss, nonmember_loss])
    return roc_auc(labels.numpy(), scores.numpy())  # scikit-learn's, without its import


class LossThreshold:
    """Nothing to fit; the outputs are per-sample losses and the metric is the ROC AUC of -loss."""

    def fit(self, shadow: dict[str, torch.Tensor] | None = None, classes: list[int] | None = None) -> LossThreshold:
        return self

    def member_scores(self, outputs: torch.Tensor, labels: torch.Tensor | None = None) -> np.ndarray:
        return -outputs.numpy()

    def metrics(self, members: np.ndarray, nonmembers: np.ndarray) -> dict:
        """{"auc": ...}: the same number as `loss_threshold_auc` on the losses."""
        auc = loss_threshold_auc(-torch.from_numpy(members), -torch.from_numpy(nonmembers))
        return {"auc": auc}
