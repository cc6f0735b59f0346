"""What the workflow needs of RR-DU's steps while it plans, without importing torch (Snakemake reads it at every
start): the ablations' parts, one job each, which steps.merge_ablations joins."""

ABLATION_PARTS = ("baseline", "sensitivity", "baselines", "scratch")


def ablation_parts(cfg: dict) -> tuple[str, ...]:
    """The parts a configuration runs: spec A1's sensitivity reading only where `sensitivity` is on (the paper
    scale's; at quick the report links the recorded one)."""
    return tuple(p for p in ABLATION_PARTS if p != "sensitivity" or cfg["sensitivity"])
