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
from .files import CorruptFile
from .resolved import stamp


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)  # accepted before or after the step's name
    common.add_argument("--params", default=argparse.SUPPRESS, help="path of params.yaml (default: params.yaml)")
    common.add_argument("--threads", type=int, default=argparse.SUPPRESS,
                        help="torch CPU threads (the rule's threads; default: engine.cpu_threads, "
                        "auto = torch's default)")
    p = argparse.ArgumentParser(prog="python -m unlearning", description=__doc__, parents=[common])
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("check-params", help="validate params.yaml and exit", parents=[common])
    c = sub.add_parser("certify", help="PDUDT: the noise sigma for (d1, epsilon, beta), or epsilon for a sigma",
                       description="Give --d1, or the inputs of Theorem 4.9 to compute it; then --epsilon (prints "
                       "sigma) or --sigma (prints epsilon). Does not read params.yaml.")
    c.add_argument("--d1", type=float, help="the l2 gap d1 (Theorem 4.9) or any sensitivity")
    for name in ("eta", "L", "rho1", "rho2", "sigma1-sq", "sigma2-sq", "df-n", "df-n1"):
        c.add_argument(f"--{name}", type=float, help="Theorem 4.9 input (instead of --d1)")
    c.add_argument("--n", type=int, help="clients before removal (Theorem 4.9 input)")
    c.add_argument("--t1", type=int, help="round of the request (Theorem 4.9 input)")
    c.add_argument("--i2-prime-denominator", choices=("D2", "D1"), default="D2",
                   help="D2 as the paper prints, or D1 as the derivation gives (spec 7-T)")
    c.add_argument("--beta", type=float, required=True, help="confidence parameter beta in (0, 1)")
    target = c.add_mutually_exclusive_group(required=True)
    target.add_argument("--epsilon", type=float, help="privacy budget: print the sigma it needs")
    target.add_argument("--sigma", type=float, help="noise scale: print the epsilon it achieves")
    c = sub.add_parser("sglu-certify", help="SGLU: the sigma for (epsilon, delta, K), or the least K for a sigma",
                       description="Logistic-regression constants L = 1/4 + lambda, m = lambda = lam-per-n n unless "
                       "--L and --m are given; eta = 1/L. With --burn-in T the bound is Theorem 3.2 (finite burn-in, "
                       "Table 3's), else Corollary 3.8 (converged learning) under --variant. "
                       "Does not read params.yaml.")
    c.add_argument("--n", type=int, required=True, help="training points (after dropping the last n mod b)")
    c.add_argument("--b", required=True, help="batch size, or 'full'")
    c.add_argument("--epsilon", type=float, required=True)
    c.add_argument("--delta", type=float, help="default 1/n")
    c.add_argument("--lam-per-n", type=float, default=1e-6)
    c.add_argument("--L", type=float, help="smoothness (with --m, instead of --lam-per-n)")
    c.add_argument("--m", type=float, help="strong convexity (with --L)")
    c.add_argument("--M", type=float, default=1.0, help="gradient clip norm")
    c.add_argument("--R", type=float, default=100.0, help="projection radius")
    c.add_argument("--burn-in", type=int, help="T epochs: use Theorem 3.2 (else Corollary 3.8)")
    c.add_argument("--variant", default="paper", help="paper (A) | code_b (B) | code_c (C), for Corollary 3.8")
    target = c.add_mutually_exclusive_group(required=True)
    target.add_argument("--K", type=int, help="unlearning epochs: print the least sigma")
    target.add_argument("--sigma", type=float, help="noise: print the least K")
    s = sub.add_parser("prepare", help="raw dataset -> processed uint8 tensors", parents=[common])
    s.add_argument("--dataset", required=True)
    s.add_argument("--out", required=True)
    s = sub.add_parser("features", help="processed tensors -> standardised features", parents=[common])
    s.add_argument("--processed", required=True)
    s.add_argument("--out", required=True)
    for name in ("split", "pretrain", "unlearn", "evaluate", "report"):
        s = sub.add_parser(name, parents=[common])
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
    pdudt = {  # PDUDT's own steps (steps_pdudt.py) and their file arguments
        "pdudt-server": ["--kind", "--split", "--out-dir", "--timing"],
        "pdudt-variants": ["--method", "--split", "--trained-dir", "--out-dir", "--timing"],
        "pdudt-continue": ["--method", "--split", "--models", "--out-dir"],
        "pdudt-attack": ["--split", "--out"],
        "pdudt-gaps": ["--split", "--pretrain-dir", "--retrain-models", "--out"],
        "pdudt-evaluate": ["--method", "--split", "--attack", "--models-a", "--models-b?", "--cost?", "--out"],
        "pdudt-timing": ["--split", "--pretrain-dir", "--server-root", "--out"],
    }
    for name, options in pdudt.items():
        s = sub.add_parser(name, parents=[common], help=f"PDUDT: {name[6:]} (see steps_pdudt.py)")
        s.add_argument("--exp", required=True, help="experiment pdudt_<dataset>")
        s.add_argument("--features", required=True)
        for option in options:
            flag = option.rstrip("?*")
            s.add_argument(flag, required=option[-1] not in "?*", nargs="*" if option.endswith("*") else None,
                           default=[] if option.endswith("*") else None)
    sglu = {  # SGLU's steps (steps_sglu.py)
        "sglu-features": ["--processed", "--out"],
        "sglu-accounting": ["--features?", "--out"],
        "sglu-fig3a": ["--features", "--accounting", "--out", "--timing"],
        "sglu-fig3c": ["--features", "--accounting", "--out", "--timing"],
    }
    for name, options in sglu.items():
        s = sub.add_parser(name, parents=[common], help=f"SGLU: {name[5:]} (see steps_sglu.py)")
        s.add_argument("--dataset", required=True, help="fashion_mnist, mnist or cifar10")
        for option in options:
            s.add_argument(option.rstrip("?"), required=not option.endswith("?"))
    s = sub.add_parser("sglu-report", parents=[common], help="SGLU: tables and figures against the paper")
    for flag in ("--accounting", "--fig3a", "--fig3c", "--timings"):
        s.add_argument(flag, nargs="*", default=[])
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not trained")
    s.add_argument("--out-dir", required=True)
    s = sub.add_parser("pdudt-report", parents=[common], help="PDUDT: tables and figures against the paper")
    s.add_argument("--results", nargs="*", default=[])
    s.add_argument("--curves", nargs="*", default=[])
    s.add_argument("--timings", nargs="*", default=[])
    s.add_argument("--gaps", nargs="*", default=[], help="pdudt-gaps outputs (spec 7-N)")
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not run")
    s.add_argument("--out-dir", required=True)
    return p


