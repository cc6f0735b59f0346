"""R2D's noise (Mu & Klabjan, Theorem 3.1, eq. 3, Corollary 3.2) against the spec's tables (2.4, 2.6, 6.3) at the
pinned constants: Table 4's rounded eta, m = 899 (eICU) / 634 (Lacuna), T = (E_sel - 1) S."""

from __future__ import annotations

import math

import pytest

from unlearning.privacy import r2d_noise as rn

EPS = (0.1, 1, 2, 4, 10, 20, 40)
EICU = dict(eta=4.638e-4, L=0.14394, G=1.70994, m=899, n=94449)
LACUNA = dict(eta=1.966e-5, L=5.6530, G=9.481617, m=634, n=32000)
EICU_RUN = dict(E_sel=52, S=185)
LACUNA_RUN = dict(E_sel=82, S=125)

# K_ep: (Delta, sigma at EPS), spec 2.6 (analytic Gaussian, delta = 0.1)
EICU_TABLE = {
    6: (0.1833, (0.5218, 0.1990, 0.1342, 0.0890, 0.0517, 0.0345, 0.0233)),
    11: (0.1675, (0.4769, 0.1819, 0.1226, 0.0813, 0.0472, 0.0316, 0.0213)),
    16: (0.1508, (0.4292, 0.1637, 0.1104, 0.0732, 0.0425, 0.0284, 0.0192)),
    21: (0.1330, (0.3785, 0.1444, 0.0973, 0.0646, 0.0375, 0.0250, 0.0169)),
    26: (0.1140, (0.3247, 0.1238, 0.0835, 0.0554, 0.0321, 0.0215, 0.0145)),
    31: (0.0939, (0.2674, 0.1020, 0.0688, 0.0456, 0.0265, 0.0177, 0.0120)),
    36: (0.0726, (0.2065, 0.0788, 0.0531, 0.0352, 0.0204, 0.0137, 0.0092)),
    41: (0.0498, (0.1419, 0.0541, 0.0365, 0.0242, 0.0140, 0.0094, 0.0063)),
    46: (0.0257, (0.0731, 0.0279, 0.0188, 0.0125, 0.0072, 0.0048, 0.0033)),
    51: (0.0, (0.0,) * 7),
}
LACUNA_TABLE = {
    11: (0.1314, (0.3741, 0.1427, 0.0962, 0.0638, 0.0370, 0.0248, 0.0167)),
    21: (0.1193, (0.3395, 0.1295, 0.0873, 0.0579, 0.0336, 0.0225, 0.0152)),
    31: (0.1054, (0.3001, 0.1145, 0.0772, 0.0512, 0.0297, 0.0199, 0.0134)),
    41: (0.0896, (0.2551, 0.0973, 0.0656, 0.0435, 0.0253, 0.0169, 0.0114)),
    51: (0.0715, (0.2036, 0.0777, 0.0523, 0.0347, 0.0202, 0.0135, 0.0091)),
    61: (0.0508, (0.1447, 0.0552, 0.0372, 0.0247, 0.0143, 0.0096, 0.0065)),
    71: (0.0271, (0.0772, 0.0295, 0.0199, 0.0132, 0.0076, 0.0051, 0.0035)),
    81: (0.0, (0.0,) * 7),
}
CELLS = ([("eicu", EICU, EICU_RUN, k, i, row[1][i]) for k, row in EICU_TABLE.items() for i in range(7)]
         + [("lacuna", LACUNA, LACUNA_RUN, k, i, row[1][i]) for k, row in LACUNA_TABLE.items() for i in range(7)])


def test_there_are_126_cells():
    assert len(CELLS) == 126


@pytest.mark.parametrize("name, consts, run, k_ep, i, want", CELLS,
                         ids=[f"{c[0]}-K{c[3]}-eps{EPS[c[4]]}" for c in CELLS])
def test_sigma_table_cell(name, consts, run, k_ep, i, want):
    K, T = rn.epoch_steps(k_ep, run["E_sel"], run["S"])
    got = rn.sigma(EPS[i], 0.1, K, T, **consts)
    assert round(got, 4) == pytest.approx(want, abs=1e-12), f"{name} K_ep={k_ep} eps={EPS[i]}: {got:.6f}"


