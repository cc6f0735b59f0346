"""Command line: `python -m unlearning <step> --params params.yaml ...`; every rule calls one step.

Parameters are validated before any work; errors print one line naming the key or file and exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys

import torch

from .config import ParamsError, load_checked
from .data.datasets import DatasetUnavailable


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)  # accepted before or after the step's name
    common.add_argument("--params", default=argparse.SUPPRESS, help="path of params.yaml (default: params.yaml)")
    common.add_argument("--threads", type=int, default=argparse.SUPPRESS,
                        help="torch CPU threads (default: engine.cpu_threads)")
    p = argparse.ArgumentParser(prog="python -m unlearning", description=__doc__, parents=[common])
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("check-params", help="validate params.yaml and exit", parents=[common])
    s = sub.add_parser("prepare", help="raw dataset -> processed uint8 tensors", parents=[common])
    s.add_argument("--dataset", required=True)
    s.add_argument("--out", required=True)
    s = sub.add_parser("features", help="processed tensors -> standardised features", parents=[common])
    s.add_argument("--processed", required=True)
    s.add_argument("--out", required=True)
    for name in ("split", "pretrain", "unlearn", "evaluate", "report"):
        s = sub.add_parser(name, parents=[common])
        s.add_argument("--exp", required=True, choices=["spine"])
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.params = getattr(args, "params", "params.yaml")
    args.threads = getattr(args, "threads", None)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        params = load_checked(args.params)
        torch.set_num_threads(args.threads or params["engine"]["cpu_threads"])
        from . import steps

        if args.step == "check-params":
            print(f"{args.params}: valid (scale {params['scale']})")
        elif args.step == "prepare":
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
            from .report import spine as report_spine

            report_spine.write_report(params, args.results, args.timings, args.out_dir)
    except (ParamsError, DatasetUnavailable, FileNotFoundError, KeyError) as err:
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
