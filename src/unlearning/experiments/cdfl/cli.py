"""CDFL's commands: cdfl-certify (no params.yaml), cdfl-cell (one cell of Tables I-IV), cdfl-convex (the convex
stand-in), cdfl-figure1 (Figure 1's curves), cdfl-calibrate (the optimiser and K, spec note 8), cdfl-timing (DU's and
RT's time on synthetic inputs) and cdfl-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options, flagged, integer_flag, missing_reasons, number_flag

# the argument named at the start of a privacy.du_noise error -> the flag that gave it
FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "lambda": "--lam", "M": "--M", "L": "--L",
         "m (deleted samples)": "--m", "n (local samples)": "--n", "N (clients)": "--clients", "sigma": "--sigma",
         "c_eff": "--c-eff", "m/n (deleted fraction)": "--m/--n", "sensitivity (Delta F)": "--M/--L/--lam"}


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser(
        "cdfl-certify", help="CDFL (DU): the sigma for (epsilon, delta, M, L, lambda, m, n) or C_eff, or the "
        "epsilon a sigma buys",
        description="DU's noise (Wu et al. 2026, Algorithm 1 and Theorem 1): sigma = (Delta F / epsilon) "
        "sqrt(2 ln(1.25/delta)) with Delta F = 2 M L^2 m^2 / (lambda^3 n^2) (Lemma 3) when --M, --L and --lam are "
        "given, else Delta F = C_eff (m/n)^2 (default C_eff 0.02064: sigma 1e-3 at m/n 0.1). --clients N instead of "
        "--m/--n: client-wise removal, m/n -> 1/N. With --sigma: the epsilon that sigma buys. Epsilon in (0, 1] "
        "(the classical Gaussian mechanism). Does not read params.yaml.")
    c.set_defaults(run=cdfl_certify, needs_params=False)
    for flag, text in (("--epsilon", "default 1"), ("--delta", "default 1e-5"), ("--m", "deleted samples"),
                       ("--n", "local samples"), ("--clients", "N: client-wise removal (instead of --m/--n)"),
                       ("--M", "Hessian-Lipschitz constant"), ("--L", "Lipschitz constant"),
                       ("--lam", "strong convexity lambda"),
                       ("--c-eff", "C_eff = 2 M L^2 / lambda^3 (default 0.02064)"),
                       ("--sigma", "print the epsilon this sigma buys"),
                       ("--requesters", "|C|: also print the noise each final model carries (with --clients-total)"),
                       ("--clients-total", "N for the final-model noise (Algorithm 1's 1/N)")):
        c.add_argument(flag, help=text)
    c.add_argument("--certified-noise-fix", action="store_true", help="scale nu_c by N/sqrt(|C|) (final std sigma)")
    s = sub.add_parser("cdfl-cell", parents=[common], help="CDFL: one (dataset, partition, topology, seed) cell of "
                       "Tables I-IV: original, DU and RT, sample- and class-wise (see experiments/cdfl/steps.py)")
    s.set_defaults(run=run)
    for flag in ("--dataset", "--partition", "--topology"):
        s.add_argument(flag, required=True)
    s.add_argument("--seed", type=int, required=True)
    add_file_options(s, ["--features", "--out", "--timing"])
    for name, text in (("cdfl-convex", "CDFL: the convex stand-in (multinomial logistic regression at exact "
                                       "minimisers, noiseless DU against the retrained minimiser; see "
                                       "experiments/cdfl/convex.py)"),
                       ("cdfl-figure1", "CDFL: Figure 1's curves (IID + Erdos-Renyi): test accuracy of DU and RT "
                                        "over rounds with sequential requests, and client-wise removal (see "
                                        "experiments/cdfl/figure1.py)"),
                       ("cdfl-calibrate", "CDFL: the local optimiser and K calibration on Table I IID-Ring (spec "
                                          "note 8; see experiments/cdfl/calibrate.py)")):
        s = sub.add_parser(name, parents=[common], help=text)
        s.set_defaults(run=run)
        s.add_argument("--dataset", required=True)
        add_file_options(s, ["--features", "--out", "--timing"])
    s = sub.add_parser("cdfl-timing", parents=[common], help="CDFL: DU's and RT's wall time for a dataset's model "
                       "on synthetic inputs of its shape (Fig. 2 where the dataset is not on disk; see "
                       "experiments/cdfl/timing.py)")
    s.set_defaults(run=run)
    s.add_argument("--dataset", required=True)
    s.add_argument("--rounds", type=int, default=3, help="D-PSGD rounds timed (the first is start-up; default 3)")
    add_file_options(s, ["--out"])
    s = sub.add_parser("cdfl-report", parents=[common], help="CDFL: Tables I-IV against the paper")
    s.set_defaults(run=run)
    s.add_argument("--results", nargs="*", default=[])
    s.add_argument("--timings", nargs="*", default=[])
    s.add_argument("--convex", nargs="*", default=[], help="the convex stand-in's results (cdfl-convex)")
    s.add_argument("--figure1", nargs="*", default=[], help="Figure 1's results (cdfl-figure1)")
    s.add_argument("--calibration", nargs="*", default=[], help="the optimizer and K calibration (cdfl-calibrate)")
    s.add_argument("--synthetic-timing", nargs="*", default=[],
                   help="DU's and RT's time on synthetic inputs (cdfl-timing), for datasets not on disk")
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not run")
    s.add_argument("--seed-spread", default=None, help="a multi-seed record's folder (its table1-4.csv): this run's "
                   "one-seed cells are weighed against one seed's spread there")
    s.add_argument("--out-dir", required=True)


def run(params: dict, a) -> None:
    if a.step == "cdfl-report":
        from . import report

        missing = missing_reasons(a.missing)
        report.write_report(params, a.results, a.timings, missing, a.out_dir, convex=a.convex, figure1=a.figure1,
                            calibration=a.calibration, synthetic_timing=a.synthetic_timing,
                            seed_spread=a.seed_spread)
        return
    if a.step == "cdfl-figure1":
        from . import figure1

        figure1.step_figure1(params, a.dataset, a.features, a.out, a.timing)
        return
    if a.step == "cdfl-calibrate":
        from . import calibrate

        calibrate.step_calibrate(params, a.dataset, a.features, a.out, a.timing)
        return
    if a.step == "cdfl-timing":
        from . import timing

        timing.step_timing(params, a.dataset, a.rounds, a.out)
        return
    if a.step == "cdfl-convex":
        from . import convex

        convex.step_convex(params, a.dataset, a.features, a.out, a.timing)
        return
    from . import steps

    steps.step_cell(params, a.dataset, a.partition, a.topology, a.seed, a.features, a.out, a.timing)


def cdfl_certify(args) -> str:
    try:
        return _certify(args)
    except ValueError as err:
        raise flagged(err, FLAGS) from None


def _certify(args) -> str:
    from ...privacy import du_noise as dn
    from ...privacy.search import finite, integer

    eps = number_flag("--epsilon", args.epsilon, 1.0)
    delta = number_flag("--delta", args.delta, 1e-5)
    m, n, clients = integer_flag("--m", args.m), integer_flag("--n", args.n), integer_flag("--clients", args.clients)
    M, L, lam = number_flag("--M", args.M), number_flag("--L", args.L), number_flag("--lam", args.lam)
    c_eff = number_flag("--c-eff", args.c_eff)
    sigma = number_flag("--sigma", args.sigma)
    if clients is not None and (m is not None or n is not None):
        raise ValueError("--clients: client-wise removal takes N alone; valid: --clients or --m with --n")
    if clients is None and (m is None or n is None):
        raise ValueError("--m/--n: give both (sample- or class-wise), or --clients N (client-wise)")
    theory = [v is not None for v in (M, L, lam)]
    if any(theory) and not all(theory):
        raise ValueError("--M/--L/--lam: give all three (Lemma 3's constants) or none (then C_eff)")
    if all(theory) and c_eff is not None:
        raise ValueError("--c-eff: stands for 2 M L^2 / lambda^3; valid: --c-eff or --M/--L/--lam, not both")
    if all(theory):
        sens = dn.sensitivity_client(M, L, lam, clients) if clients is not None else dn.sensitivity(M, L, lam, m, n)
        how = f"M = {M:g}, L = {L:g}, lambda = {lam:g} (Lemma 3)"
    else:
        c = dn.C_EFF if c_eff is None else finite("c_eff", c_eff)
        ratio = 1 / integer("N (clients)", clients, 2) if clients is not None else dn.deletion_ratio(m, n)
        sens = dn.sensitivity_c_eff(c, ratio)
        how = f"C_eff = {c:g} x ({'1/N' if clients is not None else 'm/n'} = {ratio:.6g})^2"
    what = f"N = {clients}" if clients is not None else f"m = {m}, n = {n}"
    factor = dn.gaussian_factor(delta)
    head = f"{what}; Delta F = {sens:.6g} from {how}; delta = {delta:g}, sqrt(2 ln(1.25/delta)) = {factor:.6g}"
    if sigma is not None:
        return f"{head}  ->  sigma = {sigma:g} buys epsilon = {dn.epsilon_for(sigma, sens, delta):.6g}"
    s = dn.sigma(sens, eps, delta)
    line = f"{head}; epsilon = {eps:g}  ->  sigma = {s:.6g}"
    requesters = integer_flag("--requesters", args.requesters)
    total = integer_flag("--clients-total", args.clients_total)
    if requesters is not None or total is not None or args.certified_noise_fix:
        if requesters is None or total is None:
            raise ValueError("--requesters: the final-model noise needs --requesters and --clients-total")
        std = dn.final_noise_std(s, total, requesters, args.certified_noise_fix)
        fix = "on" if args.certified_noise_fix else "off"
        line += (f"; each final model's noise std = {std:.6g} (|C| = {requesters}, N = {total}, "
                 f"certified_noise_fix {fix})")
    return line