@pytest.mark.parametrize("consts, run, table", [(EICU, EICU_RUN, EICU_TABLE), (LACUNA, LACUNA_RUN, LACUNA_TABLE)])
def test_sensitivity_column(consts, run, table):
    for k_ep, (want, _) in table.items():
        K, T = rn.epoch_steps(k_ep, run["E_sel"], run["S"])
        assert round(rn.sensitivity(K, T, **consts), 4) == pytest.approx(want, abs=1e-12)


def test_h_vectors():
    c = {k: EICU[k] for k in ("eta", "L", "m", "n")}
    assert rn.h(2035, 9435, **c) == pytest.approx(0.740758, abs=5e-7)
    assert rn.h(0, 9435, **c) == pytest.approx(0.888733, abs=5e-7)
    lc = {k: LACUNA[k] for k in ("eta", "L", "m", "n")}
    assert rn.h(2625, 10125, **lc) == pytest.approx(1.794474, abs=5e-7)
    assert rn.h(9435, 9435, **c) == 0.0
    values = [rn.h(k, 9435, **c) for k in range(0, 9436, 185)]
    assert all(a > b for a, b in zip(values, values[1:]))


UNIT = {0.1: (2.846924, 22.475447), 0.5: (1.556288, 4.495089), 1: (1.085878, 2.247545), 2: (0.731955, 1.123772),
        4: (0.485540, 0.561886), 10: (0.281812, 0.224754), 20: (0.188397, 0.112377), 40: (0.127297, 0.056189)}


@pytest.mark.parametrize("eps", list(UNIT))
def test_unit_vectors(eps):
    analytic, classical = UNIT[eps]
    assert rn.analytic_sigma(eps, 0.1, 1.0) == pytest.approx(analytic, abs=5e-7)
    assert rn.classical_sigma(eps, 0.1, 1.0, strict=False) == pytest.approx(classical, abs=5e-7)


def test_analytic_sigma_certifies_and_is_tight():
    for eps in (0.1, 1, 10, 30, 34, 40, 60):
        s = rn.analytic_sigma(eps, 0.1, 1.0)
        assert rn.analytic_delta(eps, s, 1.0) <= 0.1
        assert rn.analytic_delta(eps, s * (1 - 1e-9), 1.0) > 0.1
        assert rn.analytic_sigma(eps, 0.1, 3.0) == pytest.approx(3 * s, rel=1e-12)


def test_paper_compat_is_labelled_and_differs_at_large_epsilon():
    """Dated note 1: the cancellation-prone Algorithm 1 gives 0.128965 at epsilon 40 (exact 0.127297)."""
    assert rn.analytic_sigma_paper_compat(40, 0.1, 1.0) == pytest.approx(0.128965, abs=5e-7)
    assert rn.analytic_sigma_paper_compat(1, 0.1, 1.0) == pytest.approx(1.085878, abs=5e-7)
    K, T = rn.epoch_steps(6, 52, 185)
    assert round(rn.sigma(40, 0.1, K, T, **EICU, mechanism="paper-compat"), 4) == 0.0236
    assert round(rn.sigma(40, 0.1, K, T, **EICU), 4) == 0.0233


FIG1C = [  # epsilon, eICU numeric inverse, eICU bound, Lacuna numeric inverse, Lacuna bound (spec 6.3)
    (0.1, 9421, 9420.3, 10106, 10106.4), (0.2, 9406, 9405.6, 10087, 10087.8), (0.4, 9376, 9376.1, 10049, 10050.5),
    (0.6, 9346, 9346.5, 10011, 10013.0), (0.8, 9317, 9316.9, 9972, 9975.3), (1.0, 9287, 9287.3, 9934, 9937.5)]


