"""CDFL's figures (Wu et al. 2026). Figure 1 (`figure1`): test accuracy over rounds with sequential requests
and client-wise removal, from experiments/cdfl/figure1.py's results. Figure 2: the time of DU (correction +
fine-tuning) and, client-wise, of PDUDT (correction + subsequent rounds until its accuracy stabilises) against
RT's, per granularity, measured the same way in one process (evaluation excluded), in the
paper's setting (IID + Erdos-Renyi) where those cells ran, else over every cell; bars are means over the cells
(error bars: their standard deviation), on a log axis as in the paper. The paper's own figures are images only, so
nothing is drawn beside them; the numbers behind Figure 2 are `timing.csv` (wall times: they vary from run to run,
like the figure)."""

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
    rows, rt_seen = [], set()
    for r in times.itertuples():
        cell = (r.dataset, r.partition, r.topology, r.seed, r.granularity)
        if pd.notna(r.unlearn_s):
            rows.append({"dataset": r.dataset, "granularity": r.granularity, "method": r.method,
                         "seconds": r.unlearn_s})
        if pd.notna(r.rt_s) and cell not in rt_seen:  # RT once per cell and granularity, not per method beside it
            rt_seen.add(cell)
            rows.append({"dataset": r.dataset, "granularity": r.granularity, "method": "RT (K rounds)",
                         "seconds": r.rt_s})
            stable = getattr(r, "rt_stable_s", None)
            if stable is not None and pd.notna(stable):
                rows.append({"dataset": r.dataset, "granularity": r.granularity, "method": "RT (until stable)",
                             "seconds": stable})
    data = pd.DataFrame(rows, columns=["dataset", "granularity", "method", "seconds"])
    datasets = sorted(data.dataset.unique()) or ["none"]
    style.apply()
    fig, axes = plt.subplots(1, len(datasets), figsize=(7.0 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        part = data[data.dataset == dataset]
        if part.empty:
            ax.text(0.5, 0.5, "no cell was timed (no dataset on disk)", ha="center", va="center")
            ax.set_axis_off()
            continue
        sns.barplot(part, x="granularity", y="seconds", hue="method", errorbar="sd", ax=ax)
        ax.set_title(f"{dataset}: unlearning vs RT time (Fig. 2)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_yscale("log")
        ax.set_ylabel("seconds (training / unlearning only)")
        ax.tick_params(axis="x", labelrotation=20)
    style.save(fig, out / FIGURE2)
    return FIGURE2


FIGURE1 = "figure1.png"
FIGURE1_COLUMNS = ["dataset", "panel", "method", "request", "round", "test_accuracy"]


def figure1_table(results: list[dict]) -> pd.DataFrame:
    """Figure 1's curves in long format: one row per (dataset, panel, method, round); the original's K rounds in
    both panels, "DU after correction" at each request's round, then DU's and RT's window (request: 1, 2, ...;
    client-wise: 1)."""
    rows = []
    for r in results:
        d = r["dataset"]
        for panel in ("sample-wise", "client-wise"):
            rows += [{"dataset": d, "panel": panel, "method": "original", "request": 0, "round": p["round"],
                      "test_accuracy": p["test_accuracy"]} for p in r["original"]["curve"]]
        for b in r["sample"]["requests"]:
            windows = [("DU after correction", [b["du"]["after_correction"]] if b["du"]["after_correction"] else []),
                       ("DU", b["du"]["curve"]), ("RT", b["rt"]["curve"])]
            rows += [{"dataset": d, "panel": "sample-wise", "method": m, "request": b["request"], "round": p["round"],
                      "test_accuracy": p["test_accuracy"]} for m, curve in windows for p in curve]
        c = r["client"]
        for weight, du in c["du"].items():
            windows = [(f"DU ({weight}) after correction", [du["after_correction"]]), (f"DU ({weight})", du["curve"])]
            rows += [{"dataset": d, "panel": "client-wise", "method": m, "request": 1, "round": p["round"],
                      "test_accuracy": p["test_accuracy"]} for m, curve in windows for p in curve]
        p_block = c.get("pdudt")
        if p_block:
            windows = [("PDUDT after correction", [p_block["after_correction"]]), ("PDUDT", p_block["curve"])]
            rows += [{"dataset": d, "panel": "client-wise", "method": m, "request": 1, "round": p["round"],
                      "test_accuracy": p["test_accuracy"]} for m, curve in windows for p in curve]
        rows += [{"dataset": d, "panel": "client-wise", "method": "RT", "request": 1, "round": p["round"],
                  "test_accuracy": p["test_accuracy"]} for p in c["rt"]["curve"]]
    return pd.DataFrame(rows, columns=FIGURE1_COLUMNS)


def figure1(curves: pd.DataFrame, results: list[dict], out: Path) -> str:
    """Draw Figure 1 from `figure1_table` into <out>/figure1.png (a row per dataset: sample-wise sequential,
    client-wise); DU's (and client-wise PDUDT's) line runs from its after-correction point through its window's
    rounds, RT's restarts at each request; dashed lines at the requests. With no dataset run the figure says so."""
    import matplotlib.pyplot as plt

    datasets = sorted(curves.dataset.unique()) or ["none"]
    style.apply()
    fig, axes = plt.subplots(len(datasets), 2, figsize=(11, 3.6 * len(datasets)), squeeze=False)
    colors = {"original": "0.4", "DU": "C0", "RT": "C1", "PDUDT": "C2"}
    requests = {r["dataset"]: ([b["round"] for b in r["sample"]["requests"]], [r["client"]["round"]])
                for r in results}
    for row, dataset in zip(axes, datasets):
        for ax, panel, at in zip(row, ("sample-wise", "client-wise"), requests.get(dataset, ([], []))):
            part = curves[(curves.dataset == dataset) & (curves.panel == panel)]
            if part.empty:
                ax.text(0.5, 0.5, "not run (no dataset on disk)", ha="center", va="center")
                ax.set_axis_off()
                continue
            orig = part[part.method == "original"]
            ax.plot(orig["round"], orig.test_accuracy, color=colors["original"], label="original")
            labelled = set()
            for (method, request), g in part[part.method != "original"].groupby(["method", "request"], sort=True):
                if method.endswith("after correction"):
                    continue
                base = method.split(" ")[0]  # DU, PDUDT or RT
                xs, ys = list(g["round"]), list(g.test_accuracy)
                if base != "RT":  # the line starts at the method's after-correction point
                    start = part[(part.method == f"{method} after correction") & (part.request == request)]
                    xs, ys = list(start["round"]) + xs, list(start.test_accuracy) + ys
                style_kw = {"linestyle": ":"} if "literal" in method else {}
                ax.plot(xs, ys, color=colors[base], marker="." if len(xs) < 30 else None,
                        label=None if method in labelled else method, **style_kw)
                labelled.add(method)
            for base in ("DU", "PDUDT"):
                corr = part[part.method.str.endswith("after correction") & part.method.str.startswith(base + " ")]
                if not corr.empty:
                    ax.scatter(corr["round"], corr.test_accuracy, color=colors[base], marker="v", zorder=3,
                               label=f"{base} after correction")
            for x in at:
                ax.axvline(x, color="0.6", linestyle="--", linewidth=0.8)
            ax.set_title(f"{dataset}: {panel} (IID, Erdos-Renyi; Fig. 1)")
            ax.set_xlabel("round")
            ax.set_ylabel("test accuracy (%), averaged model")
            ax.legend(fontsize=7)
    style.save(fig, out / FIGURE1)
    return FIGURE1
