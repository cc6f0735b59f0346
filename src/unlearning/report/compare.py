"""Paper against ours, for every paper: the reference CSVs, the status of a cell, and the counts of a report.

A cell's status is one of: `within` (our number is within the stated tolerance of the paper's), `outside`,
`missing: <reason>` (we could not compute it, and say why), `no paper value` (the paper prints none); other
statuses (a reference row, a claim not tested) are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

REFERENCE = Path(__file__).resolve().parents[3] / "reference"
WITHIN, OUTSIDE, NO_PAPER = "within", "outside", "no paper value"
COUNTED = (WITHIN, OUTSIDE, "missing", NO_PAPER)


def read_reference(paper: str, table: str, **read_csv) -> pd.DataFrame:
    """reference/<paper>/<table>.csv: the paper's own numbers, one CSV per table."""
    return pd.read_csv(REFERENCE / paper / f"{table}.csv", **read_csv)


def within(ok: bool) -> str:
    return WITHIN if ok else OUTSIDE


def within_tolerance(ours: float, paper: float, tolerance: float) -> str:
    """`within` when |ours - paper| <= tolerance."""
    return within(abs(ours - paper) <= tolerance)


def missing_status(reason: str) -> str:
    return f"missing: {reason}"


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
    """The `status` column of each <folder>/<table>.csv, concatenated (tables without one add nothing)."""
    return [s for table in tables for s in read_table(folder, table).get("status", [])]


def count_tables(folder: Path, tables: Iterable[str]) -> dict[str, int]:
    """The counts over the `status` column of each <folder>/<table>.csv."""
    return count(statuses(folder, tables))


def verdict(statuses: Iterable[str], good: tuple[str, ...] = (WITHIN, "holds"),
            bad: tuple[str, ...] = (OUTSIDE, "fails")) -> str:
    """Whether a headline claim holds over the cells that test it: yes / no (how many fail) / not computed."""
    tested = [s for s in statuses if s in good or s in bad]
    failed = sum(s in bad for s in tested)
    if not tested:
        return "not computed"
    return f"yes ({len(tested)} of {len(tested)})" if not failed else f"no ({failed} of {len(tested)} fail)"
