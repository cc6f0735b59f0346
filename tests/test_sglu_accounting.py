"""SGLU's accounting and its baselines against every published number (spec sglu.md 4.3, 4.6, 6, 8)."""

from __future__ import annotations

import math
from functools import cache

import pytest

from unlearning.privacy import sglu
from unlearning.privacy import sglu_baselines as bl

N = {"mnist": 11264, "cifar10": 9728}  # truncated SGLU sizes (spec 4.1)
EPSILONS = (0.05, 0.1, 0.5, 1, 2, 5)
SIGMAS_3D = (0.05, 0.1, 0.2, 0.5, 1)


def shown(x: float, printed: str) -> bool:
    """x rounds to ``printed`` at the number of significant digits printed ("0.00490": 3, "1.8e-7": 2)."""
    mantissa = printed.lower().split("e")[0].replace(".", "").replace("-", "").lstrip("0")
    return float(f"{x:.{len(mantissa)}g}") == float(printed)


def constants(dataset: str, b: int | str) -> sglu.Constants:
    n = N[dataset]
    return sglu.logistic_constants(n, n if b == "n" else b)


@cache
def sequence(dataset: str, b: int | str, sigma: float, eps: float, variant: str) -> tuple[int, ...]:
    n = N[dataset]
    return tuple(sglu.sequential_k(constants(dataset, b), sigma, eps, 1 / n, 100, variant))


# ---------------------------------------------------------------------------------------------- Table 1 (spec 4.3)


@pytest.mark.parametrize("dataset, L, m, eta, c, log_inv", [
    ("mnist", 0.261264, 0.011264, 3.8275461, 0.9568865, 9.3294),
    ("cifar10", 0.259728, 0.009728, 3.8501817, 0.9625454, 9.1828),
])
def test_table1_constants(dataset: str, L: float, m: float, eta: float, c: float, log_inv: float) -> None:
    k = constants(dataset, "n")
    assert k.L == pytest.approx(L, abs=1e-9)
    assert k.m == pytest.approx(m, abs=1e-9)
    assert k.M == 1 and k.R == 100
    assert k.step == pytest.approx(eta, abs=1e-7)
    assert k.c == pytest.approx(c, abs=1e-7)
    assert math.log(N[dataset]) == pytest.approx(log_inv, abs=1e-4)


@pytest.mark.parametrize("dataset, b, zb, c_epoch", [
    ("mnist", 32, "0.239222", "1.8e-7"), ("mnist", 128, "0.0610688", "0.020688"),
    ("mnist", 512, "0.0240861", "0.379254"), ("mnist", "n", "0.0157632", "0.956887"),
    ("cifar10", 32, "0.240639", "9.1e-6"), ("cifar10", 128, "0.0636574", "0.054956"),
    ("cifar10", 512, "0.0291568", "0.484176"), ("cifar10", "n", "0.0211341", "0.962545"),
])
def test_z_b_paper(dataset: str, b: int | str, zb: str, c_epoch: str) -> None:
    k = constants(dataset, b)
    assert shown(sglu.z_b(k, "paper"), zb)
    assert sglu.z_b(k, "code_b") == sglu.z_b(k, "paper")
    assert shown(k.c**k.iters, c_epoch)


def test_z_b_code_c() -> None:
    assert shown(sglu.z_b(constants("mnist", 128), "code_c"), "1.38716")
    assert shown(sglu.z_b(constants("mnist", 512), "code_c"), "0.346791")
    for dataset in N:
        full = constants(dataset, "n")
        assert sglu.z_b(full, "code_c") == pytest.approx(sglu.z_b(full, "paper"), rel=1e-12)


# ---------------------------------------------------------------------------------------------- Table 3 (spec 6)

