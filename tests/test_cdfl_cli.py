"""cdfl-certify: DU's sigma (Algorithm 1, Theorem 1) from the paper's constants or C_eff, the epsilon a sigma buys,
and one-line refusals naming the flag."""

from __future__ import annotations

import pytest

from unlearning.__main__ import main


def certify(capsys, *argv):
    rc = main(["cdfl-certify", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_sigma_from_the_papers_constants(capsys):
    """Delta F = 2 M L^2 m^2 / (lambda^3 n^2) = 0.02 at M = L = lambda = 1, m/n = 0.1 -> sigma 0.096896 (spec 3.5)."""
    rc, out, _ = certify(capsys, "--M", "1", "--L", "1", "--lam", "1", "--m", "10", "--n", "100")
    assert rc == 0
    assert "Delta F = 0.02 " in out and "sqrt(2 ln(1.25/delta)) = 4.84481" in out and "sigma = 0.0968961" in out


@pytest.mark.parametrize("delta, factor", [("1e-4", 4.3436), ("1e-3", 3.7765)])
def test_the_gaussian_factor_at_other_deltas(capsys, delta, factor):
    rc, out, _ = certify(capsys, "--m", "1", "--n", "10", "--delta", delta)
    printed = float(out.split("sqrt(2 ln(1.25/delta)) = ")[1].split(";")[0])
    assert rc == 0 and printed == pytest.approx(factor, abs=5e-5)


def test_sigma_from_c_eff_sample_and_client_wise(capsys):
    rc, out, _ = certify(capsys, "--m", "600", "--n", "6000")
    assert rc == 0 and "C_eff = 0.02064" in out and "sigma = 0.000999968" in out
    rc, out, _ = certify(capsys, "--clients", "10")
    assert rc == 0 and "1/N = 0.1" in out and "sigma = 0.000999968" in out
    rc, out, _ = certify(capsys, "--m", "600", "--n", "6000", "--c-eff", "0.04128")
    assert rc == 0 and "sigma = 0.00199994" in out


def test_the_epsilon_a_sigma_buys(capsys):
    rc, out, _ = certify(capsys, "--M", "1", "--L", "1", "--lam", "1", "--m", "10", "--n", "100", "--sigma", "0.2")
    assert rc == 0 and "buys epsilon = 0.484481" in out


def test_final_model_noise_with_and_without_the_fix(capsys):
    rc, out, _ = certify(capsys, "--m", "600", "--n", "6000", "--requesters", "10", "--clients-total", "10")
    assert rc == 0 and "noise std = 0.000316218" in out and "certified_noise_fix off" in out
    rc, out, _ = certify(capsys, "--m", "600", "--n", "6000", "--requesters", "10", "--clients-total", "10",
                         "--certified-noise-fix")
    assert rc == 0 and "noise std = 0.000999968" in out


@pytest.mark.parametrize("argv, flag", [
    (["--m", "10", "--n", "100", "--epsilon", "0"], "--epsilon"),
    (["--m", "10", "--n", "100", "--epsilon", "1.5"], "--epsilon"),
    (["--m", "10", "--n", "100", "--epsilon", "one"], "--epsilon"),
    (["--m", "10", "--n", "100", "--delta", "0"], "--delta"),
    (["--m", "10", "--n", "100", "--delta", "1.2"], "--delta"),
    (["--m", "10", "--n", "100", "--M", "1", "--L", "1", "--lam", "0"], "--lam"),
    (["--m", "10", "--n", "100", "--M", "-1", "--L", "1", "--lam", "1"], "--M"),
    (["--m", "10", "--n", "100", "--M", "1", "--L", "0", "--lam", "1"], "--L"),
    (["--m", "10", "--n", "100", "--M", "1"], "--M/--L/--lam"),
    (["--m", "101", "--n", "100"], "--m"),
    (["--m", "2.5", "--n", "100"], "--m"),
    (["--m", "1", "--n", "0"], "--n"),
    (["--m", "10"], "--m/--n"),
    (["--clients", "1"], "--clients"),
    (["--clients", "10", "--m", "1"], "--clients"),
    (["--m", "10", "--n", "100", "--c-eff", "-2"], "--c-eff"),
    (["--m", "10", "--n", "100", "--sigma", "0.0001"], "--sigma"),
    (["--m", "10", "--n", "100", "--sigma", "0"], "--sigma"),
    (["--m", "10", "--n", "100", "--certified-noise-fix"], "--requesters"),
])
def test_bad_input_is_refused_in_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = certify(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {flag}")


def test_missing_reasons_parse_and_refuse_a_malformed_item():
    from unlearning.experiments.common.cli import missing_reasons

    assert missing_reasons(["mnist=not on disk: data/raw/MNIST", "cifar10=a=b"]) == {
        "mnist": "not on disk: data/raw/MNIST", "cifar10": "a=b"}
    with pytest.raises(ValueError, match="--missing 'mnist': valid: dataset=reason"):
        missing_reasons(["mnist"])
