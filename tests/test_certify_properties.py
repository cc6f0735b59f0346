"""Property tests of every certify path: for random valid inputs the epsilon achieved never exceeds the
target, and the inverse round-trips (sigma -> epsilon -> sigma); for inputs anywhere in the float range (huge
and tiny epsilon, delta, sigma, constants) every certify command gives a finite positive sigma or one stderr
line naming the key, never a traceback. Seeded numpy draws, N_DRAWS per path (each draw is reproducible from
its index)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from unlearning.__main__ import main
from unlearning.privacy import du_noise, gaussian, r2d_noise, rrdu_noise, sglu
from unlearning.privacy import sglu_baselines as bl
from unlearning.privacy.pdudt_bound import BoundInputs, d1_bound, step_size_limit
from unlearning.privacy.search import COUNT_MAX, integer, probability

N_DRAWS = 200
ROOT = Path(__file__).resolve().parents[1]


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(10 ** rng.uniform(math.log10(lo), math.log10(hi)))


def _sglu_constants(rng: np.random.Generator) -> sglu.Constants:
    """n a multiple of b (or b = n), lambda = lam_per_n n, M in [0.5, 2], R in [1, 100]."""
    iters = int(rng.integers(1, 120))
    b = int(rng.choice([1, 8, 32, 64, 128, 256, 512]))
    n = b * iters
    if rng.uniform() < 0.2:
        b = n  # full batch
    return sglu.logistic_constants(n, b, _log_uniform(rng, 1e-7, 1e-4), float(rng.uniform(0.5, 2)),
                                   float(rng.uniform(1, 100)))


def _delta(rng: np.random.Generator, n: int) -> float:
    return 1 / n if rng.uniform() < 0.5 else _log_uniform(rng, 1e-8, 1e-2)


def _close(a: float, b: float) -> bool:
    """Within the bisection's absolute tolerance (1e-8) plus a relative 1e-6 for the numerical minimum over alpha."""
    return abs(a - b) <= 2 * sglu.SIGMA_TOL + 1e-6 * abs(b)


# ------------------------------------------------------------------------------------------- PDUDT Gaussian


def test_pdudt_gaussian_sigma_always_reaches_its_target_and_round_trips():
    rng = np.random.default_rng(20261123)
    for i in range(N_DRAWS * 5):
        d1, eps, beta = _log_uniform(rng, 1e-6, 1e3), _log_uniform(rng, 1e-6, 1e3), _log_uniform(rng, 1e-12, 0.9)
        sigma = gaussian.sigma_for(d1, eps, beta)
        achieved = gaussian.epsilon(d1, sigma, beta)
        assert achieved <= eps, (i, d1, eps, beta)
        assert achieved == pytest.approx(eps, rel=1e-9)
        sigma0 = _log_uniform(rng, 1e-4, 1e4)  # sigma -> epsilon -> sigma
        assert gaussian.sigma_for(d1, gaussian.epsilon(d1, sigma0, beta), beta) == pytest.approx(sigma0, rel=1e-9)


def test_pdudt_theorem_4_9_inputs_give_a_sigma_that_certifies():
    rng = np.random.default_rng(49)
    for _ in range(N_DRAWS):
        L, n, t1 = _log_uniform(rng, 0.1, 10), int(rng.integers(2, 50)), int(rng.integers(1, 200))
        rho1, rho2 = float(rng.uniform(0, 1)), float(rng.uniform(0, 1))
        eta = step_size_limit(L, n, t1, rho1, rho2) * float(rng.uniform(0.01, 0.99))
        x = BoundInputs(eta, L, n, t1, rho1, rho2, *(float(v) for v in rng.uniform(0, 2, size=4)))
        d1, eps, beta = d1_bound(x), _log_uniform(rng, 1e-3, 10), _log_uniform(rng, 1e-8, 0.5)
        assert math.isfinite(d1) and d1 >= 0
        assert gaussian.epsilon(d1, gaussian.sigma_for(d1, eps, beta), beta) <= eps if d1 > 0 else True


