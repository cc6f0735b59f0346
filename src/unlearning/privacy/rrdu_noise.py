"""RR-DU's noise (Lamri & Maniatakos 2025, Cor. 5.2, eq. 18) and its nominal epsilon.

Cor. 5.2 gives only the scaling sigma = Theta((L/epsilon) sqrt(p T_u ln(1/delta) ln N / N)); the constant
is taken as 1 (spec 2.5, A4):

    sigma = (L / epsilon) sqrt(p T_u ln(1/delta) ln N / N)

which does not depend on the forget-set size m. The epsilon that a sigma certifies is logged under three
accountants (spec 2.5), each on the RDP curve of the Poisson-subsampled Gaussian from Opacus
(`compute_rdp`, Mironov, Talwar & Zhang 2019):

- A: the u-visits as Poisson subsampling at rate q = p, noise multiplier z = sigma / L, T_u compositions;
- B: A's RDP curve times the network-amplification factor ln N / N (Lemma A.11 with C = 1);
- C: Lemma A.11's linear curve alpha L^2 p T_u ln N / (sigma^2 N) (C = 1, M = p T_u visits).

Each is converted to (epsilon, delta) twice: by the library (`get_privacy_spent`, the tighter conversion of
Balle et al. 2020) and by the classic min_alpha RDP(alpha) + ln(1/delta)/(alpha - 1) (Mironov 2017, Prop. 3),
at the integer orders 2..256; the spec's and the paper-derived numbers use the classic one (C: over real
alpha, a + 2 sqrt(a ln(1/delta))).

All of them assume Alg. 4's plain step theta + eta (g_u + Z) with g_u clipped to L, whose sensitivity is then
eta L m / n_u. The baseline does not clip (spec A7 since its note of 2026-11-26: L sets sigma only), so its
forget gradient has no bound; and under the default Adam semantics (spec 2.4) the un-noised ascent gradient also
enters Adam's moments, so post-processing does not cover the run. The value is a *nominal* epsilon (LABEL),
a certificate (CERTIFIED) only for a clipped run under `sgd_literal`; WHY says so in one sentence.

The accountants run in floating point on the noise multiplier z = sigma / L: Opacus squares z and, at order
256, forms the log-term (256^2 - 256) / (2 z^2) = 32640 / z^2, and the order-256 Renyi value over T_u steps
is about 128 T_u / z^2. `multiplier_range` is the z for which all of these stay below RDP_MAX (and z^2 below
it); a sigma outside it is refused (naming sigma, or epsilon when the sigma is Cor. 5.2's) before any
accountant runs, instead of a ZeroDivisionError or OverflowError from inside Opacus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .search import FLOAT_MAX, FLOAT_TINY, finite, integer, probability

LABEL = "nominal epsilon (Alg. 4 SGD semantics)"
CERTIFIED = "epsilon (certified: Alg. 4's step on a forget gradient clipped to L)"
WHY = ("certified are only runs that clip the forget gradient to L (Table 15's sweep) under sgd_literal semantics, "
       "the step the accountant assumes; every other run's epsilon is nominal: unclipped (the baseline, Tables 3, 14, "
       "16, 17, Figure 1) the forget gradient has no bound, and under Adam semantics the un-noised ascent gradient "
       "stays in Adam's moments")
ORDERS = tuple(range(2, 257))  # integer Renyi orders of the spec's accountant (spec 2.5)
RDP_MAX = 1e300  # the largest Renyi term the accountants may meet (well inside the float range)
Z_MAX = 1e150    # the largest noise multiplier sigma / L: Opacus squares it (sqrt of the float range: 1.3e154)


def check_p(p: float) -> float:
    """Routing probability toward u: p in [0, 1] (p = 0 is Table 3's fine-tuning row)."""
    return finite("p", p, 0.0, strict=False, high=1.0, high_strict=False)


def check_rho(rho: float | None) -> float | None:
    """Trust-region radius: > 0, or None for no projection (Table 3's rho = infinity)."""
    return None if rho is None else finite("rho", rho, 0.0)


def _common(L: float, delta: float, p: float, T_u: int, N: int) -> tuple[float, float, float, int, int]:
    return (finite("L", L, 0.0), probability("delta", delta), check_p(p), integer("T_u", T_u),
            integer("N (clients)", N, 2))


def multiplier_range(T_u: int) -> tuple[float, float]:
    """The noise multipliers z = sigma / L the accountants evaluate in floating point: z^2 at most RDP_MAX and
    Opacus's largest exponent 32640 / z^2 and the order-256 Renyi value ~128 T_u / z^2 at most RDP_MAX."""
    return math.sqrt(max(32640.0, 128.0 * T_u) / RDP_MAX), Z_MAX


def sigma_closed_form(L: float, epsilon: float, delta: float, p: float = 0.1, T_u: int = 100,
                      N: int = 10) -> float:
    """Cor. 5.2 (eq. 18) with constant 1: (L/epsilon) sqrt(p T_u ln(1/delta) ln N / N).

    Refused (naming epsilon, with the epsilons that are valid for the other inputs) when that sigma is not a
    finite positive float or its multiplier sigma / L lies outside `multiplier_range` (p > 0; p = 0 gives 0)."""
    L, delta, p, T_u, N = _common(L, delta, p, T_u, N)
    epsilon = finite("epsilon", epsilon, 0.0)
    root = math.sqrt(p * T_u * math.log(1 / delta) * math.log(N) / N)
    sigma = (L / epsilon) * root
    if p > 0:
        lo, hi = multiplier_range(T_u)
        if not (math.isfinite(sigma) and sigma > 0 and lo <= sigma / L <= hi):
            # z = root / epsilon in [lo, hi] and sigma = (L / epsilon) root a normal float: epsilon in
            # [root / hi, root / lo] and in [(L / 1e308) root, (L / FLOAT_TINY) root]
            eps_lo = max(root / hi, L / 1e308 * root) if root > 0 else math.inf
            eps_hi = min(root / lo, L / FLOAT_TINY * root) if root > 0 else 0.0
            if lo <= sigma / L <= hi:  # the multiplier is fine, sigma = L z itself is not a float
                where = f"sigma = L/epsilon sqrt(p T_u ln(1/delta) ln N / N) = {sigma:.6g} is not a positive float"
            else:
                where = (f"sigma = {sigma:.6g} puts the noise multiplier sigma/L = {sigma / L:.6g} outside [{lo:.6g}, "
                         f"{hi:.6g}], the multipliers the accountants evaluate in floating point")
            valid = (f"epsilon in [{eps_lo:.6g}, {eps_hi:.6g}] for these L, delta, p, T_u, N" if eps_lo <= eps_hi
                     else "none for these L, delta, p, T_u, N")
            raise ValueError(f"epsilon = {epsilon:g} (L = {L:g}, p = {p:g}, T_u = {T_u}, N = {N}): {where}; "
                             f"valid: {valid}")
    return sigma


def rdp_subsampled_gaussian(q: float, z: float, steps: int, orders=ORDERS) -> list[float]:
    """The library's RDP of `steps` compositions of the Poisson-subsampled Gaussian (rate q, multiplier z)."""
    from opacus.accountants.analysis.rdp import compute_rdp

    return [float(r) for r in compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=list(orders))]


