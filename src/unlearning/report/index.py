"""The front page: one summary row per paper, each linking the paper's full report, each count linking its list
of cells on the page `counted` beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .compare import COUNTED, counted_rows
from .page import Page

# the front page's names for the columns its sections show (the paper pages and CSV files keep the keys)
READABLE = {"method": "method", "test_accuracy": "test accuracy", "forget_accuracy": "forget accuracy",
            "memorisation_gap": "memorisation gap (forget - test)",
            "gradient_evaluations": "gradient evaluations", "claimed_epsilon": "claimed epsilon",
            "sigma": "noise sigma", "test_acc_unlearned": "test accuracy (unlearned)",
            "exact_epsilon": "exact epsilon of the pair", "audit_epsilon_corrected": "audit's bound (corrected)",
            "gdp_epsilon_corrected": "black-box GDP bound (corrected)",
            "white_box_epsilon_corrected": "white-box GDP bound (corrected)",
            "audit_runs": "audit runs a side", "control_epsilon": "control's epsilon",
            "seeds": "seeds", "test_accuracy_std": "(std)", "forget_accuracy_std": "(std)",
            "loss_threshold_auc": "loss-threshold AUC",
            "bytes_read": "bytes read", "communication_floats": "floats communicated",
            "unlearn_s": "unlearning (s)", "retrain_s": "retraining (s)", "audit": "audit",
            "test_acc_retrained": "test accuracy (retrained)", "canary_acc_unlearned": "canary accuracy (unlearned)",
            "canary_acc_retrained": "canary accuracy (retrained)", "grads_unlearning": "gradients (unlearning)",
            "grads_retraining": "gradients (retraining)", "noiseless_gap": "noiseless gap",
            "sensitivity": "certificate's sensitivity", "audit_epsilon_lower": "audit's bound",
            "audit_epsilon_point": "audit's point estimate", "threshold_epsilon_upper": "threshold's upper end",
            "power_as_run": "power as run (measured separation)", "power_as_run_low": "(95 % low)",
            "power_as_run_high": "(95 % high)", "power_2x": "power at 2x (best test)",
            "power_4x": "power at 4x (best test)", "runs_for_power_2x": "runs a side for 0.9 at 2x",
            "gdp_fit": "black-box fit", "white_box_fit": "white-box fit", "memorisation_gap_std": "(std)",
            "trained_by": "trained by", "gdp_mu": "black-box mu (measured)", "white_box_mu": "white-box mu (measured)",
            "mechanism_mu": "mechanism's mu", "level": "level (corrected)",
            "gdp_epsilon_lower": "f-DP (Gaussian) bound",
            "canaries": "canaries", "guesses": "guesses", "correct": "correct guesses",
            "epsilon_lower": "epsilon's lower bound", "refutable_epsilon": "refutable (2 epsilon)",
            "ceiling": "ceiling (all right)"}


def readable() -> dict[str, str]:
    """READABLE with each reference-model attack's columns ("LiRA AUC")."""
    from ..evaluate.attacks.protocol import REFERENCE_ATTACKS
    from ..evaluate.attacks.protocol import readable as attack_columns

    return {**READABLE, **{c: r for name in REFERENCE_ATTACKS for c, r in attack_columns(name).items()}}


@dataclass
class Summary:
    """A paper's row: its report folder (under the reports folder), its cell counts and its headline claim."""
    folder: str
    title: str
    headline: str
    holds: str                      # yes | no | not computed (with why) | no paper
    counts: dict[str, int] = field(default_factory=dict)
    section: list[tuple[str, object]] = field(default_factory=list)  # Page blocks shown on the front page itself
    tables: tuple[str, ...] = ()    # the tables (CSV names in the folder) whose status columns give the counts


def anchor(folder: str, name: str) -> str:
    """The id of a paper's list of one counted kind on the page `counted`."""
    return f"{folder}-{name.replace(' ', '-')}"


def counted_page(summaries: list[Summary], out_dir: str | Path) -> Page:
    """Per paper and counted kind, the cells behind the front page's count: table, cell and status."""
    page = Page("The counted cells of every paper, by kind")
    page.text("Every number of the front page's first table links its list here: the table of the paper's report "
              "the cell is in, the row's first columns, and its status (with the reason where it has one).")
    for s in summaries:
        for name, df in counted_rows(Path(out_dir) / s.folder, s.tables).items():
            if len(df):
                page.heading(f"{s.title}: {name} ({len(df)})", anchor(s.folder, name))
                page.table(df)
    return page


def write_index(summaries: list[Summary], scale: str, out_dir: str | Path, machine: str | None = None) -> None:
    def number(s: Summary, name: str):
        n = s.counts.get(name, "")
        return f"[{n}](counted.md#{anchor(s.folder, name)})" if n and s.tables else n

    rows = [{"paper": f"[{s.title}]({s.folder}/index.md)", **{k: number(s, k) for k in COUNTED},
             "headline claim": s.headline, "holds here": s.holds} for s in summaries]
    page = Page(f"Certified unlearning in decentralized learning: report (scale `{scale}`)")
    page.text("One row per paper: how many of its reported cells are within the paper's number (at the tolerance "
              "its report states), outside it, missing (the reason is in the paper's section), without a paper "
              "value, uninformative (the comparison cannot fail here: why is in the paper's section) or not testable "
              "(a precondition is unmet), and whether its headline claim holds here, counted on the informative "
              "cells and claims only. Each paper's full report follows the link; each number links its list.")
    if machine:
        page.text(machine)
    page.table(pd.DataFrame(rows))
    for s in summaries:
        if s.section:  # a comparison across papers: its summary, figure and tables on the front page
            page.heading(s.title)
            page.blocks += [(kind, (body[0].rename(columns=readable()), body[1]) if kind == "table" else body)
                            for kind, body in s.section]
    page.heading("Reports")
    page.bullets([f"- [{s.title}]({s.folder}/index.md)" for s in summaries] +
                 ["- [The counted cells of every paper, by kind](counted.md)"])
    counted_page(summaries, out_dir).write(out_dir, "counted")
    page.write(out_dir)
