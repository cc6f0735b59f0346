"""SGLU's commands: sglu-certify and sglu-claims (no params.yaml), sglu-features ... sglu-fig3c, sglu-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options, missing_reasons

STEPS = {  # SGLU's steps (steps.py)
    "sglu-features": ["--processed", "--out"],
    "sglu-accounting": ["--features?", "--out"],
    "sglu-fig3a": ["--features", "--accounting", "--out", "--timing"],
    "sglu-fig3c": ["--features", "--accounting", "--out", "--timing"],
}


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser("sglu-certify", help="SGLU: the sigma for (epsilon, delta, K), or the least K for a sigma",
                       description="Logistic-regression constants L = 1/4 + lambda, m = lambda = lam-per-n n unless "
                       "--L and --m are given; eta = 1/L. With --burn-in T the bound is Theorem 3.2 (finite burn-in, "
                       "Table 3's), else Corollary 3.8 (converged learning) under --variant. "
                       "Does not read params.yaml.")
    c.set_defaults(run=sglu_certify, needs_params=False)
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
    for name, options in STEPS.items():
        s = sub.add_parser(name, parents=[common], help=f"SGLU: {name[5:]} (see experiments/sglu/steps.py)")
        s.set_defaults(run=run)
        s.add_argument("--dataset", required=True, help="fashion_mnist, mnist or cifar10")
        add_file_options(s, options)
    s = sub.add_parser("sglu-report", parents=[common], help="SGLU: tables and figures against the paper")
    s.set_defaults(run=run)
    for flag in ("--accounting", "--fig3a", "--fig3c", "--timings"):
        s.add_argument(flag, nargs="*", default=[])
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not trained")
    s.add_argument("--out-dir", required=True)
    s = sub.add_parser("sglu-claims", help="SGLU: judge the claims again from a written report's fig3a.csv and "
                       "fig3c.csv (rewrites its claims.csv and index.md's claims section)")
    s.set_defaults(run=sglu_claims, needs_params=False)
    s.add_argument("--tables", required=True, help="the report's folder")


def sglu_certify(args) -> str:
    """SGLU sections 2.3-2.4: Algorithm 4's sigma for K epochs, or the least K for sigma, and the epsilon achieved."""
    from ...privacy import sglu as acc

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


def sglu_claims(args) -> str:
    from . import report

    verdicts = report.rejudge(args.tables)
    return "\n".join(f"{r.status}: {r.claim}" for r in verdicts.itertuples())


def run(params: dict, a) -> None:
    from . import steps as ss

    if a.step == "sglu-report":
        from . import report

        missing = missing_reasons(a.missing)
        report.write_report(params, a.accounting, a.fig3a, a.fig3c, a.timings, missing, a.out_dir)
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