def classic_epsilon(rdp, delta: float, orders=ORDERS) -> float:
    """min over orders of RDP(alpha) + ln(1/delta) / (alpha - 1) (Mironov 2017, Prop. 3; paper Prop. A.8)."""
    return min(r + math.log(1 / delta) / (a - 1) for r, a in zip(rdp, orders))


def library_epsilon(rdp, delta: float, orders=ORDERS) -> float:
    """Opacus's conversion of an RDP curve (Balle et al. 2020), never larger than the classic one."""
    import warnings

    from opacus.accountants.analysis.rdp import get_privacy_spent

    with warnings.catch_warnings():  # "optimal order is the largest alpha": the classic value is logged too
        warnings.simplefilter("ignore", UserWarning)
        eps, _ = get_privacy_spent(orders=list(orders), rdp=list(rdp), delta=delta)
    return float(eps)


@dataclass(frozen=True)
class NominalEpsilon:
    """The epsilon a sigma gives under accountants A, B and C (spec 2.5), each by two conversions."""

    sigma: float
    a_library: float
    a_classic: float
    b_library: float
    b_classic: float
    c_library: float
    c_classic: float
    label: str = LABEL

    def as_dict(self) -> dict[str, float | str]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def line(self) -> str:
        return (f"{self.label} for sigma = {self.sigma:.6g}: A (subsampled Gaussian, q = p) {self.a_library:.4f} "
                f"library / {self.a_classic:.4f} classic; B (A x ln N/N) {self.b_library:.4f} / "
                f"{self.b_classic:.4f}; C (Lemma A.11, C = 1) {self.c_library:.4f} / {self.c_classic:.4f}")


def _interval(lo: float, hi: float) -> str:
    """[lo, hi] within the positive floats."""
    hi = min(hi, FLOAT_MAX)
    return f"[{lo:.6g}, {hi:.6g}]" if lo > 0 else f"(0, {hi:.6g}]"


