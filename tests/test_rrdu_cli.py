"""rrdu-certify: Cor. 5.2's sigma, the nominal epsilon of accountants A/B/C, one-line refusals naming the flag."""

from __future__ import annotations

import pytest

from unlearning.__main__ import main


def certify(capsys, *argv):
    rc = main(["rrdu-certify", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_defaults_mnist(capsys):
    rc, out, _ = certify(capsys)
    assert rc == 0 and "sigma = 2.57437" in out
    assert "nominal epsilon (Alg. 4 SGD semantics)" in out and "0.8075 library / 1.0012 classic" in out
    assert "C (Lemma A.11, C = 1) 1.7716 / 2.0869" in out and "sgd_literal" in out


def test_cifar_and_other_settings(capsys):
    rc, out, _ = certify(capsys, "--L", "0.2")
    assert rc == 0 and "sigma = 1.02975" in out
    rc, out, _ = certify(capsys, "--L", "0.5", "--delta", "1e-6")
    assert rc == 0 and "sigma = 2.82008" in out
    rc, out, _ = certify(capsys, "--L", "0.5", "--epsilon", "2")
    assert rc == 0 and "sigma = 1.28718" in out
    a_classic = float(out.split("library / ")[1].split()[0])
    assert a_classic == pytest.approx(2.197, abs=0.001)  # spec 2.5: the closed form under-noises at epsilon 2


def test_the_epsilon_of_a_given_sigma(capsys):
    rc, out, _ = certify(capsys, "--L", "0.5", "--sigma", "5.26")
    assert rc == 0 and "given sigma = 5.26" in out and "C (Lemma A.11, C = 1)" in out
    assert float(out.split("C (Lemma A.11, C = 1) ")[1].split(" / ")[1].split()[0]) == pytest.approx(1.0, abs=0.005)


def test_p_zero_needs_no_noise(capsys):
    rc, out, _ = certify(capsys, "--routing-p", "0")
    assert rc == 0 and "sigma = 0 " in out and "nothing to account" in out


@pytest.mark.parametrize("argv, flag", [
    (["--epsilon", "0"], "--epsilon"), (["--epsilon", "x"], "--epsilon"), (["--delta", "1"], "--delta"),
    (["--L", "0"], "--L"), (["--routing-p", "1.5"], "--routing-p"), (["--routing-p", "-0.1"], "--routing-p"),
    (["--T-u", "0"], "--T-u"), (["--T-u", "1.5"], "--T-u"), (["--clients", "1"], "--clients"),
    (["--sigma", "0"], "--sigma"), (["--sigma", "-1"], "--sigma"),
])
def test_bad_input_is_refused_in_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = certify(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {flag}")