def certify(args) -> str:
    """PDUDT section 2.5: sigma = d1 / (sqrt(2)(sqrt(log(1/beta) + eps) - sqrt(log(1/beta))))."""
    from .privacy.gaussian import epsilon, sigma_for
    from .privacy.pdudt_bound import BoundInputs, d1_bound

    d1 = args.d1
    if d1 is None:
        names = ("eta", "L", "n", "t1", "rho1", "rho2", "sigma1_sq", "sigma2_sq", "df_n", "df_n1")
        missing = [f"--{k.replace('_', '-')}" for k in names if getattr(args, k) is None]
        if missing:
            raise ValueError(f"certify: give --d1, or all of the Theorem 4.9 inputs (missing: {', '.join(missing)})")
        d1 = d1_bound(BoundInputs(**{k: getattr(args, k) for k in names}), args.i2_prime_denominator)
    if args.epsilon is not None:
        sigma = sigma_for(d1, args.epsilon, args.beta)
        return f"d1 = {d1:.6g}  epsilon = {args.epsilon:g}  beta = {args.beta:g}  ->  sigma = {sigma:.6g}"
    eps = epsilon(d1, args.sigma, args.beta)
    return f"d1 = {d1:.6g}  sigma = {args.sigma:g}  beta = {args.beta:g}  ->  epsilon = {eps:.6g}"


