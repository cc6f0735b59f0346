"""Accounting of SGLU's baselines (spec sglu.md 2.5.2, 2.5.3, 4.6): D2D and Langevin unlearning (LU).

* D2D, Descent-to-Delete (Neel et al. 2021): full-batch GD with output perturbation. Theorem L.1 (Neel
  Thm 9, non-private internal state) and Theorem L.2 (Neel Thm 28, no internal state).
* LU, Langevin unlearning (Chien et al. 2024): PNGD with the LSI analysis, Theorems M.1 + M.2, and the LU
  paper's sequential Theorem 3.3 (the order alpha doubles at each request).

Pure functions of an explicit `BaselineConstants`. One step = one full-batch epoch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from unlearning.privacy.search import finite, integer, least_sigma, probability
from unlearning.privacy.sglu import ALPHA_ONE, check_target, eps_dp, least_k

LU_ALPHA_SIGMA = (ALPHA_ONE, 1e4)  # Theorem M.1 + M.2 sigma search (Fig. 3a): alpha in (1, 1e4]
LU_ALPHA_SEQUENTIAL = (ALPHA_ONE, 1e5)  # sequential LU (Fig. 3b): alpha in (1, 1e5]
LU_RECURSIONS = ("triangle", "d54b5b6")


@dataclass(frozen=True)
class BaselineConstants:
    """n points, L-smooth, m-strongly convex, M-Lipschitz losses in d dimensions; delta; LU step eta (1/L)."""

    n: int
    L: float
    m: float
    d: int
    delta: float
    M: float = 1.0
    eta: float | None = None

    def __post_init__(self) -> None:
        integer("n", self.n, 1)
        integer("d", self.d, 1)
        for name in ("L", "m", "M"):
            finite(name, getattr(self, name))
        probability("delta", self.delta)
        if self.eta is not None:
            finite("eta", self.eta)
        if self.m > self.L:
            raise ValueError(f"m = {self.m}, L = {self.L}: need 0 < m <= L")

    @property
    def step(self) -> float:
        """LU's step size eta (1/L unless given)."""
        return 1 / self.L if self.eta is None else self.eta

    @property
    def gamma(self) -> float:
        """D2D's contraction gamma = (L - m) / (L + m)."""
        return (self.L - self.m) / (self.L + self.m)

    @property
    def eta_d2d(self) -> float:
        """D2D's step size 2 / (L + m)."""
        return 2 / (self.L + self.m)


_PUBLISHED = {  # spec 4.6: untruncated n, m = lambda n with lambda = 1e-6 n, data-dependent L
    "mnist": (11982, 0.011982, 0.194700, 784),
    "cifar10": (10000, 0.01, 0.183109, 512),
}
_SGLU_N = {"mnist": (11264, 784), "cifar10": (9728, 512)}  # spec 4.1: truncated sizes


def _dataset(dataset: str) -> str:
    name = {"cifar": "cifar10"}.get(dataset.lower(), dataset.lower())
    if name not in _PUBLISHED:
        raise ValueError(f"dataset = {dataset!r}: valid: mnist, cifar10")
    return name


def published_baseline_constants(dataset: str) -> BaselineConstants:
    """The constants the published LU / D2D curves used (spec 4.6): n = 11982 / 10000, m = 0.011982 / 0.01,
    L = 0.194700 / 0.183109, d = 784 / 512, delta = 1/n."""
    n, m, L, d = _PUBLISHED[_dataset(dataset)]
    return BaselineConstants(n=n, L=L, m=m, d=d, delta=1 / n)


def sglu_baseline_constants(dataset: str) -> BaselineConstants:
    """SGLU's own constants for the baselines (spec 4.6, last table): n = 11264 / 9728, L = 1/4 + lambda,
    m = lambda = 1e-6 n, delta = 1/n."""
    n, d = _SGLU_N[_dataset(dataset)]
    lam = 1e-6 * n
    return BaselineConstants(n=n, L=0.25 + lam, m=lam, d=d, delta=1 / n)


