"""Paper against ours, for every paper: the reference CSVs, the status of a cell, and the counts of a report.

A cell's status is one of: `within` (our number is within the stated tolerance of the paper's), `outside`,
`missing: <reason>` (we could not compute it, and say why), `no paper value` (the paper prints none),
`uninformative: <why>` (the comparison cannot fail here, e.g. an attack without signal on the original) or
`not testable: <which precondition>`; other statuses (a reference row, a diagnostic, `not comparable: subset`: ours
on a subset of the paper's data set, beside the paper's value) are not counted. Headlines count the informative
cells (within / outside, holds / fails) and list the rest beside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..data.availability import MNIST_SUBSET_LABEL, column_label

REFERENCE = Path(__file__).resolve().parents[3] / "reference"
WITHIN, OUTSIDE, NO_PAPER = "within", "outside", "no paper value"
UNINFORMATIVE, NOT_TESTABLE = "uninformative", "not testable"
COUNTED = (WITHIN, OUTSIDE, "missing", NO_PAPER, UNINFORMATIVE, NOT_TESTABLE)


def read_reference(paper: str, table: str, **read_csv) -> pd.DataFrame:
    """reference/<paper>/<table>.csv: the paper's own numbers, one CSV per table."""
    return pd.read_csv(REFERENCE / paper / f"{table}.csv", **read_csv)


def within(ok: bool) -> str:
    return WITHIN if ok else OUTSIDE


def within_tolerance(ours: float, paper: float, tolerance: float) -> str:
    """`within` when |ours - paper| <= tolerance."""
    return within(abs(ours - paper) <= tolerance)


def within_spread(ours: float, paper: float, tolerance: float, spread: float | None, what: str) -> str:
    """`within_tolerance`, decided only where |ours - paper| lies farther from the tolerance than `spread` (the
    standard error of `ours` over its seeds, or one seed's spread borrowed from a multi-seed record of the same
    cell; `what` names it): inside that band the gap decides nothing ("uninformative", with the numbers). With no
    spread known (one seed, no multi-seed record) the verdict says it rests on one seed."""
    gap = abs(ours - paper)
    if spread is None:
        return (f"{within(gap <= tolerance)} (one seed: no seed spread known to weigh |ours - paper| = {gap:.3g} "
                "against)")
    if abs(gap - tolerance) <= spread:
        return (f"{UNINFORMATIVE}: |ours - paper| = {gap:.3g} lies within {spread:.3g} ({what}) of the tolerance "
                f"{tolerance:g}")
    return within(gap <= tolerance)


def missing_status(reason: str) -> str:
    return f"missing: {reason}"


def subset_status(label: str = MNIST_SUBSET_LABEL) -> str:
    """A cell computed on a subset of the paper's data set (`label`): the paper's value beside it, not compared."""
    return f"not comparable: subset ({label}); judged by the claims"


def on_subset(run: dict) -> bool:
    """Whether a result was computed on a subset standing in for its column's data set (its `data` key, written by
    the steps that can run on one: the dataset whose file served the column)."""
    return run.get("data", run.get("dataset")) != run.get("dataset")


def dataset_labels(runs: list[dict]) -> dict[str, str]:
    """Each column's name -> how tables and figures show it: a column served by the MNIST subset says so."""
    return {r["dataset"]: column_label(r["dataset"], r.get("data", r["dataset"])) for r in runs}


def subset_suffix(folder: Path, tables: Iterable[str]) -> str:
    """A front-page title's note when a written table of `folder` shows a column served by the MNIST subset."""
    names = (d for t in tables if "dataset" in (df := read_table(folder, t)) for d in df["dataset"])
    return f"; MNIST: {MNIST_SUBSET_LABEL}" if any(MNIST_SUBSET_LABEL in str(d) for d in names) else ""


def relabel(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """`df` with its dataset names (a `dataset` or `subject` column) shown by `labels`, in place."""
    for column in ("dataset", "subject"):
        if column in df:
            df[column] = df[column].replace(labels)
    return df


def kind(status: str) -> str | None:
    """The counted kind of a status (within, outside, missing, no paper value), or None."""
    if not isinstance(status, str):
        return None
    for name in COUNTED:
        if status == name or status.startswith(f"{name}:") or status.startswith(f"{name} ("):
            return name
    return NO_PAPER if status.startswith("stand-in: no paper value") else None


def count(statuses: Iterable[str]) -> dict[str, int]:
    """How many cells of each counted kind."""
    kinds = [kind(s) for s in statuses]
    return {name: kinds.count(name) for name in COUNTED}


def read_table(folder: Path, table: str) -> pd.DataFrame:
    """<folder>/<table>.csv as written (empty strings kept); an empty frame for a table with no rows."""
    try:
        return pd.read_csv(Path(folder) / f"{table}.csv", keep_default_na=False)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def statuses(folder: Path, tables: Iterable[str]) -> list[str]:
    """The `status` column of each <folder>/<table>.csv, concatenated (tables without one add nothing, and so do
    tables a recorded folder predates)."""
    return [s for table in tables if (Path(folder) / f"{table}.csv").is_file()
            for s in read_table(folder, table).get("status", [])]


def counted_rows(folder: Path, tables: Iterable[str]) -> dict[str, pd.DataFrame]:
    """The rows behind count_tables, per counted kind: the table, the row's first columns (what the cell is) and
    its status."""
    rows: dict[str, list[dict]] = {name: [] for name in COUNTED}
    for table in tables:
        if not (Path(folder) / f"{table}.csv").is_file():
            continue
        df = read_table(folder, table)
        keys = [c for c in df.columns if c != "status"][:4]
        for _, r in df.iterrows():
            if (name := kind(r.get("status"))) is not None:
                cell = ", ".join(f"{k} {r[k]}" for k in keys if str(r[k]) != "")
                rows[name].append({"table": table, "cell": cell, "status": r["status"]})
    return {name: pd.DataFrame(r, columns=["table", "cell", "status"]) for name, r in rows.items()}


def count_tables(folder: Path, tables: Iterable[str]) -> dict[str, int]:
    """The counts over the `status` column of each <folder>/<table>.csv."""
    return count(statuses(folder, tables))


def verdict(statuses: Iterable[str], good: tuple[str, ...] = (WITHIN, "holds"),
            bad: tuple[str, ...] = (OUTSIDE, "fails")) -> str:
    """Whether a headline claim holds over the informative cells that test it: yes / no (how many fail) / not
    computed, with the uninformative and not-testable cells listed beside it. A status counts as bad when it is
    one of `bad` or an outside cell with its reason ("outside (...)"), and good likewise."""
    statuses = [s for s in statuses if isinstance(s, str)]
    is_bad = [s in bad or kind(s) == OUTSIDE for s in statuses]
    tested = [s for s, b in zip(statuses, is_bad) if b or s in good or kind(s) == WITHIN]
    failed = sum(is_bad)
    rest = [f"{n} {name}" for name in (UNINFORMATIVE, NOT_TESTABLE)
            if (n := sum(kind(s) == name or s == name for s in statuses))]
    beside = f"; {', '.join(rest)}" if rest else ""
    if not tested:
        return "not computed" + beside
    return (f"yes ({len(tested)} of {len(tested)})" if not failed else f"no ({failed} of {len(tested)} fail)") + beside
