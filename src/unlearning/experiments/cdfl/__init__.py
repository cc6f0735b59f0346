"""CDFL (Wu et al., 2026): certified unlearning in decentralized FL with Newton/Fisher corrections (the paper's DU)."""


def damping_for(unlearn: dict, dataset: str) -> float:
    """DU's damping on `dataset`: cdfl.unlearn.damping_by_dataset's value for it (its own sweep's choice), else
    cdfl.unlearn.damping. Here, not in steps.py, so that the report reads it without importing torch."""
    return float((unlearn.get("damping_by_dataset") or {}).get(dataset, unlearn["damping"]))
