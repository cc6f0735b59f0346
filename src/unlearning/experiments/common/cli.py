"""The front page's command: `index --out-dir reports`, after every paper's report is written."""

from __future__ import annotations

import argparse
from importlib import import_module
from pathlib import Path

from .. import SECTIONS


def add_file_options(parser: argparse.ArgumentParser, options: list[str]) -> None:
    """A step's file options: `--name` is required, `--name?` optional, `--name*` takes any number (default [])."""
    for option in options:
        many = option.endswith("*")
        parser.add_argument(option.rstrip("?*"), required=option[-1] not in "?*", nargs="*" if many else None,
                            default=[] if many else None)


def missing_reasons(items: list[str]) -> dict[str, str]:
    """A report step's `--missing dataset=reason ...` as {dataset: reason}; one line naming a malformed item."""
    bad = [item for item in items if "=" not in item]
    if bad:
        raise ValueError(f"--missing {bad[0]!r}: valid: dataset=reason")
    return dict(item.split("=", 1) for item in items)


def number_flag(flag: str, text: str | None, default: float | None = None, *, required: bool = False) -> float | None:
    """A certify command's number flag: `default` when not given (an error naming the flag if `required`)."""
    if text is None:
        if required:
            raise ValueError(f"{flag}: missing; valid: a number")
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{flag} = {text!r}: not a number") from None


def integer_flag(flag: str, text: str | None, default: int | None = None) -> int | None:
    """A certify command's integer flag: `default` when not given."""
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{flag} = {text!r}: valid: an integer") from None


def flagged(err: ValueError, flags: dict[str, str]) -> ValueError:
    """`err` with the flag that gave its argument in front: `flags` maps the argument name a privacy module's
    error starts with to the command-line flag."""
    message = str(err)
    for name in sorted(flags, key=len, reverse=True):
        if message.startswith(f"{name} ") or message.startswith(f"{name}:"):
            return ValueError(f"{flags[name]}: {message}")
    return err


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser("index", parents=[common], help="the front page: one summary row per paper, linking each "
                       "paper's report (reads <out-dir>/<paper>/)")
    s.add_argument("--out-dir", required=True)
    s.set_defaults(run=run)
    t = sub.add_parser("papers-table", help="the README's table of papers: each paper's main recorded run and its "
                       "cell counts, computed from reports/recorded/ (does not read params.yaml)")
    t.add_argument("--root", default=".", help="the repository's root (default: here)")
    t.set_defaults(run=papers_table, needs_params=False)


def papers_table(args) -> str:
    from .records import papers_table as table

    return table(args.root)


def run(params: dict, args) -> None:
    from ...provenance import summary_line
    from ...report.index import write_index

    out = Path(args.out_dir)
    summaries = [import_module(f"..{name}.report", __package__).summary(out / name) for name in SECTIONS]
    from ...resolved import MACHINE

    machine = summary_line(params[MACHINE]) if MACHINE in params else None
    write_index(summaries, params["scale"], out, machine)
