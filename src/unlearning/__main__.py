"""Command line: `python -m unlearning <step> --params params.yaml ...`; every rule calls one step.

Parameters are validated before any work; errors print one line naming the key or file and exit 2.
Each package under experiments/ adds its own steps (its `cli.add_commands`).
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import sys
from importlib import import_module

from .config import ParamsError, load_checked
from .data.errors import DatasetUnavailable
from .experiments import EXPERIMENTS
from .files import CorruptFile
from .plugins import PluginError
from .resolved import planned, stamp

KNOWN_ERRORS = (ParamsError, DatasetUnavailable, FileNotFoundError, KeyError, CorruptFile, PluginError)


def reads_results_only(step: str) -> bool:
    """Steps that turn result files into reports compute nothing with torch: they skip its 2-3 s import (the
    workflow runs dozens of them; torch comes in only where a report module needs it)."""
    return step.endswith("-report") or step in ("index", "papers-table", "check-params")


def keep_freed_memory() -> None:
    """Keep freed memory in the process (glibc's mallopt): by default glibc maps every block over 128 KiB afresh and
    returns it on free, so each large tensor a step allocates faults its pages in again (5-7 % of an RR-DU walk's
    time went to the kernel). Speed only: no computed bit changes. Without glibc, nothing to tune."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    libc.mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest: blocks up to 32 MiB come from the heap
    libc.mallopt(m_trim_threshold, 1 << 30)
    libc.mallopt(m_top_pad, 64 << 20)


def check_params(params: dict, args) -> None:
    print(f"{args.params}: valid (scale {params['scale']})")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)  # accepted before or after the step's name
    common.add_argument("--params", default=argparse.SUPPRESS, help="path of params.yaml (default: params.yaml)")
    common.add_argument("--threads", type=int, default=argparse.SUPPRESS,
                        help="torch CPU threads (the rule's threads; default: engine.cpu_threads, "
                        "auto = torch's default)")
    common.add_argument("--provenance", default=argparse.SUPPRESS,
                        help="the run's provenance record (python -m unlearning.provenance), quoted by reports")
    p = argparse.ArgumentParser(prog="python -m unlearning", description=__doc__, parents=[common])
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("check-params", help="validate params.yaml and exit", parents=[common]).set_defaults(
        run=check_params)
    for name in EXPERIMENTS:
        import_module(f".experiments.{name}.cli", __package__).add_commands(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.params = getattr(args, "params", "params.yaml")
    args.threads = getattr(args, "threads", None)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not getattr(args, "needs_params", True):  # certificates from the command line alone
        try:
            print(args.run(args))
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    try:
        # the resolved file a plan wrote was checked there with every plugin's declaration (reading them imports
        # every plugin module, torch with them): a job re-checks what needs no plugin
        full = args.step == "check-params" or not planned(args.params)
        params = stamp(load_checked(args.params, plugins=full), getattr(args, "provenance", None))
        if not reads_results_only(args.step):
            import torch

            keep_freed_memory()
            if (threads := args.threads or params["engine"]["cpu_threads"]) != "auto":
                torch.set_num_threads(threads)
        args.run(params, args)
    except KNOWN_ERRORS as err:
        # one line: an OSError's args are (errno, text), so it prints as itself ("[Errno 2] ...: 'path'")
        message = err if isinstance(err, OSError) or not err.args else err.args[0]
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