@pytest.mark.parametrize("eps, ek, eb, lk, lb", FIG1C)
def test_figure_1c_k_for_sigma(eps, ek, eb, lk, lb):
    """Dated note 6: the eICU row fits m = 944.49 (= 0.01 n); Lacuna m = 640; classical mechanism, sigma 0.01."""
    e = dict(EICU, m=944.49)
    la = dict(LACUNA, m=640)
    assert rn.least_k(0.01, eps, 0.1, 9435, **e, mechanism="classical") == ek
    assert round(rn.corollary_k(0.01, eps, 0.1, 9435, **e), 1) == pytest.approx(eb, abs=1e-9)
    assert rn.least_k(0.01, eps, 0.1, 10125, **la, mechanism="classical") == lk
    assert round(rn.corollary_k(0.01, eps, 0.1, 10125, **la), 1) == pytest.approx(lb, abs=1e-9)
    # the bound certifies: sigma at ceil(bound) is within the target
    k = math.ceil(rn.corollary_k(0.01, eps, 0.1, 9435, **e))
    assert rn.sigma(eps, 0.1, k, 9435, **e, mechanism="classical") <= 0.01


def test_m945_moves_figure_1c():
    assert rn.least_k(0.01, 0.6, 0.1, 9435, **dict(EICU, m=945), mechanism="classical") == 9347


def test_least_k_analytic_is_the_least():
    K = rn.least_k(0.05, 4, 0.1, 9435, **EICU)
    assert rn.sigma(4, 0.1, K, 9435, **EICU) <= 0.05 < rn.sigma(4, 0.1, K - 1, 9435, **EICU)


@pytest.mark.parametrize("call, name", [
    (lambda: rn.sigma(0, 0.1, 10, 100, **EICU), "epsilon"),
    (lambda: rn.sigma(-1, 0.1, 10, 100, **EICU), "epsilon"),
    (lambda: rn.sigma(1, 0, 10, 100, **EICU), "delta"),
    (lambda: rn.sigma(1, 1.0, 10, 100, **EICU), "delta"),
    (lambda: rn.sigma(1, 0.1, 101, 100, **EICU), "K (rewound steps)"),
    (lambda: rn.sigma(1, 0.1, -1, 100, **EICU), "K (rewound steps)"),
    (lambda: rn.sigma(1, 0.1, 10, 100, **dict(EICU, G=-1)), "G (gradient bound)"),
    (lambda: rn.sigma(1, 0.1, 10, 100, **dict(EICU, L=-1)), "L (smoothness)"),
    (lambda: rn.sigma(1, 0.1, 10, 100, **dict(EICU, m=10 ** 6)), "m (deleted samples)"),
    (lambda: rn.sigma(2, 0.1, 10, 100, **EICU, mechanism="classical"), "epsilon"),
    (lambda: rn.sigma(1, 0.1, 10, 100, **EICU, mechanism="laplace"), "mechanism"),
    (lambda: rn.epoch_steps(52, 52, 185), "K_ep (rewound epochs)"),
    (lambda: rn.least_k(0, 1, 0.1, 100, **EICU), "sigma"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError) as err:
        call()
    msg = str(err.value)
    assert msg.startswith(name) and "valid" in msg and "\n" not in msg


def test_classical_refusal_points_to_analytic():
    with pytest.raises(ValueError, match="analytic"):
        rn.classical_sigma(1.5, 0.1, 1.0)


def test_the_bound_with_the_steps_taken_is_theorem_3_1_for_constant_steps_and_grows_with_larger_ones():
    for K in (0, 7, 30, 40):
        assert rn.sensitivity_steps(K, [0.01] * 40, 2.0, 1.5, 1, 1000) == pytest.approx(
            rn.sensitivity(K, 40, 0.01, 2.0, 1.5, 1, 1000), rel=1e-12)
    decaying = [0.1 * 0.9 ** (t // 10) for t in range(40)]  # an epoch schedule; its last step is the smallest
    for K in (0, 10, 30):
        assert rn.sensitivity_steps(K, decaying, 2.0, 1.5, 1, 1000) > rn.sensitivity(K, 40, decaying[-1], 2.0, 1.5,
                                                                                     1, 1000)
    assert rn.sensitivity_steps(40, decaying, 2.0, 1.5, 1, 1000) == 0.0  # a full rewind: retraining
