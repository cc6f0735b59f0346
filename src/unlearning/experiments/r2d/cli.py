"""R2D's commands: r2d-certify (no params.yaml), r2d-run (learning and R2D on one data set and seed), r2d-baselines
(HF and CNS) and r2d-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options, flagged, integer_flag, missing_reasons, number_flag

# the argument named at the start of a privacy.r2d_noise error -> the flag that gave it
FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "K (rewound steps)": "--K", "T (learning steps)": "--T",
         "eta (step size)": "--eta", "L (smoothness)": "--L", "G (gradient bound)": "--G",
         "m (deleted samples)": "--m", "n (training samples)": "--n", "sigma": "--sigma", "mechanism": "--mechanism",
         "K_ep (rewound epochs)": "--K-epochs", "E_sel (selected epochs)": "--E-sel",
         "steps_per_epoch": "--steps-per-epoch"}


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser(
        "r2d-certify", help="R2D: the sigma for (epsilon, delta, K, T, eta, L, G, m, n), or the least K for a sigma",
        description="R2D's noise (Mu & Klabjan 2025, Theorem 3.1): Delta(K) = 2 m G h(K) / (L n) with "
        "h(K) = ((1 + eta L n/(n-m))^(T-K) - 1)(1 + eta L)^K, then sigma from the analytic Gaussian mechanism "
        "(Balle & Wang 2018, exact; the default) or the classical one (eq. 3, epsilon <= 1 only). K and T count "
        "SGD steps; --K-epochs/--E-sel/--steps-per-epoch give K = K_ep S and T = (E_sel - 1) S instead. With "
        "--sigma: the least K whose sigma is at most that (and Corollary 3.2's bound). Does not read params.yaml.")
    c.set_defaults(run=r2d_certify, needs_params=False)
    for flag, text in (("--epsilon", "default 1"), ("--delta", "default 0.1"), ("--K", "rewound steps"),
                       ("--T", "learning steps"),
                       ("--K-epochs", "rewound epochs K_ep (with --E-sel, --steps-per-epoch)"),
                       ("--E-sel", "selected epochs"), ("--steps-per-epoch", "S = ceil(n / batch)"),
                       ("--eta", "step size (the final one)"), ("--L", "smoothness"), ("--G", "gradient bound"),
                       ("--m", "deleted samples"), ("--n", "training samples"),
                       ("--mechanism", "analytic (default) | classical | paper-compat"),
                       ("--sigma", "print the least K whose sigma is at most this")):
        c.add_argument(flag, help=text)
    s = sub.add_parser("r2d-run", parents=[common], help="R2D: learning with a checkpoint per epoch, every rewind and "
                       "epsilon, the noised retrain, evaluated (see experiments/r2d/steps.py)")
    s.set_defaults(run=run)
    s.add_argument("--dataset", required=True)
    s.add_argument("--seed", type=int, required=True)
    add_file_options(s, ["--out", "--timing", "--checkpoints", "--processed?"])
    s = sub.add_parser("r2d-baselines", parents=[common], help="R2D's baselines HF and CNS on the run's data and "
                       "forget request (see experiments/r2d/steps.py)")
    s.set_defaults(run=run)
    s.add_argument("--dataset", required=True)
    s.add_argument("--seed", type=int, required=True)
    add_file_options(s, ["--learning", "--out", "--timing", "--processed?"])
    s = sub.add_parser("r2d-report", parents=[common], help="R2D: the sigma tables, Figure 1, Tables 2, 5, 7-9 "
                       "beside the paper's numbers")
    s.set_defaults(run=run)
    s.add_argument("--results", nargs="*", default=[])
    s.add_argument("--baselines", nargs="*", default=[])
    s.add_argument("--timings", nargs="*", default=[])
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each data set not run")
    s.add_argument("--out-dir", required=True)


def run(params: dict, a) -> None:
    if a.step == "r2d-report":
        from . import report

        missing = missing_reasons(a.missing)
        report.write_report(params, a.results, a.baselines, a.timings, missing, a.out_dir)
        return
    from . import steps

    if a.step == "r2d-run":
        steps.step_run(params, a.dataset, a.seed, a.out, a.timing, a.checkpoints, a.processed)
    else:
        steps.step_baselines(params, a.dataset, a.seed, a.learning, a.out, a.timing, a.processed)


def r2d_certify(args) -> str:
    try:
        return _certify(args)
    except ValueError as err:
        raise flagged(err, FLAGS) from None


def _steps(args) -> tuple[int | None, int]:
    from ...privacy import r2d_noise as rn

    K, T = integer_flag("--K", args.K), integer_flag("--T", args.T)
    k_ep, e_sel, s = (integer_flag("--K-epochs", args.K_epochs), integer_flag("--E-sel", args.E_sel),
                      integer_flag("--steps-per-epoch", args.steps_per_epoch))
    by_epochs = any(v is not None for v in (k_ep, e_sel, s))
    if by_epochs:
        if K is not None or T is not None:
            raise ValueError("--K/--T: steps or epochs, not both; valid: --K with --T, or --K-epochs with --E-sel "
                             "and --steps-per-epoch")
        if e_sel is None or s is None:
            raise ValueError("--E-sel/--steps-per-epoch: both are needed with epochs")
        if k_ep is None:
            return None, rn.epoch_steps(0, e_sel, s)[1]
        return rn.epoch_steps(k_ep, e_sel, s)
    if T is None:
        raise ValueError("--T: missing; valid: an integer >= 1 (or --E-sel with --steps-per-epoch)")
    return K, T


def _certify(args) -> str:
    from ...privacy import r2d_noise as rn

    mechanism = args.mechanism or "analytic"
    if mechanism not in rn.MECHANISMS:
        raise ValueError(f"mechanism = {mechanism!r}: valid: one of {', '.join(rn.MECHANISMS)}")
    eps = number_flag("--epsilon", args.epsilon, 1.0)
    delta = number_flag("--delta", args.delta, 0.1)
    eta, L, G = (number_flag(flag, value, required=True) for flag, value in
                 (("--eta", args.eta), ("--L", args.L), ("--G", args.G)))
    m, n = number_flag("--m", args.m, required=True), number_flag("--n", args.n, required=True)
    K, T = _steps(args)
    sigma = None if args.sigma is None else number_flag("--sigma", args.sigma, required=True)
    if mechanism == "classical":
        rn.classical_sigma(eps, delta, 0.0)  # epsilon > 1 refused before any work
    head = (f"T = {T}, eta = {eta:g}, L = {L:g}, G = {G:g}, m = {m:g}, n = {n:g}; epsilon = {eps:g}, "
            f"delta = {delta:g}, {mechanism} Gaussian")
    if sigma is not None:
        if K is not None:
            raise ValueError("--K: with --sigma the command finds K; valid: --K or --sigma, not both")
        least = rn.least_k(sigma, eps, delta, T, eta, L, G, m, n, mechanism)
        bound = rn.corollary_k(sigma, eps, delta, T, eta, L, G, m, n)
        return (f"{head}  ->  sigma = {sigma:g}: least K = {least} steps ({100 * least / T:.4g}% of T); "
                f"Corollary 3.2 bound K <= {bound:.6g}")
    if K is None:
        raise ValueError("--K: missing; valid: an integer with 0 <= K <= T (or --sigma to find it)")
    hk = rn.h(K, T, eta, L, m, n)
    sens = rn.sensitivity(K, T, eta, L, G, m, n)
    s = rn.sigma(eps, delta, K, T, eta, L, G, m, n, mechanism)
    return (f"{head}; K = {K} ({100 * K / T:.4g}% of T): h(K) = {hk:.6g}, Delta(K) = {sens:.6g}  ->  "
            f"sigma = {s:.6g}")