# ---------------------------------------------------------------------------------------------- D2D


def d2d_sigma_internal(k: BaselineConstants, eps: float, steps: int) -> float:
    """Theorem L.1 (eq. 74), with internal state and I = ``steps`` unlearning steps:
    sigma = 4 sqrt(2) M gamma^I / (m n (1 - gamma^I) (sqrt(log(1/delta) + eps) - sqrt(log(1/delta))))."""
    finite("epsilon", eps)
    integer("steps", steps, 1)
    g, log_inv = k.gamma**steps, math.log(1 / k.delta)
    gap = math.sqrt(log_inv + eps) - math.sqrt(log_inv)
    return 4 * math.sqrt(2) * k.M * g / (k.m * k.n * (1 - g) * gap)


def d2d_min_steps(k: BaselineConstants, eps: float) -> int:
    """Theorem L.2 (eq. 75): the least integer I >= log(sqrt(2d) / (1 - gamma) / (sqrt(2 log(2/delta) + eps)
    - sqrt(2 log(2/delta)))) / log(1/gamma)."""
    finite("epsilon", eps)
    base = 2 * math.log(2 / k.delta)
    gap = math.sqrt(base + eps) - math.sqrt(base)
    return math.ceil(math.log(math.sqrt(2 * k.d) / (1 - k.gamma) / gap) / math.log(1 / k.gamma))


def d2d_request_steps(k: BaselineConstants, eps: float, i: int) -> int:
    """Theorem L.2: GD steps for the i-th request (1-based), K_i = I + ceil(log(log(4 d i / delta)) / log(1/gamma))."""
    if i < 1:
        raise ValueError(f"i = {i}: requests are numbered from 1")
    extra = math.log(math.log(4 * k.d * i / k.delta)) / math.log(1 / k.gamma)
    return d2d_min_steps(k, eps) + math.ceil(extra)


def d2d_sequential_steps(k: BaselineConstants, eps: float, requests: int) -> list[int]:
    """Theorem L.2's K_i for requests i = 1..requests (one point each)."""
    return [d2d_request_steps(k, eps, i) for i in range(1, requests + 1)]


def d2d_sigma_no_state(k: BaselineConstants, eps: float, steps: int) -> float:
    """Theorem L.2 (eq. 76) at I = ``steps``: sigma = 8 M gamma^I / (m n (1 - gamma^I) (sqrt(2 log(2/delta) + 3 eps)
    - sqrt(2 log(2/delta) + 2 eps))). The theorem takes I = `d2d_min_steps` (MNIST 1.56e-4 with 4.6's constants);
    the authors' code took the request's total steps K_i (8.09e-6, the value spec 4.6 lists)."""
    finite("epsilon", eps)
    integer("steps", steps, 1)
    g, base = k.gamma**steps, 2 * math.log(2 / k.delta)
    gap = math.sqrt(base + 3 * eps) - math.sqrt(base + 2 * eps)
    return 8 * k.M * g / (k.m * k.n * (1 - g) * gap)


# ---------------------------------------------------------------------------------------------- LU


def lu_learning_rdp(k: BaselineConstants, sigma: float, alpha: float, S: int = 1, T: int | None = None) -> float:
    """Theorem M.2 (eq. 78): eps0^(S)(alpha) = 4 alpha S^2 M^2 / (m sigma^2 n^2) (1 - exp(-m eta T));
    T = None is the converged value without the bracket (as the authors' code)."""
    eps0 = 4 * alpha * S * S * k.M**2 / (k.m * sigma * sigma * k.n * k.n)
    return eps0 if T is None else eps0 * (1 - math.exp(-k.m * k.step * T))


