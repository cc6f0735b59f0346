"""RR-DU's commands: rrdu-certify (no params.yaml), rrdu-seed (the original and Table 3 for one seed),
rrdu-ablations (one part of: the baseline run and Tables 14-17, the sensitivity reading, Figure 1's baselines,
retraining), rrdu-ablations-merge and rrdu-report."""

from __future__ import annotations

import argparse

from ..common.cli import add_file_options, flagged, integer_flag, missing_reasons, number_flag

# the argument named at the start of a privacy.rrdu_noise error -> the flag that gave it
FLAGS = {"epsilon": "--epsilon", "delta": "--delta", "L": "--L", "p": "--routing-p", "T_u": "--T-u",
         "N (clients)": "--clients", "sigma": "--sigma"}


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    c = sub.add_parser(
        "rrdu-certify", help="RR-DU: the sigma for (L, epsilon, delta, p, T_u, N), and the nominal epsilon a "
        "sigma gives",
        description="RR-DU's noise (Lamri & Maniatakos 2025, Cor. 5.2 with constant 1): sigma = (L/epsilon) "
        "sqrt(p T_u ln(1/delta) ln N / N). Then the nominal epsilon (Alg. 4 SGD semantics) of that sigma, or of "
        "--sigma, under accountants A (Poisson-subsampled Gaussian at rate p, Opacus's RDP), B (A x ln N/N) and "
        "C (Lemma A.11, C = 1), each by the library's and the classic RDP conversion. Nominal: the accountants "
        "assume Alg. 4's plain step; under Adam semantics only sgd_literal is certified. Does not read "
        "params.yaml.")
    c.set_defaults(run=rrdu_certify, needs_params=False)
    for flag, text in (("--L", "clipping / Lipschitz constant (default 0.5, MNIST)"),
                       ("--epsilon", "default 1"), ("--delta", "default 1e-5"),
                       ("--routing-p", "p: routing probability toward u (default 0.1)"),
                       ("--T-u", "unlearning hops (default 100)"), ("--clients", "N (default 10)"),
                       ("--sigma", "the nominal epsilon of this sigma instead")):
        c.add_argument(flag, help=text)
    s = sub.add_parser("rrdu-seed", parents=[common], help="RR-DU: one seed's original (the poisoned token walk) "
                       "and Table 3's runs (see experiments/rrdu/steps.py)")
    s.set_defaults(run=run)
    s.add_argument("--dataset", required=True)
    s.add_argument("--seed", type=int, required=True)
    add_file_options(s, ["--processed", "--out", "--timing", "--checkpoint"])
    s = sub.add_parser("rrdu-ablations", parents=[common], help="RR-DU: one part of the ablations on the first "
                       "seed's original: baseline (the baseline run and Tables 14-17), sensitivity, baselines "
                       "(Figure 1's fine-tuning, DDP, DP-SGD) or scratch (retraining)")
    s.set_defaults(run=run)
    s.add_argument("--dataset", required=True)
    s.add_argument("--part", required=True, help="baseline, sensitivity, baselines or scratch")
    add_file_options(s, ["--processed", "--checkpoint", "--out", "--timing"])
    s = sub.add_parser("rrdu-ablations-merge", parents=[common], help="RR-DU: join the ablation parts into the "
                       "file the report reads")
    s.set_defaults(run=run)
    add_file_options(s, ["--parts*", "--part-timings*", "--out", "--timing"])
    s = sub.add_parser("rrdu-report", parents=[common], help="RR-DU: Tables 3 and 14-17 and Figure 1 against the "
                       "paper")
    s.set_defaults(run=run)
    add_file_options(s, ["--seeds*", "--ablations*", "--timings*", "--out-dir"])
    s.add_argument("--missing", nargs="*", default=[], help="dataset=reason for each dataset not run")


def run(params: dict, a) -> None:
    if a.step == "rrdu-report":
        from . import report

        missing = missing_reasons(a.missing)
        report.write_report(params, a.seeds, a.ablations, a.timings, missing, a.out_dir)
        return
    from . import steps

    if a.step == "rrdu-seed":
        steps.step_seed(params, a.dataset, a.seed, a.processed, a.out, a.timing, a.checkpoint)
    elif a.step == "rrdu-ablations-merge":
        steps.merge_ablations(a.parts, a.part_timings, a.out, a.timing)
    else:
        steps.step_ablation_part(params, a.dataset, a.processed, a.checkpoint, a.part, a.out, a.timing)


def rrdu_certify(args) -> str:
    try:
        return _certify(args)
    except ValueError as err:
        raise flagged(err, FLAGS) from None


def _certify(args) -> str:
    from ...privacy import rrdu_noise as rn
    from ...privacy.search import finite

    L = number_flag("--L", args.L, 0.5)
    eps, delta = number_flag("--epsilon", args.epsilon, 1.0), number_flag("--delta", args.delta, 1e-5)
    p = number_flag("--routing-p", args.routing_p, 0.1)
    T_u, N = integer_flag("--T-u", args.T_u, 100), integer_flag("--clients", args.clients, 10)
    closed = rn.sigma_closed_form(L, eps, delta, p, T_u, N)  # checks every argument first
    head = f"L = {L:g}, p = {p:g}, T_u = {T_u}, N = {N}, delta = {delta:g}"
    if args.sigma is not None:
        sigma = finite("sigma", number_flag("--sigma", args.sigma, 0.0), 0.0)
        line = f"{head}; given sigma = {sigma:g}"
    else:
        sigma = closed
        line = f"{head}; epsilon = {eps:g}  ->  sigma = {sigma:.6g} (Cor. 5.2, constant 1)"
    if p == 0:
        return line + "; p = 0: u is never visited, no noise and nothing to account"
    cert = rn.nominal_epsilon(sigma, L, delta, p, T_u, N)
    return f"{line}\n{cert.line()}\n({rn.WHY})"