TABLE3 = {  # (dataset, b): (published, truncated to 4 decimals; recomputed to 6 decimals)
    ("cifar10", 128): ((0.2165, 0.1084, 0.0220, 0.0112, 0.0058, 0.0025),
                       (0.216548, 0.108494, 0.022047, 0.011237, 0.005826, 0.002562)),
    ("cifar10", "n"): ((1.2592, 0.6308, 0.1282, 0.0653, 0.0338, 0.0148),
                       (1.259201, 0.630879, 0.128201, 0.065342, 0.033876, 0.014896)),
    ("mnist", 128): ((0.0790, 0.0396, 0.0080, 0.0041, 0.0021, 0.0009),
                     (0.079056, 0.039607, 0.008047, 0.004100, 0.002125, 0.000933)),
    ("mnist", "n"): ((0.9438, 0.4728, 0.0960, 0.0489, 0.0253, 0.0111),
                     (0.943848, 0.472867, 0.096068, 0.048951, 0.025365, 0.011140)),
}


@pytest.mark.parametrize("dataset, b", list(TABLE3))
@pytest.mark.parametrize("column", range(len(EPSILONS)))
def test_table3_sigma(dataset: str, b: int | str, column: int) -> None:
    k, eps = constants(dataset, b), EPSILONS[column]
    published, recomputed = TABLE3[dataset, b][0][column], TABLE3[dataset, b][1][column]
    sigma = sglu.sigma_for_budget(k, eps, 1 / k.n)  # Theorem 3.2, K = 1, Table 2's T, alpha in [2, 1e5]
    assert math.floor(sigma * 1e4) == round(published * 1e4)  # the paper truncates
    assert sigma == pytest.approx(recomputed, abs=1e-6)


def test_table3_alpha_upper_bound_is_immaterial() -> None:
    for dataset, b in TABLE3:
        k = constants(dataset, b)
        for eps in (0.05, 5):
            wide = sglu.sigma_for_budget(k, eps, 1 / k.n, alpha=(2, 1e5))
            assert sglu.sigma_for_budget(k, eps, 1 / k.n, alpha=(2, 1e4)) == pytest.approx(wide, abs=1e-8)


def test_table3_truncated_sigma_misses_k1() -> None:
    """The printed 0.0041 (MNIST, b = 128, eps = 1) lies below the least sigma 0.0041001: K = 1 no longer suffices."""
    k = constants("mnist", 128)
    assert sglu.certify_k(k, 0.0041, 1.0, 1 / k.n, T=20).K == 2
    assert sglu.certify_k(k, 0.004101, 1.0, 1 / k.n, T=20).K == 1


# ---------------------------------------------------------------------------------------------- Figure 3b (spec 6)


def test_fig3b_code_c_full_batch() -> None:
    mnist, cifar = sequence("mnist", "n", 0.03, 1.0, "code_c"), sequence("cifar10", "n", 0.03, 1.0, "code_c")
    assert mnist[:6] == (2, 5, 7, 8, 9, 9) and set(mnist[4:]) == {9}
    assert (mnist[0], sum(mnist[:10]), sum(mnist[:50]), sum(mnist)) == (2, 76, 436, 886)
    assert cifar[:6] == (3, 7, 10, 11, 12, 12) and set(cifar[4:]) == {12}
    assert (cifar[0], sum(cifar[:10]), sum(cifar[:50]), sum(cifar)) == (3, 103, 583, 1183)


@pytest.mark.parametrize("dataset, b, per_request", [
    ("mnist", 32, 1), ("mnist", 64, 1), ("mnist", 128, 1), ("mnist", 256, 2), ("mnist", 512, 3),
    ("cifar10", 32, 1), ("cifar10", 64, 1), ("cifar10", 128, 2), ("cifar10", 256, 2),
])
def test_fig3b_code_c_minibatch(dataset: str, b: int, per_request: int) -> None:
    assert sequence(dataset, b, 0.03, 1.0, "code_c") == (per_request,) * 100


def test_fig3b_code_c_cifar_b512_alternates() -> None:
    ks = sequence("cifar10", 512, 0.03, 1.0, "code_c")
    assert set(ks) == {3, 4} and sum(ks) == 350