def lu_rdp(k: BaselineConstants, sigma: float, K: int, alpha: float, S: int = 1) -> float:
    """Theorems M.1 + M.2 (eq. 79), one request of S points and K steps from the converged model:
    eps(alpha) = exp(-m eta K / alpha) 4 alpha S^2 M^2 / (m sigma^2 n^2)."""
    return math.exp(-k.m * k.step * K / alpha) * lu_learning_rdp(k, sigma, alpha, S)


def lu_epsilon(k: BaselineConstants, sigma: float, K: int, S: int = 1,
               alpha: tuple[float, float] = LU_ALPHA_SIGMA) -> float:
    """(epsilon, delta) of one LU request: eq. 79 + Prop. K.2 over alpha in (1, 1e4]."""
    finite("sigma", sigma)
    integer("K", K, 1)
    integer("S", S, 1)
    return eps_dp(lambda a: lu_rdp(k, sigma, K, a, S), k.delta, *alpha)


def lu_sigma_for_budget(k: BaselineConstants, eps: float, K_hat: int = 1, S: int = 1,
                        alpha: tuple[float, float] = LU_ALPHA_SIGMA) -> float:
    """Fig. 3a's LU sigma: the least sigma whose least K is <= K_hat, by Algorithm 4's bisection (1e-15, 10,
    tol 1e-8; widened where 10 is not enough), so lu_epsilon(sigma) <= eps."""
    check_target(eps, k.delta, alpha[1])
    integer("K_hat", K_hat, 1)
    return least_sigma(lambda sigma: lu_epsilon(k, sigma, K_hat, S, alpha) <= eps,
                       target=f"epsilon {eps:g} for LU with K = {K_hat}")


def lu_sequential_rdp(k: BaselineConstants, sigma: float, ks: list[int], S: int = 1,
                      recursion: str = "triangle") -> Callable[[float], float]:
    """The LU paper's Theorem 3.3 for request s = len(ks), run with steps ks[0..s-1]:
    eps_1(a) = exp(-eta m K_1 / a) eps0(a), and for s >= 2

    * ``triangle`` (Mironov's weak triangle inequality; the published Fig. 3b, Sigma 8682 / 10428):
      eps_s(a) = exp(-eta m K_s / a) (eps0(2a - 1) + (a - 1/2)/(a - 1) eps_{s-1}(2a));
    * ``d54b5b6`` (the authors' later run, S = 5 / 20 sums of spec 7.14; looser):
      eps_s(a) = exp(-eta m K_s / a) (a - 1/2)/(a - 1) (eps0(2a) + eps_{s-1}(2a)).
    """
    if recursion not in LU_RECURSIONS:
        raise ValueError(f"recursion = {recursion!r}: valid: {', '.join(LU_RECURSIONS)}")
    rate = k.step * k.m

    def rdp(alpha: float, s: int = len(ks)) -> float:
        decay = math.exp(-rate * ks[s - 1] / alpha)
        if s == 1:
            return decay * lu_learning_rdp(k, sigma, alpha, S)
        weak = (alpha - 0.5) / (alpha - 1)
        previous = rdp(2 * alpha, s - 1)
        if recursion == "triangle":
            return decay * (lu_learning_rdp(k, sigma, 2 * alpha - 1, S) + weak * previous)
        return decay * weak * (lu_learning_rdp(k, sigma, 2 * alpha, S) + previous)

    return rdp


def lu_sequential_k(k: BaselineConstants, sigma: float, eps: float, requests: int, S: int = 1,
                    recursion: str = "triangle", alpha: tuple[float, float] = LU_ALPHA_SEQUENTIAL) -> list[int]:
    """Least K_s for ``requests`` sequential LU requests of S points each (alpha in (1, 1e5])."""
    ks: list[int] = []
    for _ in range(requests):
        def ok(K: int, done: tuple[int, ...] = tuple(ks)) -> bool:
            rdp = lu_sequential_rdp(k, sigma, [*done, K], S, recursion)
            return eps_dp(rdp, k.delta, *alpha) <= eps

        ks.append(least_k(ok, start=ks[-1] if ks else 1))
    return ks
