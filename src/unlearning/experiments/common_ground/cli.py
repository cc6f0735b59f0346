"""Common ground's commands: common-central (the centralized tables' jobs), common-part (the decentralized settings'
jobs), common-references, common-canary, common-method (named methods on one seed, in one process), common-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser("common-central", parents=[common],
                       help="common ground: one method's rows on a centralized table (--method), or the table's "
                            "methods put together (--parts); see experiments/common_ground/central.py")
    s.set_defaults(run=run)
    s.add_argument("table", choices=("centralized", "centralized_mlp"), help="the convex model's table or the MLP's")
    s.add_argument("--method", default=None, help="a method of the table (its runner: methods/, register_central)")
    add_file_options(s, ["--features?", "--parts*", "--part-timings*", "--out", "--timing"])
    s = sub.add_parser("common-part", parents=[common],
                       help="common ground: one job of the decentralized settings (see "
                            "experiments/common_ground/parts.py; its files: layout.py)")
    s.set_defaults(run=run)
    s.add_argument("part", choices=PARTS, help="references (--seed), original (--seed, --family), method (--method), "
                                               "combine")
    s.add_argument("--setting", required=True, help="client | sample")
    s.add_argument("--seed", type=int, default=None, help="one of common.decentralized.seeds")
    s.add_argument("--family", default=None, help="a training family (unlearning/families/)")
    s.add_argument("--method", default=None, help="a configured method of the setting")
    s.add_argument("--root", default=".", help="the working directory the parts' files lie under (default: .)")
    add_file_options(s, ["--features?"])
    s = sub.add_parser("common-canary", parents=[common],
                       help="common ground: the canary audit of one method of a decentralized setting, every seed "
                            "(see experiments/common_ground/canary.py)")
    s.set_defaults(run=run)
    s.add_argument("--setting", required=True, help="client | sample")
    s.add_argument("--method", required=True, help="a configured method of the setting that takes the budget")
    add_file_options(s, ["--features", "--out"])
    s = sub.add_parser("common-one-class", parents=[common],
                       help="common ground: a method re-run on a run's stored originals, each remaining model's "
                            "top-class share (the one-class check of a result that predates it; common-report "
                            "--one-class reads it)")
    s.set_defaults(run=run)
    s.add_argument("--setting", required=True, help="client | sample")
    s.add_argument("--method", required=True, help="a configured method of the setting")
    s.add_argument("--root", default=".", help="the run's working directory, whose artifacts/ hold the originals")
    add_file_options(s, ["--features", "--out"])
    s = sub.add_parser("common-references", parents=[common],
                       help="common ground: each attack's strength on the D-SGD original against the number of "
                            "reference models (attack.reference_counts)")
    s.set_defaults(run=run)
    s.add_argument("--setting", default="client", help="client | sample (default: client)")
    s.add_argument("--seed", required=True, type=int, help="one of common.decentralized.seeds")
    s.add_argument("--originals", required=True, help="the setting's stored originals (artifacts/common_ground/"
                                                      "<setting>_s<seed>): its D-SGD one is read")
    add_file_options(s, ["--features", "--out"])
    s = sub.add_parser("common-method", parents=[common],
                       help="common ground: named methods (and retraining, to compare) on one seed of a decentralized "
                            "setting, their rows printed (docs/extending.md)")
    s.set_defaults(run=run)
    s.add_argument("names", nargs="+", help="registered methods (check-params names them where one is unknown)")
    s.add_argument("--setting", default="client", help="client | sample (default: client)")
    s.add_argument("--seed", type=int, default=None, help="one of common.decentralized.seeds (default: the first)")
    add_file_options(s, ["--features", "--out?"])
    s = sub.add_parser("common-report", parents=[common], help="common ground: the report")
    s.set_defaults(run=run)
    add_file_options(s, ["--centralized?", "--timing?", "--mlp?", "--mlp-timing?", "--decentralized*",
                          "--decentralized-timings*", "--references?", "--canary*", "--one-class*", "--out-dir"])
    s.add_argument("--missing", nargs="*", default=[], help="setting=reason for each setting that could not run")


PARTS = {"references": ("seed", "features"), "original": ("seed", "family", "features"),
         "method": ("method", "features"), "combine": ()}


def run(params: dict, a) -> None:
    if a.step == "common-part":
        from . import parts

        if missing := [f"--{k}" for k in PARTS[a.part] if getattr(a, k) is None]:
            raise KeyError(f"common-part {a.part}: {', '.join(missing)} missing; valid: common-part {a.part} "
                           + " ".join(f"--{k} ..." for k in ("setting", *PARTS[a.part])))
        if a.part == "references":
            parts.references_part(params, a.setting, a.seed, a.features, a.root)
        elif a.part == "original":
            parts.original_part(params, a.setting, a.seed, a.family, a.features, a.root)
        elif a.part == "method":
            parts.method_part(params, a.setting, a.method, a.features, a.root)
        else:
            parts.combine_part(params, a.setting, a.root)
        return
    if a.step == "common-report":
        from ..common.cli import missing_reasons
        from .report import write_report

        write_report(params, a.centralized, a.timing, a.mlp, a.mlp_timing, a.decentralized, a.decentralized_timings,
                     missing_reasons(a.missing), a.out_dir, a.references, a.canary, a.one_class)
        return
    if a.step == "common-one-class":
        from .parts import one_class_check

        one_class_check(params, a.setting, a.method, a.features, a.out, a.root)
        return
    if a.step == "common-canary":
        from .canary import step_canary

        step_canary(params, a.setting, a.method, a.features, a.out)
        return
    if a.step == "common-references":
        from .decentralized import step_references

        step_references(params, a.setting, a.seed, a.features, a.out, a.originals)
        return
    if a.step == "common-central":
        from . import central

        if a.method is not None:
            if a.features is None:
                raise KeyError("common-central --method: --features missing")
            central.method_part(params, a.table, a.method, a.features, a.out, a.timing)
        else:
            central.combine(params, a.table, a.parts, a.part_timings, a.out, a.timing)
        return
    if a.step == "common-method":
        from .decentralized import method_rows

        print(method_rows(params, a.names, a.setting, a.seed, a.features, a.out))

