"""The common-ground report (issue 16): the centralized convex setting's table and audit; what is not built yet
is listed with why, never left out silently."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...files import atomic_path
from ...report.compare import count_tables, statuses, verdict
from ...report.index import Summary
from ...report.page import Page, select
from ...resolved import check_inputs

TABLES = ("centralized",)
LABELS = {"sglu": "SGLU", "lu": "LU", "d2d": "D2D"}
# Issue 16's methods not run yet, with why (every row of the issue is shown, run or not)
NOT_YET = {
    "centralized": {"R2D (rewind fractions)": "not built yet in this setting (issue 16 open)",
                    "HF": "not built yet in this setting (issue 16 open)",
                    "CNS": "not built yet in this setting (issue 16 open)"},
    "decentralized client removal": {"all": "setting not built yet (issue 16 open): retrain, fine-tune, PDUDT, "
                                            "PDUDT(ES), FedRecovery, FATS-Unl, HDUS-approx, DU client-wise, RR-DU"},
    "decentralized sample removal": {"all": "setting not built yet (issue 16 open): retrain, fine-tune, DU "
                                            "sample-wise, RR-DU"},
}


def centralized_table(result: dict, timing: dict) -> pd.DataFrame:
    """One row per method: its claimed (epsilon, delta) and sigma, test and canary accuracy of the unlearned and
    retrained runs, gradient evaluations, wall times, and the audit's lower bound with its interval."""
    rows = []
    seconds = timing.get("seconds", {})
    for key, m in result["methods"].items():
        a = m["audit"]
        holds = a["epsilon_lower"] <= m["claimed_epsilon"]
        control = key != m["method"]
        rows.append({
            "method": LABELS[m["method"]] + (f" (control: sigma x {result['control_noise']:g})" if control else ""),
            "claimed_epsilon": m["claimed_epsilon"], "delta": result["delta"],
            "sigma": m["sigma"], "test_acc_unlearned": m["test_accuracy"]["unlearned"]["mean"],
            "test_acc_unlearned_std": m["test_accuracy"]["unlearned"]["std"],
            "test_acc_retrained": m["test_accuracy"]["retrained"]["mean"],
            "canary_acc_unlearned": m["canary_accuracy"]["unlearned"],
            "canary_acc_retrained": m["canary_accuracy"]["retrained"],
            "grads_unlearning": m["gradient_evaluations"]["unlearning"],
            "grads_retraining": m["gradient_evaluations"]["retraining"],
            "unlearn_s": seconds.get(f"{key} unlearn", seconds.get(f"{m['method']} unlearn")),
            "retrain_s": seconds.get(f"{key} retrain", seconds.get(f"{m['method']} retrain")),
            "audit_epsilon_lower": a["epsilon_lower"], "audit_epsilon_point": a["epsilon_point"],
            "audit_epsilon_upper": a["epsilon_upper"], "audit_runs": a["runs_per_side"],
            "audit_fp": a["false_positives"], "audit_fn": a["false_negatives"],
            "status": ("holds" if holds else "fails") + f": audit lower bound {a['epsilon_lower']:.3g} vs claimed "
                      f"{m['claimed_epsilon']:g} ({100 * a['confidence']:g} % confidence)"})
    for method, why in NOT_YET["centralized"].items():
        rows.append({"method": method, "status": f"missing: {why}"})
    return pd.DataFrame(rows)


def write_report(params: dict, centralized: str | None, timing: str | None, missing: dict[str, str],
                 out_dir: str) -> None:
    """The report; `missing` holds {setting: reason} for a setting that could not run (its features absent)."""
    from .centralized import config

    if centralized is None and "centralized" not in missing:
        raise ValueError("common-report: give --centralized and --timing, or --missing centralized=<reason>")
    header = check_inputs(params, [centralized] if centralized else [])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if centralized:
        result = json.loads(Path(centralized).read_text())
        table = centralized_table(result, json.loads(Path(timing).read_text()))
    else:
        c, budget = config(params)["centralized"], config(params)["budget"]
        result = {"dataset": c["dataset"], "n": None, "d": None, "trials": c["trials"], **budget}
        table = pd.DataFrame([{"method": m, "status": f"missing: {missing['centralized']}"} for m in c["methods"]])
    timed = [c for c in ("unlearn_s", "retrain_s") if c in table]  # wall times vary: their own file
    with atomic_path(out / "centralized.csv") as tmp:
        table.drop(columns=timed).to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(out / "timing.csv") as tmp:
        table[["method", *timed]].to_csv(tmp, index=False, float_format="%.6g")
    page = Page(f"Common ground: every method on one task, with an audit of every certificate (scale "
                f"`{params['scale']}`)")
    page.text(header)
    page.text(
        "Each paper evaluates its method on its own data, model, budget and attack; here the methods share one "
        f"task and one budget (epsilon {result['epsilon']:g}, delta {result['delta']:g}, each method's noise from "
        "its own certificate), and an auditor checks each certificate: it sees the models of many independent "
        "runs of the method and of retraining, and from how well a threshold on the canary's loss tells them apart "
        "it computes a lower bound on the epsilon the runs need (Clopper-Pearson, threshold chosen on the first "
        "half of the runs, counted on the second). A lower bound above the claimed epsilon would be a finding: the "
        "certificate is wrong or its assumptions fail.")
    page.heading("Centralized removal, convex model")
    page.text(
        f"SGLU's task: L2-regularised logistic regression on {result['dataset']} binary features (the `sglu` "
        f"section's pair and constants), n = {result['n']}, d = {result['d']}. The forget set is one canary, the "
        "last training point with its label flipped; removing it replaces it by SGLU's random replacement point. "
        f"{result['trials']} runs a side per method. canary_acc: the share of runs whose model predicts the "
        "canary's flipped label (how often it was memorised). Gradient evaluations are per-sample gradients. Each "
        "method runs again at a small fraction of its certified sigma (a control, with the epsilon its own "
        "certificate gives that sigma): where the audit's bound is positive there, the audit could see the canary, "
        "so its 0 at the certified sigma is evidence and not blindness.")
    page.table(select(table, ["method", "claimed_epsilon", "sigma", "test_acc_unlearned", "test_acc_retrained",
                              "canary_acc_unlearned", "canary_acc_retrained", "grads_unlearning", "grads_retraining",
                              "unlearn_s", "retrain_s", "audit_epsilon_lower", "audit_epsilon_point",
                              "audit_epsilon_upper", "audit_runs", "status"]))
    if missing:
        page.heading("Missing").bullets([f"- {setting}: {reason}" for setting, reason in missing.items()])
    page.heading("Not built yet")
    page.bullets([f"- {setting}: {m}: {why}" for setting, methods in NOT_YET.items() for m, why in methods.items()])
    page.write(out)


def summary(out_dir: str | Path) -> Summary:
    """The front page's row: whether every audited certificate's claim is at least the audit's lower bound."""
    out = Path(out_dir)
    return Summary("common_ground", "Common ground (issue 16: all methods, one task, an audit of each certificate)",
                   "every certified method's claimed epsilon is at least the audit's lower bound",
                   verdict([s.split(":")[0] for s in statuses(out, TABLES)]), count_tables(out, TABLES))
