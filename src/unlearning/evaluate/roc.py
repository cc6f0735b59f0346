"""Binary ROC curve and ROC AUC as scikit-learn 1.9 computes them (`sklearn.metrics.roc_curve` with
drop_intermediate, `roc_auc_score`; unweighted), in its operations, so the same bits: importing scikit-learn costs
2-3 s of every job's start, and the common ground's small jobs each judge models (tests/test_roc.py compares the
two on random scores with ties)."""

from __future__ import annotations

import numpy as np


def roc_curve(y_true, y_score) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr) of labels `y_true` (1 = positive) and scores `y_score` (higher = positive), from (0, 0)."""
    y_true, y_score = np.asarray(y_true).ravel(), np.asarray(y_score).ravel()
    if len(y_true) != len(y_score) or not np.isfinite(y_score).all():
        raise ValueError(f"roc_curve: {len(y_true)} labels and {len(y_score)} scores, all finite; got otherwise")
    order = np.argsort(-y_score, kind="stable")  # descending; ties fall into one threshold whatever their order
    y_score, y_true = y_score[order], (y_true[order] == 1).astype(np.float64)
    thresholds = np.r_[np.nonzero(np.diff(y_score))[0], len(y_true) - 1]
    tps = np.cumsum(y_true, dtype=np.float64)[thresholds]
    fps = 1 + thresholds.astype(np.float64) - tps
    if len(fps) > 2:  # drop the collinear points, as sklearn's drop_intermediate
        keep = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
        fps, tps = fps[keep], tps[keep]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    if fps[-1] <= 0 or tps[-1] <= 0:
        raise ValueError("roc_curve: needs both positive and negative samples")
    return fps / fps[-1], tps / tps[-1]


def roc_auc(y_true, y_score) -> float:
    """The area under `roc_curve` by the trapezoidal rule (sklearn's `auc`); NaN where one class is missing, as
    sklearn's `roc_auc_score` (which also warns)."""
    if len(np.unique(np.asarray(y_true) == 1)) != 2:
        return float("nan")
    fpr, tpr = roc_curve(y_true, y_score)
    return float(np.trapezoid(tpr, fpr))