def sglu_certify(args) -> str:
    """SGLU sections 2.3-2.4: Algorithm 4's sigma for K epochs, or the least K for sigma, and the epsilon achieved."""
    from .privacy import sglu as acc

    b = args.n if args.b == "full" else int(args.b)
    if (args.L is None) != (args.m is None):
        raise ValueError("sglu-certify: give both --L and --m, or neither (then lambda = --lam-per-n x n)")
    k = (acc.logistic_constants(args.n, b, args.lam_per_n, args.M, args.R) if args.L is None
         else acc.Constants(n=args.n, b=b, L=args.L, m=args.m, M=args.M, R=args.R))
    delta = args.delta if args.delta is not None else 1 / args.n
    variant = acc.variant_name(args.variant)
    if args.K is not None:
        cert = acc.certify_sigma(k, args.epsilon, delta, args.K, args.burn_in, variant)
    else:
        cert = acc.certify_k(k, args.sigma, args.epsilon, delta, args.burn_in, variant)
    bound = "Theorem 3.2" if args.burn_in is not None else f"Corollary 3.8, variant {variant}"
    return (f"n = {args.n}  b = {b}  L = {k.L:.6g}  m = {k.m:.6g}  eta = {k.step:.6g}  delta = {delta:.6g}  ({bound})"
            f"  ->  sigma = {cert.sigma:.6g}  K = {cert.K}  epsilon achieved = {cert.epsilon:.6g}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.params = getattr(args, "params", "params.yaml")
    args.threads = getattr(args, "threads", None)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.step in ("certify", "sglu-certify"):
        try:
            print(certify(args) if args.step == "certify" else sglu_certify(args))
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    try:
        params = stamp(load_checked(args.params))
        if (threads := args.threads or params["engine"]["cpu_threads"]) != "auto":
            torch.set_num_threads(threads)
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
        elif args.step.startswith("pdudt-"):
            run_pdudt(params, args)
        elif args.step.startswith("sglu-"):
            run_sglu(params, args)
    except (ParamsError, DatasetUnavailable, FileNotFoundError, KeyError, CorruptFile) as err:
        print(f"error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    return 0


def run_sglu(params: dict, a) -> None:
    from . import steps_sglu as ss

    if a.step == "sglu-report":
        from .report import sglu as report_sglu

        missing = dict(item.split("=", 1) for item in a.missing)
        report_sglu.write_report(params, a.accounting, a.fig3a, a.fig3c, a.timings, missing, a.out_dir)
        return
    datasets = ss.config(params)["datasets"]
    if a.dataset not in datasets:
        raise KeyError(f"--dataset {a.dataset}: not in sglu.datasets; valid: {', '.join(datasets)}")
    if a.step == "sglu-features":
        ss.step_features(params, a.dataset, a.processed, a.out)
    elif a.step == "sglu-accounting":
        ss.step_accounting(params, a.dataset, a.features, a.out)
    elif a.step == "sglu-fig3a":
        ss.step_fig3a(params, a.dataset, a.features, a.accounting, a.out, a.timing)
    elif a.step == "sglu-fig3c":
        ss.step_fig3c(params, a.dataset, a.features, a.accounting, a.out, a.timing)


def run_pdudt(params: dict, a) -> None:
    from . import steps_pdudt as sp

    if a.step == "pdudt-report":
        from .report import pdudt as report_pdudt

        missing = dict(item.split("=", 1) for item in a.missing)
        report_pdudt.write_report(params, a.results, a.curves, a.timings, missing, a.out_dir, a.gaps)
    elif a.step == "pdudt-server":
        sp.step_server(params, a.exp, a.kind, a.features, a.split, a.out_dir, a.timing)
    elif a.step == "pdudt-variants":
        sp.step_variants(params, a.exp, a.method, a.features, a.split, a.trained_dir, a.out_dir, a.timing)
    elif a.step == "pdudt-continue":
        sp.step_continue(params, a.exp, a.method, a.features, a.split, a.models, a.out_dir)
    elif a.step == "pdudt-gaps":
        sp.step_gaps(params, a.exp, a.features, a.split, a.pretrain_dir, a.retrain_models, a.out)
    elif a.step == "pdudt-attack":
        sp.step_attack(params, a.exp, a.features, a.split, a.out)
    elif a.step == "pdudt-evaluate":
        sp.step_evaluate(params, a.exp, a.method, a.features, a.split, a.attack, a.models_a, a.models_b, a.cost,
                         a.out)
    elif a.step == "pdudt-timing":
        sp.step_timing(params, a.exp, a.features, a.split, a.pretrain_dir, a.server_root, a.out)


if __name__ == "__main__":
    sys.exit(main())