def nominal_epsilon(sigma: float, L: float, delta: float, p: float = 0.1, T_u: int = 100,
                    N: int = 10) -> NominalEpsilon:
    """Accountants A, B and C of spec 2.5 for noise std `sigma` (sigma > 0; p = 0 spends nothing)."""
    L, delta, p, T_u, N = _common(L, delta, p, T_u, N)
    sigma = finite("sigma", sigma, 0.0)
    z = sigma / L
    lo, hi = multiplier_range(T_u)
    if p > 0 and not lo <= z <= hi:
        raise ValueError(f"sigma = {sigma:g}: the noise multiplier sigma/L = {z:.6g} lies outside [{lo:.6g}, "
                         f"{hi:.6g}], the multipliers the accountants evaluate in floating point; valid: sigma in "
                         f"{_interval(lo * L, hi * L)} for L = {L:g}, T_u = {T_u}")
    rdp_a = rdp_subsampled_gaussian(p, z, T_u) if p > 0 else [0.0] * len(ORDERS)
    net = math.log(N) / N
    rdp_b = [net * r for r in rdp_a]
    num, den = L * L * p * T_u * math.log(N), sigma * sigma * N
    if p == 0:
        a = 0.0
    elif FLOAT_TINY <= num < math.inf and FLOAT_TINY <= den < math.inf:
        a = num / den                                              # Lemma A.11: RDP(alpha) = a alpha
    else:  # L^2 or sigma^2 beyond the float range (z is inside it): the same slope through z
        a = p * T_u * math.log(N) / N / (z * z)
    rdp_c = [a * alpha for alpha in ORDERS]
    c_classic = a + 2 * math.sqrt(a * math.log(1 / delta))        # min over real alpha > 1
    return NominalEpsilon(sigma, library_epsilon(rdp_a, delta), classic_epsilon(rdp_a, delta),
                          library_epsilon(rdp_b, delta), classic_epsilon(rdp_b, delta),
                          library_epsilon(rdp_c, delta), c_classic)


def dpsgd_noise_multiplier(sample_rate: float, steps: int, epsilon: float = 1.0,
                           delta: float = 1e-5) -> tuple[float, float]:
    """DP-SGD's noise multiplier z for (epsilon, delta) after `steps` Poisson-subsampled steps: (library,
    classic). Library: Opacus `get_noise_multiplier` (RDP accountant, its default orders and conversion, the
    certificate the baseline runs with); classic: the least z whose classic conversion at orders 2..256 is
    <= epsilon (the spec's 1.096 at q = 256/60000, 100 steps, (1, 1e-5))."""
    from opacus.accountants.utils import get_noise_multiplier
    from scipy.optimize import brentq

    q = finite("sample_rate", sample_rate, 0.0, high=1.0, high_strict=False)
    steps = integer("steps", steps)
    epsilon = finite("epsilon", epsilon, 0.0)
    delta = probability("delta", delta)
    # the classic search below starts at z = 1e-3: an epsilon at or above that z's is reached by no z it
    # searches (brentq's bracket has no sign change), and the library's bisection never ends on it
    eps_max = classic_epsilon(rdp_subsampled_gaussian(q, 1e-3, steps), delta)
    if not epsilon < eps_max:
        raise ValueError(f"epsilon = {epsilon:g}: not below {eps_max:.6g}, the classic epsilon of the least noise "
                         f"multiplier searched (1e-3) at this sample rate, steps and delta; valid: 0 < epsilon < "
                         f"{eps_max:.6g}")
    try:
        lib = float(get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=q, steps=steps,
                                         accountant="rdp", epsilon_tolerance=1e-3))
    except ValueError as err:  # Opacus: "The privacy budget is too low." (no noise multiplier <= 1e6 reaches it)
        raise ValueError(f"epsilon = {epsilon:g}: {err} (the library finds no noise multiplier reaching it); valid: "
                         "a larger epsilon or delta") from None

    def excess(z: float) -> float:
        return classic_epsilon(rdp_subsampled_gaussian(q, z, steps), delta) - epsilon

    hi = 1.0
    while excess(hi) > 0:
        hi *= 2
        if hi > 1e6:
            raise ValueError(f"epsilon = {epsilon}: no noise multiplier <= 1e6 reaches it")
    classic = brentq(excess, 1e-3, hi, xtol=1e-6)
    return lib, float(classic + 1e-6)  # the bracket's safe side (classic epsilon <= target)
