"""CDFL's figures (Wu et al. 2026). Figure 2: the time of DU (correction + fine-tuning) against RT's, per
granularity, measured the same way in one process (evaluation excluded), in the paper's setting (IID + Erdos-Renyi)
where those cells ran, else over every cell; bars are means over the cells (error bars: their standard deviation),
on a log axis as in the paper. The paper's own bars are images only, so nothing is drawn beside them; the numbers
behind the figure are `timing.csv` (wall times: they vary from run to run, like the figure)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...report import style

FIGURE2 = "figure2.png"


def figure2(times: pd.DataFrame, out: Path) -> str:
    """Draw Figure 2 from the timing table (`report.timing_table`) into <out>/figure2.png and return its name; with
    no cell timed (no dataset on disk) the figure says so."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if not times.empty and ((times.partition == "iid") & (times.topology == "erdos_renyi")).any():
        times = times[(times.partition == "iid") & (times.topology == "erdos_renyi")]
    rows = [] if times.empty else [
        {"dataset": r.dataset, "granularity": r.granularity, "method": method, "seconds": seconds}
        for r in times.itertuples() for method, seconds in (("DU", r.du_s), ("RT", r.rt_s)) if pd.notna(seconds)]
    data = pd.DataFrame(rows, columns=["dataset", "granularity", "method", "seconds"])
    datasets = sorted(data.dataset.unique()) or ["none"]
    style.apply()
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        part = data[data.dataset == dataset]
        if part.empty:
            ax.text(0.5, 0.5, "no cell was timed (no dataset on disk)", ha="center", va="center")
            ax.set_axis_off()
            continue
        sns.barplot(part, x="granularity", y="seconds", hue="method", errorbar="sd", ax=ax)
        ax.set_title(f"{dataset}: DU vs RT time (Fig. 2)")
        ax.set_yscale("log")
        ax.set_ylabel("seconds (training / unlearning only)")
        ax.tick_params(axis="x", labelrotation=20)
    style.save(fig, out / FIGURE2)
    return FIGURE2
