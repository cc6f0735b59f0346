"""RR-DU's commands: rrdu-certify (no params.yaml). The steps, report and tables come later (issue 13)."""

from __future__ import annotations

import argparse

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


def _number(flag: str, text: str | None, default: float) -> float:
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{flag} = {text!r}: not a number") from None


def _integer(flag: str, text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{flag} = {text!r}: valid: an integer") from None


def _flagged(err: ValueError) -> ValueError:
    message = str(err)
    for name in sorted(FLAGS, key=len, reverse=True):
        if message.startswith(f"{name} ") or message.startswith(f"{name}:"):
            return ValueError(f"{FLAGS[name]}: {message}")
    return err


def rrdu_certify(args) -> str:
    try:
        return _certify(args)
    except ValueError as err:
        raise _flagged(err) from None


def _certify(args) -> str:
    from ...privacy import rrdu_noise as rn
    from ...privacy.search import finite

    L = _number("--L", args.L, 0.5)
    eps, delta = _number("--epsilon", args.epsilon, 1.0), _number("--delta", args.delta, 1e-5)
    p = _number("--routing-p", args.routing_p, 0.1)
    T_u, N = _integer("--T-u", args.T_u, 100), _integer("--clients", args.clients, 10)
    closed = rn.sigma_closed_form(L, eps, delta, p, T_u, N)  # checks every argument first
    head = f"L = {L:g}, p = {p:g}, T_u = {T_u}, N = {N}, delta = {delta:g}"
    if args.sigma is not None:
        sigma = finite("sigma", _number("--sigma", args.sigma, 0.0), 0.0)
        line = f"{head}; given sigma = {sigma:g}"
    else:
        sigma = closed
        line = f"{head}; epsilon = {eps:g}  ->  sigma = {sigma:.6g} (Cor. 5.2, constant 1)"
    if p == 0:
        return line + "; p = 0: u is never visited, no noise and nothing to account"
    cert = rn.nominal_epsilon(sigma, L, delta, p, T_u, N)
    return f"{line}\n{cert.line()}\n({rn.WHY})"
