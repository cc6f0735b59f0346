"""The spine's commands: prepare, features, split, pretrain, unlearn, evaluate, report."""

from __future__ import annotations

import argparse


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser("prepare", help="raw dataset -> processed uint8 tensors", parents=[common])
    s.add_argument("--dataset", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(run=run)
    s = sub.add_parser("features", help="processed tensors -> standardised features", parents=[common])
    s.add_argument("--processed", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(run=run)
    helps = {"split": "features -> client partition + forget request", "pretrain": "decentralized training, with "
             "gradient history and checkpoints", "unlearn": "one registered method on the trained state",
             "evaluate": "utility, forgetting and the loss-threshold attack", "report": "the spine's table, "
             "figure and page (Markdown and HTML) under <out-dir>/spine/"}
    for name in ("split", "pretrain", "unlearn", "evaluate", "report"):
        s = sub.add_parser(name, parents=[common], help=helps[name])
        s.set_defaults(run=run)
        s.add_argument("--exp", required=True, help="experiment: spine or pdudt_<dataset>")
        if name != "report":
            s.add_argument("--features", required=True)
        if name in ("pretrain", "unlearn", "evaluate"):
            s.add_argument("--split", required=True)
        if name in ("unlearn", "evaluate"):
            s.add_argument("--method", required=True)
        if name == "unlearn":
            s.add_argument("--pretrain-dir", required=True)
        if name in ("pretrain", "unlearn"):
            s.add_argument("--timing", required=True, help="JSON file for the wall time")
        if name == "evaluate":
            s.add_argument("--models", required=True)
            s.add_argument("--cost", required=True)
        if name == "report":
            s.add_argument("--results", nargs="+", required=True)
            s.add_argument("--timings", nargs="+", required=True)
            s.add_argument("--out-dir", required=True)
        else:
            s.add_argument("--out", required=True)


def run(params: dict, args) -> None:
    from . import steps

    if args.step == "prepare":
        steps.step_prepare(params, args.dataset, args.out)
    elif args.step == "features":
        steps.step_features(params, args.processed, args.out)
    elif args.step == "split":
        steps.step_split(params, args.exp, args.features, args.out)
    elif args.step == "pretrain":
        steps.step_pretrain(params, args.exp, args.features, args.split, args.out, args.timing)
    elif args.step == "unlearn":
        steps.step_unlearn(params, args.exp, args.method, args.features, args.split, args.pretrain_dir, args.out,
                           args.timing)
    elif args.step == "evaluate":
        steps.step_evaluate(params, args.exp, args.method, args.features, args.split, args.models, args.cost,
                            args.out)
    elif args.step == "report":
        from . import report

        report.write_report(params, args.results, args.timings, args.out_dir)
