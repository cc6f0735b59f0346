"""evaluate/roc.py gives scikit-learn's ROC curve and AUC bit for bit (it stands in for them to spare every job
scikit-learn's import)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

from unlearning.evaluate.roc import roc_auc, roc_curve


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_roc_matches_scikit_learn_bit_for_bit_with_ties(dtype):
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 400))
        y = rng.integers(0, 2, n)
        y[0], y[1] = 0, 1  # both classes
        levels = int(rng.integers(1, 50)) if trial % 2 else n  # many ties, or few
        s = (rng.integers(0, levels, n) / levels + rng.normal(0, 0.1) * y).astype(dtype)
        fpr, tpr, _ = sk_roc_curve(y, s)
        mine = roc_curve(y, s)
        assert np.array_equal(mine[0], fpr) and np.array_equal(mine[1], tpr)
        assert roc_auc(y, s) == float(roc_auc_score(y, s))


def test_roc_needs_both_classes_and_finite_scores():
    with pytest.raises(ValueError, match="both positive and negative"):
        roc_curve([1, 1], [0.2, 0.3])
    assert np.isnan(roc_auc([1, 1], [0.2, 0.3]))  # as roc_auc_score (which warns)
    with pytest.raises(ValueError, match="all finite"):
        roc_curve([0, 1], [0.2, np.nan])
