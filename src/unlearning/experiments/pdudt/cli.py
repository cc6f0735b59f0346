"""PDUDT's commands: certify (no params.yaml), pdudt-server ... pdudt-timing, pdudt-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options, missing_reasons

STEPS = {  # PDUDT's own steps (steps.py) and their file arguments
    "pdudt-server": ["--kinds*", "--split"],
    "pdudt-variants": ["--methods*", "--split"],
    "pdudt-continue": ["--methods*", "--split"],
    "pdudt-attack": ["--split", "--out"],
    "pdudt-gaps": ["--split", "--pretrain-dir", "--retrain-models", "--out"],
    "pdudt-evaluate": ["--methods*", "--split", "--attack", "--checkpoint"],
    "pdudt-timing": ["--split", "--pretrain-dir", "--out"],
}


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser("certify", help="PDUDT: the noise sigma for (d1, epsilon, beta), or epsilon for a sigma",
                       description="Give --d1, or the inputs of Theorem 4.9 to compute it; then --epsilon (prints "
                       "sigma) or --sigma (prints epsilon). Does not read params.yaml.")
    c.set_defaults(run=certify, needs_params=False)
    c.add_argument("--d1", type=float, help="the l2 gap d1 (Theorem 4.9) or any sensitivity")
    for name in ("eta", "L", "rho1", "rho2", "sigma1-sq", "sigma2-sq", "df-n", "df-n1"):
        c.add_argument(f"--{name}", type=float, help="Theorem 4.9 input (instead of --d1)")
    c.add_argument("--n", type=int, help="clients before removal (Theorem 4.9 input)")
    c.add_argument("--t1", type=int, help="round of the request (Theorem 4.9 input)")
    c.add_argument("--i2-prime-denominator", choices=("D2", "D1"), default="D2",
                   help="D2 as the paper prints, or D1 as the derivation gives)")
    c.add_argument("--beta", type=float, required=True, help="confidence parameter beta in (0, 1)")
    target = c.add_mutually_exclusive_group(required=True)
    target.add_argument("--epsilon", type=float, help="privacy budget: print the sigma it needs")
    target.add_argument("--sigma", type=float, help="noise scale: print the epsilon it achieves")
    for name, options in STEPS.items():
        s = sub.add_parser(name, parents=[common], help=f"PDUDT: {name[6:]} (see experiments/pdudt/steps.py)")
        s.set_defaults(run=run)
        s.add_argument("--exp", required=True, help="experiment pdudt_<dataset>")
        s.add_argument("--features", required=True)
        add_file_options(s, options)
    s = sub.add_parser("pdudt-report", parents=[common], help="PDUDT: tables and figures against the paper")
    s.set_defaults(run=run)
    s.add_argument("--results", nargs="*", default=[])
    s.add_argument("--curves", nargs="*", default=[])
    s.add_argument("--timings", nargs="*", default=[])
    s.add_argument("--gaps", nargs="*", default=[], help="pdudt-gaps outputs (the noise-free gaps to retraining)")
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not run")
    s.add_argument("--settings", nargs="*", default=[], help="results of the default and candidate settings")
    s.add_argument("--out-dir", required=True)


def certify(args) -> str:
    """PDUDT section 2.5: sigma = d1 / (sqrt(2)(sqrt(log(1/beta) + eps) - sqrt(log(1/beta))))."""
    from ...privacy.gaussian import epsilon, sigma_for
    from ...privacy.pdudt_bound import BoundInputs, d1_bound

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


def run(params: dict, a) -> None:
    from . import steps as sp

    if a.step == "pdudt-report":
        from . import report

        missing = missing_reasons(a.missing)
        report.write_report(params, a.results, a.curves, a.timings, missing, a.out_dir, a.gaps, a.settings)
    elif a.step == "pdudt-server":
        sp.step_server(params, a.exp, a.kinds, a.features, a.split)
    elif a.step == "pdudt-variants":
        sp.step_variants(params, a.exp, a.methods, a.features, a.split)
    elif a.step == "pdudt-continue":
        sp.step_continue(params, a.exp, a.methods, a.features, a.split)
    elif a.step == "pdudt-gaps":
        sp.step_gaps(params, a.exp, a.features, a.split, a.pretrain_dir, a.retrain_models, a.out)
    elif a.step == "pdudt-attack":
        sp.step_attack(params, a.exp, a.features, a.split, a.out)
    elif a.step == "pdudt-evaluate":
        sp.step_evaluate(params, a.exp, a.methods, a.features, a.split, a.attack, a.checkpoint)
    elif a.step == "pdudt-timing":
        sp.step_timing(params, a.exp, a.features, a.split, a.pretrain_dir, a.out)