@pytest.mark.parametrize("dataset, b, total", [
    ("mnist", "n", 1786), ("mnist", 128, 100), ("mnist", 32, 100), ("mnist", 512, 149),
    ("cifar10", "n", 2487), ("cifar10", 128, 100), ("cifar10", 32, 100), ("cifar10", 512, 200),
])
def test_fig3b_paper(dataset: str, b: int | str, total: int) -> None:
    assert sum(sequence(dataset, b, 0.03, 1.0, "paper")) == total


def test_fig3b_paper_full_batch_pattern() -> None:
    assert sequence("mnist", "n", 0.03, 1.0, "paper") == (4,) + (18,) * 99
    assert sequence("cifar10", "n", 0.03, 1.0, "paper") == (12,) + (25,) * 99


@pytest.mark.parametrize("dataset, b, total", [
    ("mnist", "n", 887), ("cifar10", "n", 1190), ("mnist", 128, 100), ("cifar10", 128, 100),
])
def test_fig3b_code_b(dataset: str, b: int | str, total: int) -> None:
    assert sum(sequence(dataset, b, 0.03, 1.0, "code_b")) == total


# ---------------------------------------------------------------------------------------------- Figure 3d (spec 6)

FIG3D_CODE_B = {
    ("mnist", 32): (100, 100, 100, 100, 100),
    ("mnist", 128): (200, 101, 101, 100, 100),
    ("mnist", 512): (401, 302, 301, 201, 125),
    ("mnist", "n"): (7026, 5525, 4171, 2614, 1771),
    ("cifar10", 32): (100, 100, 100, 100, 100),
    ("cifar10", 128): (200, 200, 200, 101, 100),
    ("cifar10", 512): (502, 451, 401, 251, 201),
    ("cifar10", "n"): (8632, 6930, 5327, 3420, 2310),
}
FIG3D_PAPER = {
    ("mnist", 32): (100, 100, 100, 100, 100),
    ("mnist", 128): (200, 200, 200, 100, 100),
    ("mnist", 512): (500, 500, 400, 300, 200),
    ("mnist", "n"): (9700, 8199, 6698, 4747, 3428),
    ("cifar10", 32): (100, 100, 100, 100, 100),
    ("cifar10", 128): (200, 200, 200, 200, 100),
    ("cifar10", 512): (700, 600, 500, 400, 300),
    ("cifar10", "n"): (11900, 10100, 8399, 6098, 4595),
}


@pytest.mark.parametrize("dataset, b", list(FIG3D_CODE_B))
@pytest.mark.parametrize("column", range(len(SIGMAS_3D)))
def test_fig3d_code_b(dataset: str, b: int | str, column: int) -> None:
    assert sum(sequence(dataset, b, SIGMAS_3D[column], 0.01, "code_b")) == FIG3D_CODE_B[dataset, b][column]


@pytest.mark.parametrize("dataset, b", list(FIG3D_PAPER))
def test_fig3d_paper(dataset: str, b: int | str) -> None:
    assert tuple(sum(sequence(dataset, b, s, 0.01, "paper")) for s in SIGMAS_3D) == FIG3D_PAPER[dataset, b]


def test_fig3d_code_c_mnist_full_batch() -> None:
    assert tuple(sum(sequence("mnist", "n", s, 0.01, "code_c")) for s in SIGMAS_3D) == (6999, 5498, 4146, 2593, 1755)


@pytest.mark.parametrize("dataset, b, head", [
    ("mnist", "n", (97, 69, 70, 70)), ("mnist", 512, (5, 4, 4)),
    ("cifar10", "n", (119, 85, 86)), ("cifar10", 512, (7, 5, 5)),
])
def test_fig3d_code_b_per_request(dataset: str, b: int | str, head: tuple[int, ...]) -> None:
    assert sequence(dataset, b, 0.05, 0.01, "code_b")[:len(head)] == head


