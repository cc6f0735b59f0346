"""SGLU's tables and figures beside the paper's numbers (reference/sglu/), with a status per cell.

- Table 3 (sigma per epsilon, b, dataset): within when our sigma truncated to 4 decimals equals the printed one.
- Figures 3b and 3d (accumulated epochs): exact counts; each published count is compared with the accounting
  variant that produced it (3b SGLU: code_c, 3d: code_b; D2D and LU: their theorems with spec 4.6's constants),
  and every variant is listed, the paper's own formulas (variant A) included.
- Figures 3a and 3c (accuracy): MNIST and CIFAR-10 need a network and show as missing with the reason; the
  Fashion-MNIST stand-in has no paper value, so its cells are judged by the paper's qualitative claims
  (claims.csv): SGLU b=128 above D2D at every epsilon, at or above LU at epsilon <= 0.1, accuracy rising with
  epsilon, unlearned within 0.01 of retrained (each gap weighed against its standard error over the trials, at a
  level shared over the points).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
from scipy import stats

from ...files import atomic_path
from ...report import claims as cl
from ...report import style
from ...report.compare import (
    NO_PAPER,
    NOT_TESTABLE,
    OUTSIDE,
    UNINFORMATIVE,
    WITHIN,
    count_tables,
    dataset_labels,
    kind,
    missing_status,
    on_subset,
    read_reference,
    statuses,
    subset_status,
    subset_suffix,
    verdict,
    within,
    within_spread,
)
from ...report.index import Summary
from ...report.page import Page, rewrite_section, select
from ...resolved import check_inputs

TABLES = ("table3", "fig3a", "fig3b", "fig3c", "fig3d", "claims")
PAPER_DATASETS = ("mnist", "cifar10")
VARIANT_LABEL = {"paper": "A (paper)", "code_b": "B (code_b)", "code_c": "C (code_c)"}
RETRAIN_GAP = 0.01  # unlearned vs retrained accuracy (issue 4's acceptance)
FMT = ".6g"  # numbers in the Markdown tables

CHOICES = [
    "- Accounting: variant A (the paper's Lemma 3.4 factor c^{2K'}) certifies every run; variants B (tight factor "
    "from request 2) and C (tight factor, Z_B with 1/(1-c), alpha from 1) are the authors' code and are listed so "
    "that Figures 3b/3d can be matched exactly. The noise of the analysis is eta sigma^2 although "
    "the algorithm adds 2 eta sigma^2: kept, as Table 3 only reproduces that way.",
    "- Table 3's sigma is Algorithm 4's bisection (Theorem 3.2, K = 1, Table 2's T, R = 100, alpha in [2, 1e5], "
    "tolerance 1e-8, the upper end). The printed values are truncations, slightly below the least sigma (the "
    "printed MNIST b=128 eps=1 value 0.0041 needs K = 2): runs use the computed sigma.",
    "- Projection: on with R = 100 for Figure 3a (the theory's setting); Figure 3c runs it on and off (the "
    "published runs had it off). Projection only rescales w.",
    "- Removals: request s replaces index n-s (the last indices, class -1 first) by a unit-norm N(0, I) point "
    "with a uniform label, drawn once per experiment and kept. Indices are fixed before the "
    "partitions are drawn, so requests are non-adaptive.",
    "- Trials: rows of one weight matrix; every trial has its own batch partition, initialisation and noise "
    "(`partitions: null`); the sigmas of one figure share the trial's partition. Init N(0, 2 sigma^2/m I) for "
    "SGLU and LU, N(0, I) for the noiseless D2D. D2D's learning is noiseless and contracts its start by "
    "gamma^T, so it runs once and the trials differ in the published noise only.",
    "- Baselines: D2D (Theorem L.1, internal state, I = 1 and 5 steps) and LU (Theorems M.1 + M.2, K = 1) with "
    "`baselines.constants: data` = L from the data's largest eigenvalue, as the published runs; MNIST "
    "and CIFAR-10's accounting uses the constants the authors published. Both clip as SGLU (eq. 72).",
    "- The Fashion-MNIST stand-in (sglu.pairs.fashion_mnist): the default, Dress (3, +1) vs Coat (4, -1), is the "
    "pair whose noiseless accuracy under the paper's model (0.907 at n = 11776 = 23 x 512) is closest to MNIST "
    "3-vs-8's 0.91 among all 45 pairs (`data.binary.rank_pairs`).",
]


def _load(paths: list[str]) -> list[dict]:
    return [json.loads(Path(p).read_text()) for p in paths]


def _reference(name: str) -> pd.DataFrame:
    return read_reference("sglu", name, dtype={"b": str}, keep_default_na=False)


def _trunc4(x: float) -> float:
    return math.floor(x * 1e4) / 1e4


def _missing_status(dataset: str, missing: dict[str, str]) -> str:
    return missing_status(missing[dataset]) if dataset in missing else f"stand-in: {NO_PAPER} (see claims)"


def _count_status(total: int, paper: pd.DataFrame, variant: str) -> dict:
    """Paper total and status of an accumulated-epoch count: exact equality, judged only against the variant
    that produced the published number (an empty variant: a baseline's own theorem)."""
    if paper.empty:
        return {"paper_total": None, "status": NO_PAPER}
    expected, produced_by = int(paper.total.iloc[0]), paper.variant.iloc[0]
    if produced_by and produced_by != variant:
        return {"paper_total": expected, "status": f"published with {VARIANT_LABEL[produced_by]}"}
    return {"paper_total": expected, "status": within(total == expected)}


def _shown(df: pd.DataFrame, value: str, columns: list[str]) -> pd.DataFrame:
    """The page's rows of a figure table: the cells we computed (`value` set) and those listed as not run, in the
    listed columns that hold anything (the paper's only beside a subset's cells)."""
    if df.empty:
        return df
    ours = df[value].notna() if value in df else False
    listed = df["status"].astype(str).str.contains(": not run: ", regex=False)
    return select(df[ours | listed], columns).dropna(axis=1, how="all")


def _trained_cells(f3c: pd.DataFrame) -> pd.DataFrame:
    """Figure 3c's rows that we computed (not the missing datasets' paper rows)."""
    return f3c[f3c["unlearned_mean"].notna()] if "unlearned_mean" in f3c else f3c.iloc[:0]


def table3(accounts: list[dict]) -> pd.DataFrame:
    ref = _reference("table3")
    rows = []
    for a in accounts:
        for r in a["table3"]:
            paper = ref[(ref.dataset == a["dataset"]) & (ref.b == str(r["b"])) & (ref.epsilon == r["epsilon"])]
            row = {"dataset": a["dataset"], "n": a["n"], "b": str(r["b"]), "epsilon": r["epsilon"], "T": r["T"],
                   "sigma": round(r["sigma"], 8), "sigma_truncated": _trunc4(r["sigma"])}
            if paper.empty:
                row |= {"paper_sigma": None, "status": f"{NO_PAPER} (stand-in)"}
            else:
                p = float(paper.sigma.iloc[0])
                row |= {"paper_sigma": p, "status": within(abs(_trunc4(r["sigma"]) - p) < 1e-9)}
            rows.append(row)
    return pd.DataFrame(rows)


def fig3b(accounts: list[dict]) -> pd.DataFrame:
    ref = _reference("fig3b")
    rows = []
    for a in accounts:
        d2d = sum(a["fig3b"]["d2d"])
        entries = [("d2d", "", a["fig3b"]["d2d"])]
        entries += [(f"lu S={S}", "", ks) for S, ks in a["fig3b"]["lu"].items()]
        entries += [(f"sglu b={b}", v, ks) for v, per_b in a["fig3b"]["sglu"].items() for b, ks in per_b.items()]
        for method, variant, ks in entries:
            paper = ref[(ref.dataset == a["dataset"]) & (ref.method == method)]
            rows.append({"dataset": a["dataset"], "method": method, "variant": VARIANT_LABEL.get(variant, "theorem"),
                         "total": sum(ks), "first_K": " ".join(map(str, ks[:6])), "last_K": ks[-1],
                         "ratio_to_d2d_pct": round(100 * sum(ks) / d2d, 2), **_count_status(sum(ks), paper, variant)})
    return pd.DataFrame(rows)


def fig3d(accounts: list[dict]) -> pd.DataFrame:
    ref = _reference("fig3d")
    rows = []
    for a in accounts:
        for variant, per_b in a["fig3d"].items():
            for b, per_sigma in per_b.items():
                for sigma, ks in per_sigma.items():
                    paper = ref[(ref.dataset == a["dataset"]) & (ref.b == b) & (ref.sigma == float(sigma))]
                    rows.append({"dataset": a["dataset"], "b": b, "sigma": float(sigma),
                                 "variant": VARIANT_LABEL[variant], "total": sum(ks),
                                 "first_K": " ".join(map(str, ks[:4])), **_count_status(sum(ks), paper, variant)})
    return pd.DataFrame(rows)


def _label(r: dict) -> str:
    if r["method"] == "sglu":
        return f"{'sglu' if r['model'] == 'unlearned' else 'retrain'} b={r['b']}"
    return "lu K=1" if r["method"] == "lu" else f"d2d {r['model']}"


def _paper_value(ref: pd.DataFrame, **match) -> pd.Series | None:
    """The paper's row of `ref` matching every `match` column, or None."""
    hit = ref
    for column, value in match.items():
        hit = hit[hit[column] == value]
    return None if hit.empty else hit.iloc[0]


def _number(value) -> float | None:
    return None if value is None or value == "" or pd.isna(value) else float(value)


def _fig3a_paper(ref: pd.DataFrame, run: dict, method: str, epsilon: float) -> dict:
    """The paper's mean and std beside a cell computed on a subset (elsewhere the paper has none for it)."""
    p = _paper_value(ref, dataset=run["dataset"], method=method, epsilon=epsilon) if on_subset(run) else None
    return {"paper_mean": None if p is None else _number(p["mean"]),
            "paper_std": None if p is None else _number(p["std"])}


def _fig3c_paper(ref: pd.DataFrame, run: dict, b, sigma: float) -> dict:
    p = _paper_value(ref, dataset=run["dataset"], b=str(b), sigma=sigma) if on_subset(run) else None
    return {} if p is None else {"paper_unlearned_mean": _number(p.unlearned_mean),
                                 "paper_unlearned_std": _number(p.unlearned_std),
                                 "paper_retrained_mean": _number(p.retrained_mean)}


def fig3a(runs: list[dict], missing: dict[str, str]) -> pd.DataFrame:
    """Figure 3a's cells: ours (on a subset: the paper's value beside, not compared), the cells the subset's
    accounting cannot certify (not run: why), and the paper's cells of the datasets not on disk."""
    ref = _reference("fig3a")
    labels = dataset_labels(runs)
    rows = []
    for run in runs:
        subset, name = on_subset(run), run["dataset"]
        for r in run["rows"]:
            rows.append({"dataset": labels[name], "method": _label(r), "epsilon": r["epsilon"], "sigma": r["sigma"],
                         "mean": r["mean"], "std": r["std"], "trials": r["trials"], "chance": run.get("chance"),
                         **_fig3a_paper(ref, run, _label(r), r["epsilon"]),
                         "status": subset_status() if subset else _missing_status(name, missing)})
        for u in run.get("untestable", []):
            for method in (f"sglu b={u['b']}", f"retrain b={u['b']}"):
                rows.append({"dataset": labels[name], "method": method, "epsilon": u["epsilon"], "sigma": None,
                             "mean": None, "std": None, "trials": None,
                             **_fig3a_paper(ref, run, method, u["epsilon"]),
                             "status": f"{NOT_TESTABLE}: not run: {u['reason']}"})
    for dataset in missing:
        for _, p in ref[ref.dataset == dataset].iterrows():
            rows.append({"dataset": dataset, "method": p.method, "epsilon": p.epsilon, "sigma": None, "mean": None,
                         "std": None, "trials": None, "paper_mean": p["mean"],
                         "paper_std": float(p["std"]) if p["std"] != "" else None,
                         "status": missing_status(missing[dataset]) + (f" ({p.note})" if p.note else "")})
    return pd.DataFrame(rows)


def fig3c(runs: list[dict], missing: dict[str, str]) -> pd.DataFrame:
    """Figure 3c's cells, as fig3a's: a sigma whose every removal costs a retraining is listed, not run."""
    ref = _reference("fig3c")
    labels = dataset_labels(runs)
    rows = []
    for run in runs:
        subset, name = on_subset(run), run["dataset"]
        for r in run["rows"]:
            rows.append({"dataset": labels[name], "b": str(r["b"]), "sigma": r["sigma"],
                         "projection": r["projection"], "epochs": r["epochs"], "unlearned_mean": r["unlearned"]["mean"],
                         "unlearned_std": r["unlearned"]["std"], "retrained_mean": r["retrained"]["mean"],
                         "retrained_std": r["retrained"]["std"], "trials": r["unlearned"]["trials"],
                         "gap": r["unlearned"]["mean"] - r["retrained"]["mean"],
                         **_fig3c_paper(ref, run, r["b"], r["sigma"]),
                         "status": subset_status() if subset else _missing_status(name, missing)})
        for u in run.get("untestable", []):
            rows.append({"dataset": labels[name], "b": str(u["b"]), "sigma": u["sigma"], "epochs": u["epochs"],
                         **_fig3c_paper(ref, run, u["b"], u["sigma"]),
                         "status": f"{UNINFORMATIVE}: not run: {u['reason']}"})
    for dataset in missing:
        for _, p in ref[ref.dataset == dataset].iterrows():
            rows.append({"dataset": dataset, "b": p.b, "sigma": p.sigma, "paper_unlearned_mean": p.unlearned_mean,
                         "paper_unlearned_std": p.unlearned_std, "paper_retrained_mean": p.retrained_mean,
                         "status": missing_status(missing[dataset])})
    return pd.DataFrame(rows)


def _se(curve: pd.DataFrame) -> pd.Series:
    """The standard error of each point's mean over its trials."""
    return curve["std"] / curve["trials"].clip(lower=1) ** 0.5


def _compare(a: pd.DataFrame, b: pd.DataFrame, index) -> tuple[pd.Series, pd.Series]:
    """a's mean minus b's at each epsilon of `index`, and twice the difference's standard error (the margin a
    comparison must exceed: the trials' spread)."""
    diff = (a["mean"] - b["mean"]).loc[index]
    return diff, 2 * (_se(a) ** 2 + _se(b) ** 2).loc[index] ** 0.5


def _close(gap: pd.Series, se: pd.Series, where: list[str], alpha: float = 0.05) -> tuple[bool | None, str,
                                                                                          str | None]:
    """Unlearned within RETRAIN_GAP of retrained at every point, each |gap| weighed against z standard errors of the
    difference over the trials (`compare.within_spread`), z the one-sided `alpha` level shared over the points
    (Bonferroni: 2.39 for 6 points, 3.02 for 40; one point of 40 past 0.01 by 1.3 standard errors is what chance
    gives): False where some point is outside beyond it, True where every point is within beyond it, None
    otherwise. Returns it, the counts in words, and why it decides nothing (None where it decides)."""
    z = float(stats.norm.isf(alpha / len(gap)))
    kinds = [kind(within_spread(abs(g), 0.0, RETRAIN_GAP, z * s, "")) for g, s in zip(gap, se)]
    undecided = [w for w, k in zip(where, kinds) if k == UNINFORMATIVE]
    test = False if OUTSIDE in kinds else None if undecided else True
    text = (f"{kinds.count(WITHIN)} within, {kinds.count(OUTSIDE)} outside, {len(undecided)} undecided (within "
            f"{z:.2f} standard errors of {RETRAIN_GAP})")
    named = ", ".join(undecided[:3]) + (f" and {len(undecided) - 3} more" if len(undecided) > 3 else "")
    why = None if test is not None else (f"the gap at {named} lies within {z:.2f} standard errors "
                                         f"of {RETRAIN_GAP} ({alpha:g} over the {len(gap)} points): it decides "
                                         "nothing")
    return test, text, why


def _off_chance(curve: pd.DataFrame) -> pd.Series | None:
    """Which points of a curve are above the test set's majority share by a one-sided t-test at 97.5 % over the
    trials (a model at chance, as under a noise scale of thousands, can neither rise, fall nor beat another); None
    where the result predates the recorded chance level or one trial gives no test."""
    chance = curve["chance"].iloc[0] if "chance" in curve else None
    if chance is None or pd.isna(chance) or curve["trials"].min() < 2:
        return None
    dof = curve["trials"] - 1
    se = curve["std"] / dof**0.5  # the population std of the trials -> the sample standard error
    return curve["mean"] - stats.t.ppf(0.975, dof) * se > float(chance)


def _leaves_chance(curve: pd.DataFrame, name: str) -> list[cl.Check]:
    """The precondition of a claim on a curve: some point off chance (`_off_chance`)."""
    off = _off_chance(curve)
    if off is None:
        return []
    return [cl.Check(bool(off.any()), f"{name}: {int(off.sum())} of {len(off)} points above chance "
                                      f"({float(curve['chance'].iloc[0]):.3g}, t-test at 97.5 % over the trials)")]


def _not_run(df: pd.DataFrame, prefix: str) -> dict[str, str]:
    """The cells of `df` listed as not run (status `<prefix>: not run: why`): method (or b) -> the first reason."""
    if df.empty or "status" not in df:
        return {}
    listed = df[df["status"].astype(str).str.startswith(f"{prefix}: not run: ")]
    key = "method" if "method" in listed else "b"
    return {str(k): str(g["status"].iloc[0]).split(": not run: ", 1)[1] for k, g in listed.groupby(key)}


def claims(f3a: pd.DataFrame, f3c: pd.DataFrame) -> pd.DataFrame:
    """The paper's qualitative claims on every trained dataset (spec 6, Figure 3a text; issue 4's acceptance), on
    the shared claim helper: a comparison between methods counts only beyond twice the standard error of the
    difference over the trials (within it at some epsilon: uninformative there); "accuracy rises with epsilon" is
    uninformative where the curve starts at its own plateau (it cannot rise) and fails on a drop beyond twice the
    standard error; "unlearned within 0.01 of retrained" decides only where each gap lies farther from 0.01 than
    its standard errors over the trials at a level shared over the points (`_close`). A claim on SGLU cells that
    no sigma certifies (not run) is not testable, with why; Figure 3c's claim is uninformative where every sigma's
    removals each cost a retraining (not run)."""
    rows = []
    trained = f3a[f3a["mean"].notna() | f3a["status"].astype(str).str.startswith(f"{NOT_TESTABLE}: not run")]
    for dataset, df in trained.groupby("dataset"):
        curve = {m: g.set_index("epsilon").sort_index() for m, g in df[df["mean"].notna()].groupby("method")}
        not_run = _not_run(df, NOT_TESTABLE)

        def add(claim: str, measured: str, verdict: tuple[str, str], margin: float | None = None,
                dataset: str = dataset) -> None:
            rows.append(cl.row(dataset, claim, measured, verdict, "Figure 3a", margin))

        def untested(name: str, not_run: dict[str, str] = not_run) -> tuple[str, str]:
            return cl.judge(None, [cl.Check(False, f"{name} not run: {not_run[name]}")])

        sglu = curve.get("sglu b=128")
        for name in [m for m in curve if m.startswith("d2d")]:
            claim = f"SGLU b=128 above {name} at every epsilon (by more than twice the trials' standard error)"
            if sglu is None:
                if "sglu b=128" in not_run:
                    add(claim, "", untested("sglu b=128"))
                continue
            diff, noise = _compare(sglu, curve[name], sglu.index.intersection(curve[name].index))
            within = [f"{e:g}" for e in diff.index if abs(diff[e]) <= noise[e]]
            test = False if (diff < -noise).any() else True if not within else None
            add(claim, ", ".join(f"eps {e:g}: {d:+.4f} (2 se {n:.4f})" for e, d, n in zip(diff.index, diff, noise)),
                cl.judge(test, _leaves_chance(sglu, "sglu b=128"), cannot_fail=None if test is not None else
                         f"within twice the standard error at epsilon {', '.join(within)}"),
                float((diff - noise).min()))
        claim = ("SGLU b=128 at or above LU at epsilon <= 0.1, and above it somewhere (beyond twice the trials' "
                 "standard error)")
        if sglu is None and "lu K=1" in curve and "sglu b=128" in not_run:
            add(claim, "", untested("sglu b=128"))
        if sglu is not None and "lu K=1" in curve:
            index = [e for e in sglu.index.intersection(curve["lu K=1"].index) if e <= 0.1]
            if index:
                diff, noise = _compare(sglu, curve["lu K=1"], index)
                test = False if (diff < -noise).any() else True if (diff > noise).any() else None
                add(claim, ", ".join(f"eps {e:g}: {d:+.4f} (2 se {n:.4f})" for e, d, n in zip(diff.index, diff, noise)),
                    cl.judge(test, _leaves_chance(sglu, "sglu b=128"), cannot_fail=None if test is not None else
                             "equal within twice the standard error at every epsilon"), float((diff + noise).min()))
        for name in ("sglu b=128", "sglu b=full", "lu K=1", "d2d I=1", "d2d I=5"):
            claim = f"{name}: accuracy rises with epsilon (no drop beyond twice the standard error)"
            if name not in curve:
                if name in not_run:
                    add(claim, "", untested(name))
                continue
            c = curve[name]
            se = _se(c)
            drops = c["mean"].diff() + 2 * (se**2 + se.shift() ** 2) ** 0.5
            off = _off_chance(c)
            drops = drops[off.shift(fill_value=False)] if off is not None else drops.dropna()  # from a point off chance
            plateau = c["mean"].max()
            flat = c["mean"].iloc[0] >= plateau - 2 * se.iloc[0]
            test = False if (drops < 0).any() else True
            few = off is not None and 1 <= int(off.sum()) < 2  # a trend needs two points that can move
            add(claim, " -> ".join(f"{v:.3f}" for v in c["mean"]),
                cl.judge(test, _leaves_chance(c, name), cannot_fail=(
                    f"only {int(off.sum())} of {len(off)} points leaves chance: no trend to judge" if few and test
                    else f"the curve starts at its plateau ({c['mean'].iloc[0]:.3f} against {plateau:.3f}): it "
                         "cannot rise" if flat and test else None)),
                float(drops.min()) if len(drops) else None)
        for b in ("128", "full"):
            claim = f"Figure 3a b={b}: unlearned within {RETRAIN_GAP} of retrained at every epsilon"
            if f"sglu b={b}" in curve and f"retrain b={b}" in curve:
                un, re = curve[f"sglu b={b}"], curve[f"retrain b={b}"]
                gap = (un["mean"] - re["mean"]).abs()
                se = (_se(un) ** 2 + _se(re) ** 2) ** 0.5
                test, counts, why = _close(gap, se, [f"eps {e:g}" for e in gap.index])
                add(claim, f"largest gap {gap.max():.4f} at eps {gap.idxmax():g} (standard error "
                           f"{se[gap.idxmax()]:.4f}); {counts}",
                    cl.judge(test, _leaves_chance(un, f"sglu b={b}"), why), RETRAIN_GAP - float(gap.max()))
            elif f"sglu b={b}" in not_run:
                add(claim, "", untested(f"sglu b={b}"))
    if not f3c.empty and "status" in f3c:
        for dataset, df in f3c[f3c["status"].notna()].groupby("dataset"):
            ran = df[df["gap"].notna()] if "gap" in df else df.iloc[:0]
            skipped = _not_run(df, UNINFORMATIVE)
            claim = f"Figure 3c: unlearned within {RETRAIN_GAP} of retrained in every cell"
            note = "; not run (each removal costs a retraining): b = " + ", ".join(skipped) if skipped else ""
            if ran.empty:
                if skipped:
                    rows.append(cl.row(dataset, claim, note.lstrip("; "),
                                       cl.judge(None, cannot_fail=next(iter(skipped.values()))), "Figure 3c"))
                continue
            gap = ran["gap"].abs()
            worst = ran.loc[gap.idxmax()]
            trials = ran["trials"].clip(lower=1)
            se = ((ran["unlearned_std"] ** 2 + ran["retrained_std"] ** 2) / trials) ** 0.5  # as _se, per side
            test, counts, why = _close(gap, se, [f"b={r.b} sigma {r.sigma:g} projection {r.projection}"
                                                 for r in ran.itertuples()])
            rows.append(cl.row(dataset, claim,
                               f"largest gap {gap.max():.4f} (b={worst.b}, sigma {worst.sigma:g}, projection "
                               f"{worst.projection}; standard error {se[gap.idxmax()]:.4f}); of {len(gap)} "
                               f"cells {counts}" + note, cl.judge(test, cannot_fail=why), "Figure 3c",
                               RETRAIN_GAP - float(gap.max())))
    return pd.DataFrame(rows, columns=cl.COLUMNS).rename(columns={"subject": "dataset"})[CLAIM_COLUMNS]


CLAIM_COLUMNS = ["dataset", *cl.COLUMNS[1:]]


def _plots(f3a: pd.DataFrame, accounts: list[dict], f3c: pd.DataFrame, f3d: pd.DataFrame, out: Path) -> None:
    import matplotlib.pyplot as plt
    import seaborn as sns

    style.apply()
    trained = f3a[f3a["mean"].notna()]
    datasets = sorted(trained.dataset.unique()) or ["(none)"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for method, g in trained[trained.dataset == dataset].groupby("method"):
            ax.errorbar(g.epsilon, g["mean"], yerr=g["std"], marker="o", capsize=3, label=method)
        ax.set(xscale="log", xlabel="epsilon", ylabel="test accuracy", title=f"Figure 3a: {dataset}")
        ax.legend(fontsize=8)
    style.save(fig, out / "fig3a.png")

    fig, axes = plt.subplots(1, len(accounts), figsize=(5 * len(accounts), 4), squeeze=False)
    for ax, a in zip(axes[0], accounts):
        lines = {"D2D": a["fig3b"]["d2d"], "LU S=10": a["fig3b"]["lu"].get("10")}
        for v in ("paper", "code_c"):
            for b in ("full", "128"):
                lines[f"SGLU b={b} ({v})"] = a["fig3b"]["sglu"][v].get(b)
        for name, ks in lines.items():
            if ks:
                per = max(1, a["fig3b"]["requests"] // len(ks))
                xs = [per * (i + 1) for i in range(len(ks))]
                ys = pd.Series(ks).cumsum()
                ax.plot(xs, ys, marker="o" if per > 1 else None, markersize=3, label=name)
        ax.set(xlabel="removed points", ylabel="accumulated epochs", yscale="log", title=f"Figure 3b: {a['dataset']}")
        ax.legend(fontsize=7)
    style.save(fig, out / "fig3b.png")

    runs = _trained_cells(f3c)
    datasets = sorted(runs.dataset.unique()) or ["(none)"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for (b, proj), g in runs[runs.dataset == dataset].groupby(["b", "projection"]):
            ax.errorbar(g.sigma, g.unlearned_mean, yerr=g.unlearned_std, marker="o", capsize=3,
                        label=f"b={b} proj={'on' if proj else 'off'}")
            ax.plot(g.sigma, g.retrained_mean, linestyle="--", color=ax.lines[-1].get_color())
        ax.set(xscale="log", xlabel="sigma", ylabel="test accuracy", title=f"Figure 3c: {dataset} (dashed: retrain)")
        ax.legend(fontsize=7)
    style.save(fig, out / "fig3c.png")

    chosen = f3d[f3d.variant == VARIANT_LABEL["code_b"]]
    fig, axes = plt.subplots(1, len(accounts), figsize=(5 * len(accounts), 4), squeeze=False)
    for ax, a in zip(axes[0], accounts):
        sns.barplot(chosen[chosen.dataset == a["dataset"]], x="sigma", y="total", hue="b", ax=ax)
        ax.set(yscale="log", ylabel="accumulated epochs", title=f"Figure 3d: {a['dataset']} (variant B)")
    style.save(fig, out / "fig3d.png")


def _timing_lines(timings: list[dict], runs: list[dict]) -> list[str]:
    lines = []
    for t, run in zip(timings, runs):
        s = t["seconds"]
        figure = "Figure 3c" if "requests" in run else "Figure 3a"
        lines.append(f"- {run['dataset']} ({figure}, {t['rows']} rows in one matrix, {t['threads']} threads): "
                     + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(s.items())))
    return lines


CLAIMS_HEADING = "The paper's claims on the data we have"


def _claims_page(verdicts: pd.DataFrame) -> Page:
    return Page("").heading(CLAIMS_HEADING).table(select(verdicts, ["dataset", "claim", "measured", "status",
                                                                     "reason"]), FMT)


def rejudge(folder: str | Path) -> pd.DataFrame:
    """The claims judged again from a written report's fig3a.csv and fig3c.csv, for a record whose raw results
    predate the configuration stamp that `write_report` checks: claims.csv and the claims section of index.md and
    index.html rewritten, every other file untouched. Returns the verdicts."""
    out = Path(folder)
    tables = [out / f"{t}.csv" for t in ("fig3a", "fig3c")]
    for path in tables:
        if not path.is_file():
            raise ValueError(f"{path}: not found; sglu-claims reads a written SGLU report's fig3a.csv and fig3c.csv")
    verdicts = claims(*(pd.read_csv(path) for path in tables))
    with atomic_path(out / "claims.csv") as tmp:
        verdicts.to_csv(tmp, index=False, float_format="%.6g")
    rewrite_section(out, _claims_page(verdicts))
    return verdicts


def write_report(params: dict, accounting: list[str], fig3a_files: list[str], fig3c_files: list[str],
                 timings: list[str], missing: dict[str, str], out_dir: str) -> None:
    from ...config import section_config

    cfg = section_config(params, "sglu")
    header = check_inputs(params, [*accounting, *fig3a_files, *fig3c_files])  # before any file is written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    accounts = _load(accounting)
    runs_a, runs_c = _load(fig3a_files), _load(fig3c_files)
    t3, f3b, f3d = table3(accounts), fig3b(accounts), fig3d(accounts)
    f3a, f3c = fig3a(runs_a, missing), fig3c(runs_c, missing)
    verdicts = claims(f3a, f3c)
    for name, df in (("table3", t3), ("fig3a", f3a), ("fig3b", f3b), ("fig3c", f3c), ("fig3d", f3d),
                     ("claims", verdicts)):
        with atomic_path(out / f"{name}.csv") as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
    _plots(f3a, accounts, f3c, f3d, out)
    variant = VARIANT_LABEL[cfg["accounting"]]
    timing_files = _load(timings)
    accounts_n = {a["dataset"]: a["n"] for a in accounts}
    page = Page(f"SGLU (Chien et al., 2024): scale `{params['scale']}`")
    page.text(header)
    page.text(
        f"Binary L2-regularised logistic regression (lambda = {cfg['lam_per_n']:g} n, M = {cfg['clip']:g}, "
        f"R = {cfg['radius']:g}), eta = 1/L, delta = 1/n; {cfg['trials']} trials per cell; runs certified with "
        f"variant {variant}. Table 3 and Figures 3b/3d are accounting only and run in full for every dataset "
        "(MNIST and CIFAR-10 from the paper's n); Figures 3a/3c train on the datasets on disk.")
    page.heading("Table 3: sigma for K = 1 epoch (Theorem 3.2, Table 2's burn-in)")
    page.table(select(t3, ["dataset", "b", "epsilon", "sigma", "sigma_truncated", "paper_sigma", "status"]), FMT)
    page.heading("Figure 3a: accuracy after one removal against epsilon").figure("fig3a.png", "figure 3a")
    page.table(_shown(f3a, "mean", ["dataset", "method", "epsilon", "sigma", "mean", "std", "trials", "paper_mean",
                                    "paper_std", "status"]), FMT)
    page.heading("Figure 3b: accumulated epochs, 100 sequential removals (epsilon = 1, sigma = 0.03)")
    page.figure("fig3b.png", "figure 3b")
    page.table(select(f3b, ["dataset", "method", "variant", "total", "first_K", "last_K", "ratio_to_d2d_pct",
                            "paper_total", "status"]), FMT)
    page.heading("Figure 3c: accuracy after 100 removals against sigma (epsilon = 0.01)").figure("fig3c.png",
                                                                                                "figure 3c")
    page.table(_shown(f3c, "unlearned_mean", ["dataset", "b", "sigma", "projection", "epochs", "unlearned_mean",
                                              "unlearned_std", "retrained_mean", "retrained_std", "gap", "trials",
                                              "paper_unlearned_mean", "paper_retrained_mean", "status"]), FMT)
    page.heading("Figure 3d: accumulated epochs for 100 requests (epsilon = 0.01)").figure("fig3d.png", "figure 3d")
    page.table(select(f3d, ["dataset", "b", "sigma", "variant", "total", "first_K", "paper_total", "status"]), FMT)
    page.blocks += _claims_page(verdicts).blocks
    page.heading("Wall time (vectorised trials)").bullets(_timing_lines(timing_files, [*runs_a, *runs_c]))
    page.heading("Choices where the paper is silent or inconsistent").bullets(CHOICES)
    subset = [r for r in runs_a if on_subset(r)]
    if subset:
        page.heading("Columns trained on a subset of the paper's data").bullets([
            f"- {r['dataset']}: {dataset_labels([r])[r['dataset']]}, n = {r['n']} after truncation to a multiple "
            f"of {cfg['truncate_to']} (the paper's n: {accounts_n.get(r['dataset'], '?')}). Table 3 and Figures 3b/3d "
            "keep the paper's n; the runs take their sigmas and K from the accounting at this n (lambda = "
            f"{cfg['lam_per_n']:g} n). Their cells show the paper's values beside them, not compared; the claims "
            "judge them. A cell that no sigma certifies, or whose every removal costs a retraining, is listed as "
            "not run, with its numbers." for r in subset])
    if missing:
        page.heading("Datasets not trained here (accounting only; their accuracy cells show as missing)")
        page.bullets([f"- {d}: {reason}" for d, reason in missing.items()])
    page.write(out)


def summary(out_dir: str | Path) -> Summary:
    """The front page's row: Table 3's sigmas and the paper's claims on the data we have, from the written tables."""
    out = Path(out_dir)
    return Summary("sglu", "SGLU (Chien et al., 2024)" + subset_suffix(out, ("fig3a", "fig3c")),
                   "the certified sigma of Table 3 matches the paper's, and the paper's accuracy claims (Figures "
                   "3a/3c) hold on the data we have", verdict(statuses(out, ("table3", "claims"))),
                   count_tables(out, TABLES), tables=TABLES)
