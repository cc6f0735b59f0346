"""SGLU's command line and parameter checks: certify prints the paper's numbers; bad params name the key."""

from __future__ import annotations

import copy

import pytest

from unlearning.__main__ import main
from unlearning.config import ParamsError, check_params


def test_certify_prints_table3_sigma(capsys):
    """Table 3, MNIST b = 128, epsilon = 1: sigma 0.0041 (Theorem 3.2, T = 20)."""
    assert main(["sglu-certify", "--n", "11264", "--b", "128", "--epsilon", "1", "--K", "1", "--burn-in", "20"]) == 0
    out = capsys.readouterr().out
    assert "sigma = 0.00410007" in out and "K = 1" in out


def test_certify_prints_the_least_k_of_figure_3b_first_request(capsys):
    """Figure 3b, MNIST b = n, sigma = 0.03, epsilon = 1, variant C: the first request needs K = 2."""
    assert main(["sglu-certify", "--n", "11264", "--b", "full", "--epsilon", "1", "--sigma", "0.03",
                 "--variant", "C"]) == 0
    assert "K = 2 " in capsys.readouterr().out


def test_certify_rejects_half_given_constants(capsys):
    assert main(["sglu-certify", "--n", "100", "--b", "10", "--epsilon", "1", "--K", "1", "--L", "1"]) == 2
    assert "--L and --m" in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["pairs"].update(fashion_mnist=[3, 3]), "sglu.pairs.fashion_mnist"),
    (lambda s: s["quick"]["fig3a"].update(epsilons=[0.05, 0.3]), "sglu.fig3a.epsilons"),  # the merged quick scale
    (lambda s: s["quick"]["fig3c"].update(batch_sizes=[64]), "sglu.fig3c.batch_sizes"),
    (lambda s: s.update(partitions=7), "sglu.partitions"),
    (lambda s: s.update(accounting="tight"), "accounting"),
    (lambda s: s["fig3a"].update(batch_sizes=["half"]), "batch_sizes"),
])
def test_bad_sglu_params_name_the_key(params, edit, message):
    bad = copy.deepcopy(params)
    edit(bad["sglu"])
    with pytest.raises(ParamsError, match=message.replace(".", r"\.")):
        check_params(bad)
