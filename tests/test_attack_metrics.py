"""The shadow attack's metrics beside precision, the precision floor, and how Table 3 shows an undefined cell."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unlearning.evaluate.attacks.shadow import mean_over, repeated_attack
from unlearning.experiments.pdudt import report
from unlearning.report import compare


def _draws(members: np.ndarray, others: np.ndarray, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = torch.Generator().manual_seed(seed)
    return (members[torch.randperm(len(members), generator=gen)[:m].numpy()],
            others[torch.randperm(len(others), generator=gen)[:m].numpy()])


def test_ranking_metrics_are_sklearns():
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    rng = np.random.default_rng(0)
    members, others = np.round(rng.uniform(size=90), 2), np.round(rng.uniform(size=70) * 0.9, 2)  # ties
    out = repeated_attack(members, others, repetitions=1, max_samples=60, gen=torch.Generator().manual_seed(5),
                          fpr=0.2)
    pos, neg = _draws(members, others, 60, 5)
    truth, scores = np.r_[np.ones(60), np.zeros(60)], np.r_[pos, neg]
    assert out["auc_mean"] == pytest.approx(100 * roc_auc_score(truth, scores))
    assert out["balanced_accuracy_mean"] == pytest.approx(100 * balanced_accuracy_score(truth, scores > 0.5))
    assert out["balanced_accuracy_mean"] == pytest.approx(out["accuracy_mean"])  # equal sides: the same number
    # TPR at FPR 0.2: the best TPR whose threshold keeps at most 20 % of the non-members above it, or
    # between two thresholds the line joining them
    thresholds = np.unique(scores)[::-1]
    points = [((neg >= t).mean(), (pos >= t).mean()) for t in thresholds]
    below = max(p for p in points if p[0] <= 0.2)
    above = min(p for p in points if p[0] > 0.2)
    expected = below[1] + (above[1] - below[1]) * (0.2 - below[0]) / (above[0] - below[0])
    assert out["tpr_at_fpr_mean"] == pytest.approx(100 * expected) and out["fpr"] == 0.2


def test_tpr_at_fpr_of_a_perfect_and_a_blind_attack():
    perfect = repeated_attack(np.ones(50), np.zeros(50), 3, 50, torch.Generator(), fpr=0.01)
    blind = repeated_attack(np.full(50, 0.7), np.full(50, 0.7), 3, 50, torch.Generator(), fpr=0.1)
    assert perfect["tpr_at_fpr_mean"] == 100.0 and perfect["auc_mean"] == 100.0
    assert blind["tpr_at_fpr_mean"] == pytest.approx(10.0) and blind["auc_mean"] == 50.0  # ties: the chance line


def test_precision_below_the_floor_is_undefined_with_its_count():
    members, others = np.r_[np.ones(3), np.zeros(47)], np.zeros(50)  # 3 predicted members per draw
    out = repeated_attack(members, others, 4, 50, torch.Generator(), precision_floor=20)
    assert out["precision_mean"] is None and out["precision_std"] is None
    assert out["predicted_members_mean"] == 3.0 and out["precision_floor"] == 20
    assert out["accuracy_mean"] == pytest.approx(53.0) and out["auc_mean"] == pytest.approx(53.0)
    defined = repeated_attack(members, others, 4, 50, torch.Generator(), precision_floor=3)
    assert defined["precision_mean"] == 100.0  # at the floor: defined


def test_mean_over_clients_keeps_undefined_precision_undefined():
    a = {"precision_mean": 40.0, "precision_std": 1.0, "accuracy_mean": 50.0, "samples_per_side": 10}
    b = {"precision_mean": None, "precision_std": None, "accuracy_mean": 60.0, "samples_per_side": 10}
    assert mean_over([a, a]) == {**a, "precision_mean": 40.0}
    both = mean_over([a, b])
    assert both["precision_mean"] is None and both["accuracy_mean"] == 55.0 and both["samples_per_side"] == 10


def test_table3_shows_undefined_precision_with_its_count():
    variant = {"sigma": None, "client_mean_test_accuracy": 0.8, "averaged_model_test_accuracy": 0.8,
               "mia_loss_threshold_auc": 0.5, "mia_shadow_client_mean": {"precision_mean": None},
               "mia_shadow": {"precision_mean": None, "precision_std": None, "samples_per_side": 10,
                              "predicted_members_mean": 3.0, "precision_floor": 20, "auc_mean": 51.0,
                              "balanced_accuracy_mean": 50.5, "tpr_at_fpr_mean": 9.0}}
    results = [{"experiment": "pdudt_fashion_mnist", "method": "retrain", "checkpoints": {"B": [variant]}}]
    table = report.table3(results, {}, {"fashion_mnist": 0.002})
    row = table[(table.method == "retrain") & (table.checkpoint == "B")].iloc[0]
    assert row.status == "missing: precision undefined, 3 predicted members per draw, below the floor 20"
    assert compare.kind(row.status) == "missing"  # counted on the front page as a cell we could not compute
    assert row.predicted_members == 3.0 and row.tpr_at_fpr == 9.0
    shown = report._precision_cells(table)
    assert shown[(shown.method == "retrain")].precision_mean.iloc[0] == "undefined (3 predicted)"