# ---------------------------------------------------------------------------------------------- baselines (spec 4.6)


@pytest.mark.parametrize("dataset, gamma, eta, i_min, first, last, total", [
    ("mnist", 0.884054, 5.1361, 66, 90, 92, 9118),
    ("cifar10", 0.896432, 5.4612, 73, 99, 102, 10098),
])
def test_d2d_sequential(dataset: str, gamma: float, eta: float, i_min: int, first: int, last: int,
                        total: int) -> None:
    k = bl.published_baseline_constants(dataset)
    assert k.gamma == pytest.approx(gamma, abs=1e-6)
    assert k.step == pytest.approx(eta, abs=1e-4)
    assert bl.d2d_min_steps(k, 1.0) == i_min
    ks = bl.d2d_sequential_steps(k, 1.0, 100)
    assert (ks[0], ks[-1], sum(ks)) == (first, last, total)
    assert ks == sorted(ks)


@pytest.mark.parametrize("dataset, at_k1, at_i", [("mnist", "8.09e-6", "1.558e-4"), ("cifar10", "1.50e-5", "2.584e-4")])
def test_d2d_sigma_request1(dataset: str, at_k1: str, at_i: str) -> None:
    """Spec 4.6's sigma_D2D is eq. 76 at K_1 (the code); the theorem's I = I_min gives about 20x more."""
    k = bl.published_baseline_constants(dataset)
    assert shown(bl.d2d_sigma_no_state(k, 1.0, bl.d2d_request_steps(k, 1.0, 1)), at_k1)
    assert shown(bl.d2d_sigma_no_state(k, 1.0, bl.d2d_min_steps(k, 1.0)), at_i)


THM_L1 = {
    ("mnist", 1): ("36.88", "18.46", "3.731", "1.889", "0.9673", "0.4121"),
    ("mnist", 5): ("5.677", "2.842", "0.5744", "0.2908", "0.1489", "0.06344"),
    ("cifar10", 1): ("59.52", "29.80", "6.023", "3.050", "1.563", "0.6663"),
    ("cifar10", 5): ("9.452", "4.733", "0.9566", "0.4845", "0.2482", "0.1058"),
}


@pytest.mark.parametrize("dataset, steps", list(THM_L1))
def test_d2d_thm_l1_sigma(dataset: str, steps: int) -> None:
    k = bl.published_baseline_constants(dataset)
    for eps, printed in zip(EPSILONS, THM_L1[dataset, steps]):
        assert shown(bl.d2d_sigma_internal(k, eps, steps), printed)


def test_d2d_thm_l1_sigma_three_decimals() -> None:
    assert bl.d2d_sigma_internal(bl.published_baseline_constants("mnist"), 0.05, 1) == pytest.approx(36.875, abs=5e-4)
    assert bl.d2d_sigma_internal(bl.published_baseline_constants("cifar10"), 0.05, 1) == pytest.approx(59.518, abs=5e-4)


LU_K1 = {
    "mnist": ("0.18715", "0.09369", "0.01892", "0.00957", "0.00490", "0.00208"),
    "cifar10": ("0.2431", "0.1217", "0.02459", "0.01244", "0.00637", "0.00271"),
}


@pytest.mark.parametrize("dataset", list(LU_K1))
def test_lu_k1_sigma(dataset: str) -> None:
    k = bl.published_baseline_constants(dataset)
    for eps, printed in zip(EPSILONS, LU_K1[dataset]):
        assert shown(bl.lu_sigma_for_budget(k, eps), printed)


LU_S10 = {
    "mnist": (579, 763, 795, 820, 848, 881, 922, 970, 1024, 1080),
    "cifar10": (762, 949, 976, 997, 1021, 1051, 1089, 1137, 1193, 1253),
}


@pytest.mark.parametrize("dataset", list(LU_S10))
def test_lu_sequential_s10(dataset: str) -> None:
    ks = bl.lu_sequential_k(bl.published_baseline_constants(dataset), 0.03, 1.0, 10, S=10)
    assert tuple(ks) == LU_S10[dataset]
    assert sum(ks) == {"mnist": 8682, "cifar10": 10428}[dataset]


