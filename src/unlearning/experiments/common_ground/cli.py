"""Common ground's commands: common-centralized, common-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser("common-centralized", parents=[common],
                       help="common ground: the centralized convex setting and its audit (see "
                            "experiments/common_ground/centralized.py)")
    s.set_defaults(run=run)
    add_file_options(s, ["--features", "--out", "--timing"])
    s = sub.add_parser("common-report", parents=[common], help="common ground: the report")
    s.set_defaults(run=run)
    add_file_options(s, ["--centralized?", "--timing?", "--out-dir"])
    s.add_argument("--missing", nargs="*", default=[], help="setting=reason for each setting that could not run")


def run(params: dict, a) -> None:
    if a.step == "common-report":
        from ..common.cli import missing_reasons
        from .report import write_report

        write_report(params, a.centralized, a.timing, missing_reasons(a.missing), a.out_dir)
        return
    from .centralized import step_centralized

    step_centralized(params, a.features, a.out, a.timing)
