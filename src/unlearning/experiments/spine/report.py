"""The spine experiment's table and figure: accuracy, forget accuracy, MIA AUC and cost per method.

`metrics.csv` holds only deterministic numbers (it is byte-identical across re-runs); wall time is
the one non-deterministic number and lives in `timing.csv`.
"""

from __future__ import annotations

import base64
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ...config import experiment_config  # noqa: E402
from ...files import atomic_path, read_json  # noqa: E402

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
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    sns.barplot(data=long, x="metric", y="value", hue="method", ax=ax)
    ax.set_ylim(0, 1)
    ax.set_xlabel("")
    ax.set_title("Spine: decentralized SGD on Fashion-MNIST, one forget request")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)


def write_report(params: dict, results: list[str], timings: list[str], out_dir: str) -> None:
    out = Path(out_dir)
    cfg = experiment_config(params, "spine")
    metrics, timing = tables(results, timings)
    table = metrics.merge(timing, on="method").rename(columns=METRIC_COLUMNS)
    for df, name in ((metrics.rename(columns=METRIC_COLUMNS), "metrics.csv"), (timing, "timing.csv")):
        with atomic_path(out / "spine" / name) as tmp:
            df.to_csv(tmp, index=False)
    fig_path = out / "figures" / "spine.png"
    figure(metrics, fig_path)
    setting = (f"{cfg['dataset']}, {cfg['model']}, {cfg['clients']} clients ({cfg['partition']['kind']}), "
               f"{cfg['topology']['kind']} topology, {cfg['train']['mixing']} mixing, {cfg['train']['rounds']} "
               f"rounds, forget request: {cfg['forget']['kind']}, scale {params['scale']}, seed {params['seed']}")
    md = "\n".join([
        "# Certified unlearning in decentralized learning: report", "",
        "## Spine experiment", "", f"Setting: {setting}.", "",
        table.to_markdown(index=False), "",
        "`original` is the trained model before unlearning. Accuracies are of the average model of the "
        "remaining clients. The MIA AUC is the loss-threshold attack's ROC AUC separating forgotten training "
        "samples from held-out test samples of the same classes (0.5 = indistinguishable). Gradient "
        "evaluations count per-sample gradients; bytes read come from checkpoints and histories. Wall time "
        "is the only number that changes between re-runs.", "",
        "![spine](figures/spine.png)", "",
    ])
    with atomic_path(out / "index.md") as tmp:
        tmp.write_text(md)
    image = base64.b64encode(fig_path.read_bytes()).decode()
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>Unlearning report</title></head><body>"
            f"<h1>Certified unlearning in decentralized learning: report</h1><h2>Spine experiment</h2>"
            f"<p>Setting: {setting}.</p>{table.to_html(index=False, border=0)}"
            f"<img alt='spine' src='data:image/png;base64,{image}'/></body></html>\n")
    with atomic_path(out / "index.html") as tmp:
        tmp.write_text(html)