@pytest.mark.parametrize("dataset, S, total", [
    ("mnist", 5, 19717), ("mnist", 10, 8739), ("mnist", 20, 5058),
    ("cifar10", 5, 23142), ("cifar10", 10, 10504), ("cifar10", 20, 6123),
])
def test_lu_sequential_later_run(dataset: str, S: int, total: int) -> None:
    """Spec 7.14's S = 5 / 20 sums (and its S = 10 sums 8739 / 10504) come from the d54b5b6 recursion."""
    ks = bl.lu_sequential_k(bl.published_baseline_constants(dataset), 0.03, 1.0, 100 // S, S=S, recursion="d54b5b6")
    assert sum(ks) == total


def test_lu_triangle_recursion_is_tighter() -> None:
    k = bl.published_baseline_constants("mnist")
    for S, total in ((5, 19679), (20, 5004)):
        assert sum(bl.lu_sequential_k(k, 0.03, 1.0, 100 // S, S=S)) == total


@pytest.mark.parametrize("dataset, d2d_total, lu_total, l1_sigma, lu_sigmas", [
    ("mnist", 13374, 12672, "60.53", ("0.20466", "0.10246", "0.0207", "0.01048", "0.00536", "0.00228")),
    ("cifar10", 15169, 15348, "93.23", ("0.25299", "0.12666", "0.02559", "0.01296", "0.00663", "0.00282")),
])
def test_baselines_with_sglu_constants(dataset: str, d2d_total: int, lu_total: int, l1_sigma: str,
                                       lu_sigmas: tuple[str, ...]) -> None:
    k = bl.sglu_baseline_constants(dataset)
    assert (k.n, k.L, k.m) == (N[dataset], pytest.approx(0.25 + 1e-6 * N[dataset]), pytest.approx(1e-6 * N[dataset]))
    assert sum(bl.d2d_sequential_steps(k, 1.0, 100)) == d2d_total
    assert sum(bl.lu_sequential_k(k, 0.03, 1.0, 10, S=10)) == lu_total
    assert shown(bl.d2d_sigma_internal(k, 0.05, 1), l1_sigma)
    for eps, printed in zip(EPSILONS, lu_sigmas):
        assert shown(bl.lu_sigma_for_budget(k, eps), printed)


# ---------------------------------------------------------------------------------------------- building blocks


def test_least_k_matches_linear_search() -> None:
    for threshold in (1, 2, 3, 7, 64, 65, 1000):
        for start in (1, 5, 64, 2000):
            assert sglu.least_k(lambda K, t=threshold: K >= t, start=start) == threshold


def test_eps_dp_matches_closed_form_for_linear_rdp() -> None:
    """min_alpha a alpha + log(1/delta)/(alpha - 1) = a + 2 sqrt(a log(1/delta)) when the optimum is inside."""
    delta = 1e-4
    for a in (1e-6, 1e-4, 1e-2, 0.5):
        want = a + 2 * math.sqrt(a * math.log(1 / delta))
        assert sglu.eps_dp(lambda alpha, a=a: a * alpha, delta, 1 + 1e-6, 1e5) == pytest.approx(want, rel=1e-9)
    # optimum below the range: the lower end binds
    assert sglu.eps_dp(lambda alpha: 50 * alpha, delta, 2, 1e5) == pytest.approx(100 + math.log(1e4), rel=1e-9)


def test_factors() -> None:
    k = constants("mnist", 512)
    assert sglu.factor_tight(k.c, 1) == pytest.approx(sglu.factor_loose(k.c, 1), rel=1e-12)
    for iters in (2, 22, 220):
        assert sglu.factor_tight(k.c, iters) < sglu.factor_loose(k.c, iters)
    assert sglu.factor(k, 22, "paper", 5) == sglu.factor_loose(k.c, 22)
    assert sglu.factor(k, 22, "code_b", 1) == sglu.factor_loose(k.c, 22)
    assert sglu.factor(k, 22, "code_b", 2) == sglu.factor_tight(k.c, 22)
    assert sglu.factor(k, 22, "C", 1) == sglu.factor_tight(k.c, 22)


def test_variant_names_and_alpha_ranges() -> None:
    assert [sglu.variant_name(v) for v in ("A", "b", "code_c", "paper")] == ["paper", "code_b", "code_c", "paper"]
    with pytest.raises(ValueError):
        sglu.variant_name("d")
    assert sglu.alpha_range("paper") == sglu.alpha_range("B") == (2.0, 1e5)
    assert sglu.alpha_range("code_c") == (1 + 1e-6, 1e5)


def test_caps() -> None:
    k = constants("mnist", 128)
    assert sglu.z_batch(k, 1) == pytest.approx(sglu.z_b(k))
    assert sglu.z_batch(k, 10) == pytest.approx(10 * sglu.z_b(k))
    assert sglu.z_batch(k, 10**5) == 2 * k.R
    tiny = sglu.Constants(n=100, b=1, L=1.0, m=1e-9, R=0.1)
    assert sglu.z_b(tiny, cap=True) == 0.2 < sglu.z_b(tiny)
    assert sglu.z_burn_in(tiny, 10**6) == pytest.approx(0.2 + 0.2 * tiny.c ** (10**8))


def test_thm32_approaches_cor38_with_weak_triangle() -> None:
    """With negligible burn-in terms, Theorem 3.2 is Cor. 3.8 at order 2 alpha times (alpha - 1/2)/(alpha - 1)."""
    k = constants("cifar10", 128)
    for alpha in (2.0, 10.0, 300.0):
        cor = sglu.cor38_rdp(k, 0.1, 1, sglu.z_b(k), 2 * alpha)
        assert sglu.thm32_rdp(k, 0.1, 1, 20, alpha) == pytest.approx((alpha - 0.5) / (alpha - 1) * cor, rel=1e-9)


def test_sequential_z_recursion() -> None:
    k = constants("mnist", "n")
    ks = list(sequence("mnist", "n", 0.03, 1.0, "code_c"))
    zs = sglu.sequential_z(k, ks, "code_c")
    assert zs[0] == sglu.z_b(k, "code_c")
    assert zs[1] == pytest.approx(k.c ** ks[0] * zs[0] + zs[0])
    assert zs[-1] < zs[0] / (1 - k.c ** 9) * 1.0001


def test_certificates() -> None:
    k = constants("cifar10", "n")
    cert = sglu.certify_sigma(k, 0.5, 1 / k.n, K=1, T=1000)
    assert cert.bound == "thm3.2" and cert.sigma == pytest.approx(0.128201, abs=1e-6)
    assert cert.epsilon <= 0.5
    assert sglu.certify_k(k, cert.sigma, 0.5, 1 / k.n, T=1000).K == 1
    converged = sglu.certify_k(k, 0.03, 1.0, 1 / k.n, variant="code_c")
    assert converged.bound == "cor3.8" and converged.K == 3 and converged.epsilon <= 1.0
    assert sglu.certificate_epsilon(k, 0.03, 2, 1 / k.n, variant="code_c") > 1.0
    assert sglu.least_k_thm32(k, cert.sigma, 0.5, 1 / k.n) == 1


def test_constants_validation() -> None:
    with pytest.raises(ValueError):
        sglu.Constants(n=10, b=20, L=1.0, m=0.1)
    with pytest.raises(ValueError):
        sglu.Constants(n=10, b=5, L=1.0, m=0.1, eta=2.0)
    assert sglu.Constants(n=10, b=3, L=1.0, m=0.1).iters == 3
    assert sglu.burn_in(constants("mnist", 32)) == 10 and sglu.burn_in(constants("mnist", "n")) == 1000
