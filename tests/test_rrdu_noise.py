"""RR-DU's closed-form sigma (Cor. 5.2, constant 1) against spec 2.5's table, and the nominal epsilon of
accountants A, B and C from the library's RDP curve (spec 2.5 and its 2026-11-23 measurement)."""

from __future__ import annotations

import math

import pytest

from unlearning.privacy import rrdu_noise as rn

# spec 2.5's table: (L, epsilon, delta) -> sigma at p = 0.1, T_u = 100, N = 10
TABLE = [
    (0.5, 1.0, 1e-5, 2.5744), (0.2, 1.0, 1e-5, 1.0297),
    (0.5, 0.1, 1e-5, 25.744), (0.2, 0.1, 1e-5, 10.297),
    (0.5, 0.5, 1e-5, 5.1487), (0.2, 0.5, 1e-5, 2.0595),
    (0.5, 2.0, 1e-5, 1.2872), (0.2, 2.0, 1e-5, 0.5149),
    (0.5, 10.0, 1e-5, 0.2574), (0.2, 10.0, 1e-5, 0.103),
    (0.5, 1.0, 1e-4, 2.3026), (0.2, 1.0, 1e-4, 0.9210),
    (0.5, 1.0, 1e-6, 2.8201), (0.2, 1.0, 1e-6, 1.1280),
    (0.1, 1.0, 1e-5, 0.5149), (0.2, 1.0, 1e-5, 1.0297), (0.5, 1.0, 1e-5, 2.5744),
    (0.7, 1.0, 1e-5, 3.6041), (1.0, 1.0, 1e-5, 5.1487),
]


@pytest.mark.parametrize("L, eps, delta, sigma", TABLE)
def test_sigma_table(L, eps, delta, sigma):
    """Equal to the table's printed digits (half a unit of its last decimal)."""
    decimals = len(repr(sigma).split(".")[1])
    assert rn.sigma_closed_form(L, eps, delta) == pytest.approx(sigma, abs=0.5 * 10**-decimals + 1e-12)


def test_sigma_scales_as_sqrt_p_tu_and_not_with_m():
    base = rn.sigma_closed_form(0.5, 1.0, 1e-5, p=0.1, T_u=100, N=10)
    assert rn.sigma_closed_form(0.5, 1.0, 1e-5, p=0.4, T_u=100, N=10) == pytest.approx(2 * base)
    assert rn.sigma_closed_form(0.5, 1.0, 1e-5, p=0.1, T_u=400, N=10) == pytest.approx(2 * base)
    assert rn.sigma_closed_form(0.5, 1.0, 1e-5, p=0.0) == 0.0


def test_accountants_at_the_defaults():
    """A: 1.001 classic (spec), 0.8075 library (dated measurement); B = A's curve x ln N/N: 0.498 classic;
    C: a + 2 sqrt(a ln(1/delta)) = 2.087."""
    s = rn.sigma_closed_form(0.5, 1.0, 1e-5)
    e = rn.nominal_epsilon(s, 0.5, 1e-5)
    assert e.a_classic == pytest.approx(1.00, abs=0.03)
    assert e.a_library == pytest.approx(0.81, abs=0.01)
    assert e.b_classic == pytest.approx(0.498, abs=0.005)
    assert e.c_classic == pytest.approx(2.087, abs=0.005)
    assert e.a_library <= e.a_classic and e.b_library <= e.b_classic and e.c_library <= e.c_classic * 1.001
    assert e.label == "nominal epsilon (Alg. 4 SGD semantics)" and "nominal epsilon" in e.line()


@pytest.mark.parametrize("eps, expected", [(0.1, 0.094), (0.5, 0.482), (2.0, 2.197)])
def test_accountant_a_at_other_targets(eps, expected):
    """Spec 2.5: the closed form over-noises at small epsilon and under-noises at large."""
    s = rn.sigma_closed_form(0.5, eps, 1e-5)
    assert rn.nominal_epsilon(s, 0.5, 1e-5).a_classic == pytest.approx(expected, abs=0.005)


def test_accountant_c_needs_10_52_L_for_epsilon_1():
    assert rn.nominal_epsilon(10.52 * 0.5, 0.5, 1e-5).c_classic == pytest.approx(1.0, abs=0.005)


def test_dpsgd_noise_multiplier():
    """q = 256/60000, 100 steps, (1, 1e-5): classic 1.10 (spec 2.6), library 0.95 (dated measurement)."""
    lib, classic = rn.dpsgd_noise_multiplier(256 / 60000, 100, 1.0, 1e-5)
    assert classic == pytest.approx(1.10, abs=0.01)
    assert lib == pytest.approx(0.95, abs=0.01)
    # the classic z indeed reaches the target, and a 2% smaller one does not
    curve = rn.rdp_subsampled_gaussian(256 / 60000, classic, 100)
    assert rn.classic_epsilon(curve, 1e-5) <= 1.0
    assert rn.classic_epsilon(rn.rdp_subsampled_gaussian(256 / 60000, 0.98 * classic, 100), 1e-5) > 1.0


@pytest.mark.parametrize("call, name", [
    (lambda: rn.sigma_closed_form(0.5, 1.0, 1e-5, p=1.5), "p"),
    (lambda: rn.sigma_closed_form(0.5, 1.0, 1e-5, p=-0.1), "p"),
    (lambda: rn.sigma_closed_form(0.0, 1.0, 1e-5), "L"),
    (lambda: rn.sigma_closed_form(-1.0, 1.0, 1e-5), "L"),
    (lambda: rn.sigma_closed_form(0.5, 0.0, 1e-5), "epsilon"),
    (lambda: rn.sigma_closed_form(0.5, 1.0, 0.0), "delta"),
    (lambda: rn.sigma_closed_form(0.5, 1.0, 1.0), "delta"),
    (lambda: rn.sigma_closed_form(0.5, 1.0, 1e-5, T_u=0), "T_u"),
    (lambda: rn.sigma_closed_form(0.5, 1.0, 1e-5, N=1), "N (clients)"),
    (lambda: rn.check_rho(0.0), "rho"),
    (lambda: rn.check_rho(-2.0), "rho"),
    (lambda: rn.nominal_epsilon(0.0, 0.5, 1e-5), "sigma"),
    (lambda: rn.dpsgd_noise_multiplier(0.0, 100), "sample_rate"),
])
def test_bad_input_names_the_argument_and_range(call, name):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert message.startswith(f"{name} = ") and "valid:" in message and "\n" not in message


def test_rho_none_is_no_projection():
    assert rn.check_rho(None) is None and rn.check_rho(10.82) == 10.82
    assert math.isclose(rn.check_p(0.0), 0.0) and rn.check_p(1.0) == 1.0