# ------------------------------------------------------------------------------------------- SGLU


@pytest.mark.parametrize("bound", ["thm3.2", "paper", "code_b", "code_c"])
def test_sglu_certify_sigma_round_trips_and_never_exceeds_the_target(bound):
    """sigma0 -> epsilon(sigma0) -> certify_sigma: epsilon achieved <= that target, sigma back to sigma0. sigma0
    spans 1e-4 .. 1e3, so the bracket widens above Algorithm 4's 10 for some draws."""
    rng = np.random.default_rng(["thm3.2", "paper", "code_b", "code_c"].index(bound))
    widened = 0
    for i in range(N_DRAWS):
        k = _sglu_constants(rng)
        delta, K, sigma0 = _delta(rng, k.n), int(rng.integers(1, 5)), _log_uniform(rng, 1e-4, 1e3)
        T = int(rng.integers(0, 60)) if bound == "thm3.2" else None
        variant = "paper" if bound == "thm3.2" else bound
        target = sglu.certificate_epsilon(k, sigma0, K, delta, T, variant)
        if not target > sglu.conversion_floor(delta, 1e5) * (1 + 1e-6) or target > 1e6:
            continue  # a target at the floor needs sigma -> infinity; above 1e6 the sigma underflows the bracket
        cert = sglu.certify_sigma(k, target, delta, K, T, variant)
        assert cert.epsilon <= target, (i, k, delta, K, T, sigma0)
        assert cert.epsilon == sglu.certificate_epsilon(k, cert.sigma, K, delta, T, variant)
        assert _close(cert.sigma, sigma0), (i, cert.sigma, sigma0)
        widened += cert.sigma > sglu.SIGMA_BRACKET[1]
    assert widened > 0  # the widened bracket was exercised


@pytest.mark.parametrize("bound", ["thm3.2", "paper", "code_c"])
def test_sglu_certify_sigma_for_random_targets_near_the_floor(bound):
    """Targets drawn just above log(1/delta)/(alpha_max - 1) as well as far above it: always held, or refused."""
    rng = np.random.default_rng(100 + ["thm3.2", "paper", "code_c"].index(bound))
    for _ in range(N_DRAWS):
        k = _sglu_constants(rng)
        delta, K = _delta(rng, k.n), int(rng.integers(1, 4))
        T = int(rng.integers(0, 60)) if bound == "thm3.2" else None
        variant = "paper" if bound == "thm3.2" else bound
        floor = sglu.conversion_floor(delta, 1e5)
        target = floor * (1 + _log_uniform(rng, 1e-2, 1e5))
        cert = sglu.certify_sigma(k, target, delta, K, T, variant)
        assert cert.epsilon <= target and cert.sigma > 0


@pytest.mark.parametrize("bound", ["thm3.2", "paper", "code_b", "code_c"])
def test_sglu_certify_k_is_the_least_k_that_holds(bound):
    rng = np.random.default_rng(200 + ["thm3.2", "paper", "code_b", "code_c"].index(bound))
    held = 0
    for i in range(N_DRAWS):
        k = _sglu_constants(rng)
        delta, sigma = _delta(rng, k.n), _log_uniform(rng, 1e-3, 10)
        T = int(rng.integers(5, 60)) if bound == "thm3.2" else None
        variant = "paper" if bound == "thm3.2" else bound
        target = _log_uniform(rng, 1e-2, 10)
        try:
            cert = sglu.certify_k(k, sigma, target, delta, T, variant)
        except ValueError as err:  # no K <= 1e7 reaches it (the burn-in term, or c close to 1): said, not printed
            assert "no K <= 10000000 reaches" in str(err)
            continue
        held += 1
        assert cert.epsilon <= target, i
        if cert.K > 1:
            assert sglu.certificate_epsilon(k, sigma, cert.K - 1, delta, T, variant) > target, i
    assert held >= N_DRAWS // 2


