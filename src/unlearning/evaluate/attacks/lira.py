"""LiRA, the likelihood-ratio attack (Carlini, Chien, Nasr, Song, Terzis and Tramer, IEEE S&P 2022): per candidate,
the target model's logit-scaled confidence in the true label against Gaussians fitted to the reference models'
confidences with the candidate IN their training set and OUT of it.

- The signal (its Sec. IV.B): phi(p) = log(p / (1 - p)), p the model's softmax probability of the true label,
  which makes the references' confidences approximately Gaussian.
- Online (references trained with and without each candidate, `ref_member` given): the score is the log
  likelihood ratio log N(phi; mu_in, sigma_in^2) - log N(phi; mu_out, sigma_out^2) (its eq. 4).
- Offline (every reference trained without it, or `ref_member` None): the one-sided test against OUT only, the
  score Phi((phi - mu_out) / sigma_out) (its Sec. VI.C): how far above the OUT models the target is confident.
- Variance: with few references a per-candidate variance from 1-4 values is noise; `variance="global"` (the paper's
  choice below 64 references, its Sec. VI.C) pools one variance per side over every candidate, `"per_example"`
  fits each candidate's own.

Higher scores mean "member". The metrics (ROC AUC, TPR at 1 % and 0.1 % FPR) are RMIA's (`rmia.metrics`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .protocol import Fitted, References, reference_attack

VARIANCES = ("global", "per_example")
EPS = 1e-30  # keeps log(p / (1 - p)) finite at p = 0 or 1 (float64)


def logit_scale(p) -> np.ndarray:
    """phi(p) = log(p / (1 - p)), computed as log p - log(1 - p) with p clipped away from 0 and 1 by EPS."""
    p = np.clip(np.asarray(p, np.float64), EPS, np.nextafter(1.0, 0.0))
    return np.log(p) - np.log1p(-p)


def _fit(phi: np.ndarray, mask: np.ndarray, variance: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate, the mean and std of the references' phi where `mask` ([k, n]) holds, and whether any does."""
    count = mask.sum(0)
    mean = np.where(mask, phi, 0).sum(0) / np.maximum(count, 1)
    resid = np.where(mask, phi - mean, 0.0)
    if variance == "global":
        dof = max(int(count.sum() - (count > 0).sum()), 1)
        std = np.full(phi.shape[1], np.sqrt((resid ** 2).sum() / dof))
    else:
        std = np.sqrt((resid ** 2).sum(0) / np.maximum(count - 1, 1))
    return mean, np.maximum(std, 1e-6), count > 0


_LOG_SQRT_2PI = np.log(np.sqrt(2 * np.pi))


def _norm_logpdf(x, mean, std) -> np.ndarray:
    """scipy.stats.norm.logpdf(x, mean, std) for std > 0, in its operations and their order (the same bits),
    without importing scipy.stats (a second of every job's start)."""
    z = (x - mean) / std
    return (-z**2 / 2.0 - _LOG_SQRT_2PI) - np.log(std)


def scores(p_target, p_ref, ref_member=None, variance: str = "global") -> np.ndarray:
    """LiRA scores of n candidates: p_target [n] the target's probability of each candidate's true label, p_ref
    [k, n] the references', ref_member [k, n] (optional) whether each reference trained on each candidate. Online
    where a candidate has IN and OUT references, offline where it has OUT ones only (module docstring)."""
    if variance not in VARIANCES:
        raise ValueError(f"lira: variance = {variance!r}; valid: {', '.join(VARIANCES)}")
    target, phi = logit_scale(p_target), logit_scale(p_ref)
    if phi.ndim != 2 or phi.shape[1] != len(target):
        raise ValueError(f"lira: p_ref has shape {phi.shape}; valid: [k, {len(target)}]")
    member = np.zeros(phi.shape, bool) if ref_member is None else np.asarray(ref_member, bool)
    if member.shape != phi.shape:
        raise ValueError(f"lira: ref_member has shape {member.shape}; valid: p_ref's {phi.shape}")
    mu_out, sd_out, has_out = _fit(phi, ~member, variance)
    if not has_out.all():
        raise ValueError("lira: some candidates have no OUT reference; valid: references trained without each")
    mu_in, sd_in, has_in = _fit(phi, member, variance)
    online = _norm_logpdf(target, mu_in, sd_in) - _norm_logpdf(target, mu_out, sd_out)
    offline = ndtr((target - mu_out) / sd_out)
    if has_in.any() and not has_in.all():
        raise ValueError("lira: some candidates have IN references and some none; valid: all or none (online or "
                         "offline)")
    return online if has_in.all() else offline


@reference_attack("lira", label="LiRA")
def fit_reference_attack(refs: References) -> Fitted:
    """The common ground's LiRA on the judge's references: online where each candidate has IN and OUT references,
    one pooled variance per side below 64 references (its Sec. VI.C), a per-candidate one from 64."""
    variance = "global" if len(refs.p_ref) < 64 else "per_example"
    return Fitted(lambda p_cand, p_pop: scores(p_cand, refs.p_ref, refs.cand_member, variance),
                  ("online" if refs.cand_member is not None else "offline") + f", {variance} variance")
