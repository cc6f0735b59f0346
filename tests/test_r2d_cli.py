"""r2d-certify: R2D's sigma (Theorem 3.1, analytic or classical Gaussian), the least K for a sigma with Corollary
3.2's bound, and one-line refusals naming the flag."""

from __future__ import annotations

import pytest

from unlearning.__main__ import main

EICU = ["--eta", "4.638e-4", "--L", "0.14394", "--G", "1.70994", "--n", "94449"]


def certify(capsys, *argv):
    rc = main(["r2d-certify", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_sigma_from_epochs_matches_the_table(capsys):
    """eICU K_ep = 11 at epsilon 40: sigma 0.0213 (spec 2.6), h = 0.740758 (K = 2035 steps, T = 9435)."""
    rc, out, _ = certify(capsys, *EICU, "--m", "899", "--epsilon", "40", "--K-epochs", "11", "--E-sel", "52",
                         "--steps-per-epoch", "185")
    assert rc == 0 and "T = 9435" in out and "K = 2035" in out and "h(K) = 0.740758" in out
    assert round(float(out.split("sigma = ")[1]), 4) == 0.0213


def test_sigma_from_steps_and_the_mechanisms(capsys):
    rc, out, _ = certify(capsys, *EICU, "--m", "899", "--epsilon", "0.1", "--K", "1110", "--T", "9435")
    assert rc == 0 and "analytic Gaussian" in out and round(float(out.split("sigma = ")[1]), 4) == 0.5218
    rc, out, _ = certify(capsys, *EICU, "--m", "899", "--epsilon", "40", "--K", "1110", "--T", "9435",
                         "--mechanism", "paper-compat")
    assert rc == 0 and round(float(out.split("sigma = ")[1]), 4) == 0.0236
    rc, out, _ = certify(capsys, *EICU, "--m", "899", "--epsilon", "1", "--K", "1110", "--T", "9435",
                         "--mechanism", "classical")
    assert rc == 0 and "classical" in out and float(out.split("sigma = ")[1]) > 0.4


def test_least_k_for_a_sigma(capsys):
    """Figure 1(c), eICU at epsilon 0.6, sigma 0.01, m = 944.49: K = 9346, Corollary 3.2 bound 9346.5."""
    rc, out, _ = certify(capsys, *EICU, "--m", "944.49", "--epsilon", "0.6", "--T", "9435", "--sigma", "0.01",
                         "--mechanism", "classical")
    assert rc == 0 and "least K = 9346 steps" in out and "K <= 9346.5" in out


@pytest.mark.parametrize("argv, flag", [
    (["--m", "899", "--K", "10", "--T", "9435", "--epsilon", "0"], "--epsilon"),
    (["--m", "899", "--K", "10", "--T", "9435", "--epsilon", "x"], "--epsilon"),
    (["--m", "899", "--K", "10", "--T", "9435", "--epsilon", "2", "--mechanism", "classical"], "--epsilon"),
    (["--m", "899", "--K", "10", "--T", "9435", "--delta", "0"], "--delta"),
    (["--m", "899", "--K", "10", "--T", "9435", "--delta", "1.5"], "--delta"),
    (["--m", "899", "--K", "9436", "--T", "9435"], "--K"),
    (["--m", "899", "--K", "-1", "--T", "9435"], "--K"),
    (["--m", "899", "--T", "9435"], "--K"),
    (["--m", "899", "--K", "10"], "--T"),
    (["--m", "899", "--K-epochs", "52", "--E-sel", "52", "--steps-per-epoch", "185"], "--K-epochs"),
    (["--m", "899", "--K-epochs", "5", "--E-sel", "52"], "--E-sel"),
    (["--m", "899", "--K", "10", "--T", "9435", "--mechanism", "laplace"], "--mechanism"),
    (["--m", "-1", "--K", "10", "--T", "9435"], "--m"),
    (["--m", "100000", "--K", "10", "--T", "9435"], "--m"),
    (["--m", "899", "--T", "9435", "--sigma", "0"], "--sigma"),
    (["--m", "899", "--K", "10", "--T", "9435", "--sigma", "0.1"], "--K"),
])
def test_bad_input_is_refused_in_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = certify(capsys, *EICU, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {flag}")


@pytest.mark.parametrize("flag", ["--G", "--L"])
def test_negative_constants_are_refused(capsys, flag):
    argv = [*EICU, "--m", "899", "--K", "10", "--T", "9435"]
    argv[argv.index(flag) + 1] = "-1"
    rc, _, err = certify(capsys, *argv)
    assert rc == 2 and err.startswith(f"error: {flag}") and "valid" in err