def test_sglu_sigma_for_budget_matches_certify_sigma_and_holds():
    """The pipeline's Table 3 search (Algorithm 4) and the certify path agree and hold for random inputs."""
    rng = np.random.default_rng(300)
    for _ in range(N_DRAWS // 4):
        k = _sglu_constants(rng)
        delta, T, eps = _delta(rng, k.n), int(rng.integers(0, 60)), _log_uniform(rng, 1e-2, 10)
        sigma = sglu.sigma_for_budget(k, eps, delta, 1, T)
        assert sglu.thm32_epsilon(k, sigma, 1, T, delta) <= eps
        assert sigma == sglu.certify_sigma(k, eps, delta, 1, T).sigma


# ------------------------------------------------------------------------------------------- baselines


def _baseline_constants(rng: np.random.Generator) -> bl.BaselineConstants:
    n = int(rng.integers(100, 20000))
    lam = _log_uniform(rng, 1e-7, 1e-5) * n
    return bl.BaselineConstants(n=n, L=0.25 + lam, m=lam, d=int(rng.integers(1, 1000)), delta=_delta(rng, n),
                                M=float(rng.uniform(0.5, 2)))


def test_lu_sigma_round_trips_and_never_exceeds_the_target():
    rng = np.random.default_rng(400)
    for i in range(N_DRAWS):
        k = _baseline_constants(rng)
        K, S, sigma0 = int(rng.integers(1, 5)), int(rng.integers(1, 4)), _log_uniform(rng, 1e-4, 1e2)
        target = bl.lu_epsilon(k, sigma0, K, S)
        if not target > sglu.conversion_floor(k.delta, bl.LU_ALPHA_SIGMA[1]) * (1 + 1e-6) or target > 1e6:
            continue
        sigma = bl.lu_sigma_for_budget(k, target, K, S)
        assert bl.lu_epsilon(k, sigma, K, S) <= target, i
        assert _close(sigma, sigma0), (i, sigma, sigma0)


def test_d2d_sigma_is_the_gaussian_mechanism_for_its_sensitivity():
    """Theorem L.1's sigma is the Gaussian mechanism's at sensitivity 8 M gamma^I / (m n (1 - gamma^I)): the
    Gaussian epsilon of that sigma is the target (round trip through PDUDT's Def. 4.3 formula)."""
    rng = np.random.default_rng(500)
    for _ in range(N_DRAWS):
        k = _baseline_constants(rng)
        eps, steps = _log_uniform(rng, 1e-3, 10), int(rng.integers(1, 20))
        sigma = bl.d2d_sigma_internal(k, eps, steps)
        g = k.gamma**steps
        sensitivity = 8 * k.M * g / (k.m * k.n * (1 - g))
        assert gaussian.epsilon(sensitivity, sigma, k.delta) == pytest.approx(eps, rel=1e-9)


# ------------------------------------------------------------------------------------------- the float range
# Huge and tiny epsilon, delta, beta, sigma and constants: every certify command prints a finite positive sigma,
# or exits 2 with one stderr line naming the key (and its value), never a traceback. Refusals come from the
# privacy modules (a ValueError naming the argument) before any accountant or root finder runs.

R2D = ["r2d-certify", "--K", "5", "--T", "10", "--eta", "0.01", "--L", "1", "--G", "1", "--m", "1", "--n", "100"]
SGLU = ["sglu-certify", "--n", "1024", "--b", "32"]
PDUDT = ["certify", "--d1", "1", "--beta", "1e-5"]
THM49 = ["certify", "--eta", "0.001", "--L", "1", "--n", "10", "--t1", "10", "--rho1", "0.5", "--rho2", "0.5",
         "--sigma1-sq", "1", "--sigma2-sq", "1", "--df-n", "1", "--df-n1", "1", "--beta", "1e-5", "--epsilon", "1"]
CDFL = ["cdfl-certify", "--m", "10", "--n", "100"]
HUGE_INT = str(10**400)


def _with(base: list[str], *pairs: str) -> list[str]:
    """`base` with each flag's value replaced (or the flag appended): _with(R2D, "--T", "100")."""
    argv = list(base)
    for flag, value in zip(pairs[::2], pairs[1::2]):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


EXTREMES = [  # (command line, the "key = value" a refusal must name)
    (["rrdu-certify", "--epsilon", "1e300"], "epsilon = 1e+300"),
    (["rrdu-certify", "--epsilon", "1e-300"], "epsilon = 1e-300"),
    (["rrdu-certify", "--epsilon", "1.7e308"], "epsilon = 1.7e+308"),
    (["rrdu-certify", "--epsilon", "5e-324"], "epsilon = 4.94066e-324"),
    (["rrdu-certify", "--sigma", "1e-300"], "sigma = 1e-300"),
    (["rrdu-certify", "--sigma", "1e300"], "sigma = 1e+300"),
    (["rrdu-certify", "--sigma", "5e-324"], "sigma = 4.94066e-324"),
    (["rrdu-certify", "--delta", "5e-324"], "delta = 5e-324"),
    (["rrdu-certify", "--L", "1e308"], "L = 1e+308"),
    (["rrdu-certify", "--L", "1e-300", "--sigma", "1"], "sigma = 1"),
    (["rrdu-certify", "--routing-p", "5e-324"], "p = 4.94066e-324"),
    (["rrdu-certify", "--T-u", str(2**53 + 1)], "T_u = 9007199254740993"),
    (["rrdu-certify", "--clients", HUGE_INT], "N (clients) = 1.000e+400"),
    ([*R2D, "--epsilon", "1e300"], "epsilon = 1e+300"),
    ([*R2D, "--epsilon", "1.7e308"], "epsilon = 1.7e+308"),
    ([*R2D, "--epsilon", "1e150"], "epsilon = 1e+150"),
    ([*R2D, "--epsilon", "1e-300"], "epsilon = 1e-300"),  # analytic: sigma tends to the (0, delta) Gaussian's
    ([*R2D, "--epsilon", "5e-324", "--mechanism", "classical"], "epsilon = 4.94066e-324"),
    ([*R2D, "--epsilon", "1e300", "--mechanism", "paper-compat"], "epsilon = 1e+300"),
    ([*R2D, "--epsilon", "1e-300", "--mechanism", "paper-compat"], "epsilon = 1e-300"),
    ([*R2D, "--delta", "5e-324"], "delta = 5e-324"),
    ([*R2D, "--delta", "5e-324", "--mechanism", "classical"], "delta = 5e-324"),
    (_with(R2D, "--T", "100000000"), "T (learning steps) = 100000000"),
    ([*R2D, "--eta", "1e300"], "eta (step size) = 1e+300"),
    ([*R2D, "--L", "1e300"], "L (smoothness) = 1e+300"),
    ([*R2D, "--G", "1e308"], "G = 1e+308"),
    ([*R2D[:1], *R2D[3:], "--sigma", "1e-300", "--epsilon", "1e300"], "epsilon = 1e+300"),
    (_with([*R2D[:1], *R2D[3:]], "--sigma", "1", "--G", "1e-250", "--m", "1e-250"), "m = 1e-250"),
    ([*SGLU, "--epsilon", "1e300", "--K", "1"], "epsilon = 1e+300"),
    ([*SGLU, "--epsilon", "1e-300", "--K", "1"], "epsilon = 1e-300"),
    ([*SGLU, "--epsilon", "1", "--sigma", "1e-300"], "sigma = 1e-300"),
    ([*SGLU, "--epsilon", "1", "--sigma", "1e300"], "sigma = 1e+300"),
    ([*SGLU, "--epsilon", "1", "--sigma", "1e-150", "--L", "1e300", "--m", "1e300"], "sigma = 1e-150"),
    ([*SGLU, "--epsilon", "1", "--K", "1", "--delta", "5e-324"], "delta = 5e-324"),
    ([*SGLU, "--epsilon", "1", "--K", "1", "--lam-per-n", "1e-300"], "lam_per_n = 1e-300"),
    ([*SGLU, "--epsilon", "1", "--K", "1", "--L", "1e300", "--m", "0.01"], "L = 1e+300"),
    ([*SGLU, "--epsilon", "1", "--sigma", "1", "--L", "1", "--m", "1e-300", "--variant", "C"], "m = 1e-300"),
    ([*SGLU, "--epsilon", "1", "--K", "1", "--R", "1e300", "--burn-in", "10"], "R = 1e+300"),
    ([*SGLU, "--epsilon", "1", "--K", "1", "--M", "1e300"], "epsilon 1"),  # Z overflows: no sigma reaches it
    ([*SGLU, "--epsilon", "1", "--K", HUGE_INT], "K = 1.000e+400"),
    ([*CDFL, "--epsilon", "1e300"], "epsilon = 1e+300"),
    ([*CDFL, "--epsilon", "1e-320"], "epsilon = 9.99989e-321"),
    ([*CDFL, "--delta", "5e-324"], "delta = 5e-324"),
    ([*CDFL, "--sigma", "1e-300"], "sigma = 1e-300"),
    ([*CDFL, "--c-eff", "5e-324"], "c_eff = 4.94066e-324"),
    ([*CDFL, "--c-eff", "1e308"], "sensitivity (Delta F) = 1.5724e+305"),
    ([*CDFL, "--M", "1", "--L", "1e300", "--lam", "1"], "L = 1e+300"),
    ([*CDFL, "--M", "1", "--L", "1", "--lam", "1e-300"], "lambda = 1e-300"),
    ([*CDFL, "--M", "1", "--L", "1e-300", "--lam", "1"], "L = 1e-300"),
    ([*CDFL, "--requesters", "2", "--clients-total", HUGE_INT], "N (clients) = 1.000e+400"),
    ([*PDUDT, "--epsilon", "1e300"], "epsilon = 1e+300"),
    ([*PDUDT, "--epsilon", "1.7e308"], "epsilon = 1.7e+308"),
    ([*PDUDT, "--epsilon", "1e-300"], "epsilon = 1e-300"),
    ([*PDUDT, "--sigma", "1e-300"], "sigma = 1e-300"),
    ([*PDUDT, "--sigma", "1e300"], "sigma = 1e+300"),
    ([*PDUDT, "--epsilon", "1", "--beta", "5e-324"], "beta = 5e-324"),
    (_with(PDUDT, "--d1", "1e308", "--sigma", "1"), "d1 = 1e+308"),
    (_with(THM49, "--eta", "1e300"), "eta = 1e+300"),
    (_with(THM49, "--L", "1e300"), "L = 1e+300"),
    (_with(THM49, "--rho1", "1e-300"), "rho1 = 1e-300"),
    (_with(THM49, "--n", HUGE_INT), "n = 1.000e+400"),
]


def _finite_positive_output(out: str) -> None:
    """A certify command's success: no inf or nan anywhere, and every printed sigma positive."""
    assert not re.search(r"\b(inf|nan)\b", out), out
    for value in re.findall(r"sigma = ([^\s,;:()]+)", out):
        assert math.isfinite(float(value)) and float(value) > 0, out


@pytest.mark.parametrize("argv, key", EXTREMES, ids=[f"{argv[0]}: {key}" for argv, key in EXTREMES])
def test_certify_commands_print_a_finite_sigma_or_one_line_naming_the_key(argv, key, capsys):
    with warnings.catch_warnings():  # on the command line a RuntimeWarning (numpy overflow) is one more line
        warnings.simplefilter("error", RuntimeWarning)
        code = main(argv)  # a traceback would raise here
    out, err = capsys.readouterr()
    if code == 0:
        assert err == ""
        _finite_positive_output(out)
        return
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert key in lines[0], lines[0]


@pytest.mark.parametrize("argv, key", [
    (["rrdu-certify", "--epsilon", "1e300"], "--epsilon: epsilon = 1e+300"),
    ([*R2D, "--epsilon", "1e300"], "--epsilon: epsilon = 1e+300"),
    ([*CDFL, "--epsilon", "1e-320"], "--epsilon: epsilon = 9.99989e-321"),
    ([*SGLU, "--epsilon", "1", "--sigma", "1e-300"], "sigma = 1e-300"),
    ([*PDUDT, "--epsilon", "1.7e308"], "epsilon = 1.7e+308"),
], ids=["rrdu", "r2d", "cdfl", "sglu", "pdudt"])
def test_certify_command_line_refuses_an_extreme_epsilon_with_one_line(argv, key):
    """`python -m unlearning <certify> ...` itself: exit 2, one stderr line naming the flag and key, no traceback."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "unlearning", *argv], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}"), run.stderr


def _refusal(err: ValueError) -> str:
    """A refusal's message: one line whose head (before the first ': ') names a key and its value."""
    message = str(err)
    assert "\n" not in message and "Traceback" not in message
    assert re.search(r"[\w)] (= |for \w+ = )", message.split(": ")[0]), message
    return message


def _draw_float(rng: np.random.Generator) -> float:
    """Anywhere in the positive floats, subnormals and the largest values included."""
    return float(rng.choice([5e-324, 1e-320, 2.2250738585072014e-308, 1.7976931348623157e308, 1e308,
                             _log_uniform(rng, 1e-300, 1e300), _log_uniform(rng, 1e-6, 1e6)]))


def test_sigma_helpers_return_a_finite_positive_sigma_or_refuse_with_one_line():
    """Log-uniform draws over the whole float range for every closed-form and root-found sigma: a finite sigma
    (positive when the sensitivity is), or a one-line ValueError naming the argument, never another error."""
    rng = np.random.default_rng(20300)
    calls = [
        ("rrdu", lambda e, d, s: rrdu_noise.sigma_closed_form(s, e, d, float(rng.uniform(1e-3, 1)),
                                                              int(rng.integers(1, 10**6)), int(rng.integers(2, 100)))),
        ("analytic", lambda e, d, s: r2d_noise.mechanism_sigma("analytic", e, d, s)),
        ("classical", lambda e, d, s: r2d_noise.mechanism_sigma("classical", min(e, 1.0), d, s)),
        ("paper-compat", lambda e, d, s: r2d_noise.mechanism_sigma("paper-compat", e, d, s)),
        ("du", lambda e, d, s: du_noise.sigma(s, min(e, 1.0), d)),
        ("du c_eff", lambda e, d, s: du_noise.sigma_c_eff(float(rng.uniform(0.01, 1)), min(e, 1.0), d, s)),
        ("gaussian", lambda e, d, s: gaussian.sigma_for(s, e, d)),
    ]
    outcomes = {name: [0, 0] for name, _ in calls}
    for i in range(N_DRAWS * 2):
        eps, scale = _draw_float(rng), _draw_float(rng)
        delta = 1 - 2**-53 if rng.uniform() < 0.05 else min(_draw_float(rng), 0.999)
        for name, call in calls:
            try:
                sigma = call(eps, delta, scale)
            except ValueError as err:
                _refusal(err)
                outcomes[name][1] += 1
                continue
            assert math.isfinite(sigma) and sigma > 0, (name, i, eps, delta, scale, sigma)
            outcomes[name][0] += 1
    for name, (held, refused) in outcomes.items():
        assert held > 0 and refused > 0, (name, held, refused)


def test_epsilon_of_a_sigma_is_finite_or_refused_with_one_line():
    """The inverse direction: the epsilon a sigma buys (PDUDT, CDFL) or its nominal epsilon's accountant range (RR-DU,
    refused before Opacus runs) for sigmas anywhere in the float range."""
    rng = np.random.default_rng(20301)
    for _ in range(N_DRAWS * 2):
        sigma, scale, beta = _draw_float(rng), _draw_float(rng), min(_draw_float(rng), 0.999)
        for call, args in ((gaussian.epsilon, (scale, sigma, beta)), (du_noise.epsilon_for, (sigma, scale, beta))):
            try:
                value = call(*args)
            except ValueError as err:
                _refusal(err)
                continue
            assert math.isfinite(value) and value >= 0
        L, T_u = _draw_float(rng), int(rng.integers(1, 10**6))
        lo, hi = rrdu_noise.multiplier_range(T_u)
        if not lo <= sigma / L <= hi:
            with pytest.raises(ValueError, match=r"^sigma = .*valid: sigma in"):
                rrdu_noise.nominal_epsilon(sigma, L, 1e-5, 0.1, T_u, 10)


def test_rrdu_refuses_before_the_accountant_and_its_stated_range_holds(monkeypatch):
    """Cor. 5.2's sigma for epsilon 1e300 underflows the accountants' range: refused naming epsilon, without Opacus;
    the epsilons the message calls valid give a sigma in range, and the accountant's ends are finite."""
    def accountant(*args, **kwargs):
        raise AssertionError("the accountant ran")

    monkeypatch.setattr(rrdu_noise, "rdp_subsampled_gaussian", accountant)
    for eps in (1e300, 1e-300, 1.7e308, 5e-324):
        with pytest.raises(ValueError) as err:
            rrdu_noise.sigma_closed_form(0.5, eps, 1e-5)
        message = _refusal(err.value)
        assert message.startswith(f"epsilon = {eps:g} (L = 0.5, ")
        lo, hi = (float(v) for v in re.search(r"valid: epsilon in \[([^,]+), ([^\]]+)\]", message).groups())
        z_lo, z_hi = rrdu_noise.multiplier_range(100)
        for e in (lo * (1 + 1e-12), math.sqrt(lo * hi), hi * (1 - 1e-12)):
            assert z_lo <= rrdu_noise.sigma_closed_form(0.5, e, 1e-5) / 0.5 <= z_hi
    for sigma in (1e-300, 1e300):
        with pytest.raises(ValueError, match=rf"^{re.escape(f'sigma = {sigma:g}')}: the noise multiplier"):
            rrdu_noise.nominal_epsilon(sigma, 0.5, 1e-5)
    monkeypatch.undo()
    for z in rrdu_noise.multiplier_range(100):  # both ends of the range are evaluated in floating point
        cert = rrdu_noise.nominal_epsilon(0.5 * z, 0.5, 1e-5)
        values = [v for k, v in cert.as_dict().items() if k not in ("sigma", "label")]
        assert all(math.isfinite(v) for v in values), cert


def test_r2d_analytic_epsilon_range_refuses_before_the_root_find(monkeypatch):
    """The reported crash: epsilon = 1e300 made brentq fail to converge (the bracket spans 150 decades) and 1e150
    overflowed exp(); both are refused naming epsilon before any root finding or sensitivity; the largest epsilon
    accepted still certifies delta."""
    def never(*args, **kwargs):
        raise AssertionError("ran before the refusal")

    with monkeypatch.context() as patch:
        patch.setattr("scipy.optimize.brentq", never)  # imported where the root find runs
        patch.setattr(r2d_noise, "sensitivity", never)
        for eps in (1e300, 1e150, 1e20, 1.7e308):
            key = re.escape(f"epsilon = {eps:g}")
            with pytest.raises(ValueError, match=rf"^{key}: .*valid: 0 < epsilon <= 1e\+12"):
                r2d_noise.sigma(eps, 0.1, 5, 10, 0.01, 1, 1, 1, 100)
            with pytest.raises(ValueError, match=rf"^{key}: .*valid: 0 < epsilon <= 709\.78"):
                r2d_noise.sigma(eps, 0.1, 5, 10, 0.01, 1, 1, 1, 100, mechanism="paper-compat")
            with pytest.raises(ValueError, match=rf"^{key}:"):
                r2d_noise.least_k(1.0, eps, 0.1, 10, 0.01, 1, 1, 1, 100)
    for delta in (1e-300, 1e-5, 0.1, 0.9):
        s = r2d_noise.analytic_sigma(r2d_noise.ANALYTIC_EPSILON_MAX, delta, 1.0)
        assert math.isfinite(s) and s > 0 and r2d_noise.analytic_delta(r2d_noise.ANALYTIC_EPSILON_MAX, s, 1.0) <= delta
        s = r2d_noise.analytic_sigma(1e-300, delta, 1.0)  # epsilon -> 0: the (0, delta) Gaussian mechanism's sigma
        assert math.isfinite(s) and s > 0 and r2d_noise.analytic_delta(1e-300, s, 1.0) <= delta


def test_r2d_h_refuses_what_overflows_and_keeps_what_does_not():
    """h(K)'s exponent (T-K) log(1+a) + K log(1+eta L) beyond 709.78 is refused naming T, eta and L (it raised
    OverflowError, or returned inf); just below, h is the same finite number as before."""
    with pytest.raises(ValueError, match=r"^T \(learning steps\) = 100000000, eta \(step size\) = 0\.01"):
        r2d_noise.h(5, 10**8, 0.01, 1, 1, 100)
    a = 0.01 * 100 / 99
    T = int(700 / math.log1p(a))
    assert r2d_noise.h(0, T, 0.01, 1, 1, 100) == math.expm1(T * math.log1p(a))
    with pytest.raises(ValueError, match=r"^T \(learning steps\)"):
        r2d_noise.h(0, 2 * T, 0.01, 1, 1, 100)


def test_sglu_float_range_is_refused_naming_the_key():
    k = sglu.logistic_constants(1024, 32)
    with pytest.raises(ValueError, match=r"^sigma = 1e-300: 2 eta sigma\^2 .*valid: sigma >= 5\.28"):
        sglu.certify_k(k, 1e-300, 1.0, 1 / 1024)
    big = sglu.Constants(n=1024, b=32, L=1e300, m=1e300)  # eta = 1e-300: sigma = 1e-150 underflowed 2 eta sigma^2
    with pytest.raises(ValueError, match=r"^sigma = 1e-150: 2 eta sigma\^2 \(eta = 1e-300\)"):
        sglu.certify_k(big, 1e-150, 1.0, 1 / 1024)
    with pytest.raises(ValueError, match=r"^lam_per_n = 1e-300: .*valid: lam_per_n >= "):
        sglu.logistic_constants(1024, 32, 1e-300)
    with pytest.raises(ValueError, match=r"^m = 1e-300, L = 1: .*valid: eta m >= 2\^-53"):
        sglu.Constants(n=1024, b=32, L=1.0, m=1e-300)
    with pytest.raises(ValueError, match=r"^R = 1e\+300: .*valid: R <= "):
        sglu.logistic_constants(1024, 32, R=1e300)
    cert = sglu.certify_sigma(k, 1e300, 1 / 1024, 1)  # any noise does: the bisection's least sigma
    assert 0 < cert.sigma <= 1e-7 and cert.epsilon <= 1e300


def test_float_range_validators():
    """delta / beta below the least normal float (1/delta overflows) and counts above 2^53 are refused."""
    with pytest.raises(ValueError, match=r"^delta = 5e-324: .*valid: a number >= 2\.22507e-308 and < 1"):
        probability("delta", 5e-324)
    assert probability("delta", 2.2250738585072014e-308) == 2.2250738585072014e-308
    assert integer("T", COUNT_MAX) == COUNT_MAX
    with pytest.raises(ValueError, match=r"^T = 9007199254740993: valid: an integer >= 1 and <= 9007199254740992"):
        integer("T", COUNT_MAX + 1)
    with pytest.raises(ValueError, match=r"^T = 1\.000e\+400: "):
        integer("T", 10**400)
