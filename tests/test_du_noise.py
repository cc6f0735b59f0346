"""DU's noise calibration (Algorithm 1, Lemma 3 eq. 9-10, Theorem 1), pinned to the printed reference values."""

from __future__ import annotations

import math

import pytest

from unlearning.privacy import du_noise as dn


@pytest.mark.parametrize("delta, factor", [(1e-5, 4.8448), (1e-4, 4.3436), (1e-3, 3.7765)])
def test_gaussian_factor_reference_values(delta, factor):
    assert dn.gaussian_factor(delta) == pytest.approx(factor, abs=5e-5)


def test_sigma_reference_value():
    """Delta F = 0.02, epsilon 1, delta 1e-5 -> sigma 0.096896 (0.09690)."""
    assert dn.sigma(0.02, 1.0, 1e-5) == pytest.approx(0.096896, abs=5e-7)
    assert round(dn.sigma(0.02, 1.0, 1e-5), 5) == 0.09690


def test_sensitivity_is_lemma_3():
    # 2 M L^2 m^2 / (lambda^3 n^2) with M = 1, L = 1, lambda = 1, m/n = 0.1: 2 * 0.01
    assert dn.sensitivity(1.0, 1.0, 1.0, 10, 100) == pytest.approx(0.02)
    assert dn.sigma_theory(1.0, 1.0, 1.0, 10, 100, 1.0, 1e-5) == pytest.approx(0.096896, abs=5e-7)
    # scaling: quadratic in m/n and L, linear in M, inverse cubic in lambda
    base = dn.sensitivity(2.0, 3.0, 0.5, 7, 90)
    assert dn.sensitivity(2.0, 3.0, 0.5, 14, 90) == pytest.approx(4 * base)
    assert dn.sensitivity(2.0, 6.0, 0.5, 7, 90) == pytest.approx(4 * base)
    assert dn.sensitivity(4.0, 3.0, 0.5, 7, 90) == pytest.approx(2 * base)
    assert dn.sensitivity(2.0, 3.0, 1.0, 7, 90) == pytest.approx(base / 8)
    assert dn.sensitivity(1.0, 1.0, 1.0, 0, 100) == 0.0


def test_client_wise_sensitivity_replaces_m_over_n_by_one_over_n():
    assert dn.sensitivity_client(1.5, 2.0, 0.3, 10) == pytest.approx(dn.sensitivity(1.5, 2.0, 0.3, 1, 10))


def test_c_eff_default_gives_sigma_1e_3_at_a_tenth():
    assert dn.C_EFF == 0.02064
    assert dn.c_eff_for(1e-3, 0.1, 1.0, 1e-5) == pytest.approx(0.02064, abs=5e-6)
    assert dn.sigma_c_eff(0.1, 1.0, 1e-5) == pytest.approx(1e-3, rel=1e-3)
    # client-wise: (1/N)^2 with N = 10 is the same
    assert dn.sigma_c_eff(1 / 10, 1.0, 1e-5) == dn.sigma_c_eff(0.1, 1.0, 1e-5)
    # sigma ~ 0.1 (m/n)^2 at epsilon 1, delta 1e-5
    assert dn.sigma_c_eff(0.3, 1.0, 1e-5) == pytest.approx(0.1 * 0.09, rel=1e-3)


def test_epsilon_for_inverts_sigma():
    s = dn.sigma(0.02, 0.5, 1e-5)
    assert dn.epsilon_for(s, 0.02, 1e-5) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"epsilon = .* > 1.*valid: sigma >= 0.0968"):
        dn.epsilon_for(0.05, 0.02, 1e-5)


def test_certified_noise_fix_makes_the_final_noise_sigma():
    assert dn.noise_scale(10, 4, False) == 1.0
    assert dn.noise_scale(10, 4, True) == pytest.approx(10 / 2)
    # Algorithm 1 as printed: sigma sqrt(|C|) / N; with the fix: sigma
    assert dn.final_noise_std(1.0, 10, 10, False) == pytest.approx(1 / math.sqrt(10))
    assert dn.final_noise_std(1.0, 10, 1, False) == pytest.approx(0.1)
    for requesters in (1, 3, 10):
        assert dn.final_noise_std(0.7, 10, requesters, True) == pytest.approx(0.7)


@pytest.mark.parametrize("call, name, valid", [
    (lambda: dn.sigma(0.02, 0.0, 1e-5), "epsilon", "> 0 and <= 1"),
    (lambda: dn.sigma(0.02, -1.0, 1e-5), "epsilon", "> 0 and <= 1"),
    (lambda: dn.sigma(0.02, 2.0, 1e-5), "epsilon", "> 0 and <= 1"),
    (lambda: dn.sigma(0.02, 1.0, 0.0), "delta", "> 0 and < 1"),
    (lambda: dn.sigma(0.02, 1.0, 1.0), "delta", "> 0 and < 1"),
    (lambda: dn.sigma(-0.1, 1.0, 1e-5), "sensitivity", ">= 0"),
    (lambda: dn.sensitivity(1.0, 1.0, 0.0, 1, 10), "lambda", "> 0"),
    (lambda: dn.sensitivity(1.0, 1.0, -1e-3, 1, 10), "lambda", "> 0"),
    (lambda: dn.sensitivity(0.0, 1.0, 1.0, 1, 10), "M", "> 0"),
    (lambda: dn.sensitivity(1.0, -2.0, 1.0, 1, 10), "L", "> 0"),
    (lambda: dn.sensitivity(1.0, 1.0, 1.0, 11, 10), "m", "0 <= m <= n"),
    (lambda: dn.sensitivity(1.0, 1.0, 1.0, -1, 10), "m", ">= 0"),
    (lambda: dn.sensitivity(1.0, 1.0, 1.0, 1, 0), "n", ">= 1"),
    (lambda: dn.sensitivity(1.0, 1.0, 1.0, 1.5, 10), "m", "integer"),
    (lambda: dn.sensitivity(1.0, float("nan"), 1.0, 1, 10), "L", "> 0"),
    (lambda: dn.sigma_c_eff(1.5, 1.0, 1e-5), "m/n", "<= 1"),
    (lambda: dn.sigma_c_eff(0.1, 1.0, 1e-5, c_eff=0.0), "c_eff", "> 0"),
    (lambda: dn.noise_scale(10, 11, True), "|C| (requesting clients)", "<= N"),
    (lambda: dn.noise_scale(10, 1, "yes"), "certified_noise_fix", "true or false"),
])
def test_invalid_inputs_name_the_argument_and_the_range(call, name, valid):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and message.startswith(name) and valid in message
