"""The spine experiment's table and figure: accuracy, forget accuracy, MIA AUC and cost per method.

`metrics.csv` holds only deterministic numbers (it is byte-identical across re-runs); wall time is
the one non-deterministic number and lives in `timing.csv`.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...config import experiment_config
from ...files import atomic_path, read_json
from ...report import style
from ...report.index import Summary
from ...report.page import Page
from ...resolved import check_inputs

METRIC_COLUMNS = {
    "test_accuracy": "test accuracy",
    "forget_accuracy": "forget accuracy",
    "retain_accuracy": "retain accuracy",
    "mia_loss_threshold_auc": "MIA AUC (loss threshold)",
    "grad_evals": "gradient evaluations",
    "bytes_read": "bytes read",
}


def tables(results: list[str], timings: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [read_json(p) for p in results]
    metrics = pd.DataFrame([{"method": r["method"], **{c: r[c] for c in METRIC_COLUMNS}} for r in rows])
    timing = pd.DataFrame([{"method": r["method"], "wall time (s)": read_json(t)["wall_time_s"]}
                           for r, t in zip(rows, timings)])
    return metrics.round(4), timing.round(2)


def figure(metrics: pd.DataFrame, path: Path) -> None:
    long = metrics.melt(id_vars="method", value_vars=["test_accuracy", "forget_accuracy", "mia_loss_threshold_auc"],
                        var_name="metric", value_name="value")
    long["metric"] = long["metric"].map(METRIC_COLUMNS)
    style.apply()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    sns.barplot(data=long, x="metric", y="value", hue="method", ax=ax)
    ax.set_ylim(0, 1)
    ax.set_xlabel("")
    ax.set_title("Spine: decentralized SGD on Fashion-MNIST, one forget request")
    style.save(fig, path)


def write_report(params: dict, results: list[str], timings: list[str], out_dir: str) -> None:
    out = Path(out_dir)
    cfg = experiment_config(params, "spine")
    header = check_inputs(params, results)  # before any file is written
    metrics, timing = tables(results, timings)
    table = metrics.merge(timing, on="method").rename(columns=METRIC_COLUMNS)
    for df, name in ((metrics.rename(columns=METRIC_COLUMNS), "metrics.csv"), (timing, "timing.csv")):
        with atomic_path(out / "spine" / name) as tmp:
            df.to_csv(tmp, index=False)
    figure(metrics, out / "spine" / "spine.png")
    setting = (f"{cfg['dataset']}, {cfg['model']}, {cfg['clients']} clients ({cfg['partition']['kind']}), "
               f"{cfg['topology']['kind']} topology, {cfg['train']['mixing']} mixing, {cfg['train']['rounds']} "
               f"rounds, forget request: {cfg['forget']['kind']}, scale {params['scale']}, seed {params['seed']}")
    page = Page("Spine experiment: every method on one forget request")
    page.text(header).text(f"Setting: {setting}.").table(table, "g")
    page.text("`original` is the trained model before unlearning. Accuracies are of the average model of the "
              "remaining clients. The MIA AUC is the loss-threshold attack's ROC AUC separating forgotten training "
              "samples from held-out test samples of the same classes (0.5 = indistinguishable). Gradient "
              "evaluations count per-sample gradients; bytes read come from checkpoints and histories. Wall time "
              "is the only number that changes between re-runs.")
    page.figure("spine.png", "spine").write(out / "spine")


def summary(out_dir: str | Path) -> Summary:
    """The front page's row: the project's own experiment, no paper to compare with."""
    return Summary("spine", "Spine (the shared decentralized run: every method, one forget request)",
                   "none: no paper; methods compared with exact retraining", "no paper")
