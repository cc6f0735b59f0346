"""The noise of the two certified baselines Rewind-to-Delete is compared with (Mu & Klabjan 2025, Appendix D.2), as
the authors' code computes it; both are calibrated with the analytic Gaussian mechanism (r2d_noise.analytic_sigma).

CNS (Constrained Newton Step, Zhang et al. 2024), `compute_noise_cns`:

    Delta = (2 C (M C + lam) + G) / (lam + lam_min) + (16 sqrt(d / rho) / (lam + lam_min) + 1/16) (2 L C + G)

with C = R (the norm constraint), M the Hessian-Lipschitz constant, lam the regularisation, lam_min the least
Hessian eigenvalue, rho < 1 a probability, d the parameter count, L and G the smoothness and gradient bound
(R2D's estimates). At the paper's eICU constants Delta is about 191.5: the noise swamps the model.

HF (Hessian-Free recollection, Qiao et al. 2024), the code's bound on the approximation error:

    b = 2 eta0^2 C [(rho^T - d^T)/(rho - d) - (rho^T - d^(2T))/(rho - d^2)] (1 - d)
        + 2 eta0 C (m / B) (rho^T - d^T) / (rho^B' - d^B') rho^B' d^B'

with the per-step decay d, the clipping norm C, T = n (E + 1) / B steps, B' = ceil(n / B) and rho the top
eigenvalue of the first batch's (clipped) Hessian divided by the batch size.
"""

from __future__ import annotations

import math

from .r2d_noise import analytic_sigma
from .search import finite


def cns_sensitivity(R: float, L: float, G: float, d: int, lam: float = 2000.0, M: float = 1.0, rho: float = 0.1,
                    lam_min: float = 0.0) -> float:
    """CNS's l2 sensitivity (the module docstring; C = R)."""
    R, L, G = finite("R (norm constraint)", R), finite("L (smoothness)", L), finite("G (gradient bound)", G)
    lam, M = finite("lam", lam), finite("M (Hessian Lipschitz)", M, strict=False)
    rho = finite("rho", rho, high=1.0)
    lam_min = finite("lam_min", lam_min, strict=False)
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d (parameters) = {d!r}: valid: an integer >= 1")
    den = lam + lam_min
    return (2 * R * (M * R + lam) + G) / den + (16 * math.sqrt(d / rho) / den + 1 / 16) * (2 * L * R + G)


def hf_sensitivity(eta0: float, clip: float, decay: float, rho: float, n: int, batch: int, epochs: int,
                   m: int) -> float:
    """HF's bound b (the module docstring), T = n (epochs + 1) / batch, B' = ceil(n / batch)."""
    eta0, clip = finite("eta0", eta0), finite("clip", clip)
    decay = finite("decay", decay, high=1.0, high_strict=True)
    rho = finite("rho (top Hessian eigenvalue / batch)", rho, strict=False)
    T = n * (epochs + 1) / batch
    Bp = math.ceil(n / batch)
    d = decay
    try:
        first = (rho**T - d**T) / (rho - d) - (rho**T - d ** (2 * T)) / (rho - d * d)
        second = (rho**T - d**T) / (rho**Bp - d**Bp) * rho**Bp * d**Bp
    except (OverflowError, ZeroDivisionError) as err:
        raise ValueError(f"rho (top Hessian eigenvalue / batch) = {rho:g}: HF's bound is not finite here ({err}); "
                         "valid: rho < 1 away from the decay") from None
    b = 2 * eta0**2 * clip * first * (1 - d) + 2 * eta0 * clip * (m / batch) * second
    if not math.isfinite(b):
        raise ValueError(f"rho (top Hessian eigenvalue / batch) = {rho:g}: HF's bound overflows for T = {T:g} steps; "
                         "valid: rho < 1")
    return abs(b)


def sigma_for(epsilon: float, delta: float, Delta: float) -> float:
    """The analytic Gaussian sigma for sensitivity Delta (both baselines)."""
    return analytic_sigma(epsilon, delta, Delta)
