"""What the workflow needs of RR-DU's steps while it plans, without importing torch (Snakemake reads it at every
start): the ablations' parts, one job each, which steps.merge_ablations joins."""

ABLATION_PARTS = ("baseline", "sensitivity", "baselines", "scratch")
