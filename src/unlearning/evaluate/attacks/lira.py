"""LiRA, the likelihood-ratio attack (Carlini, Chien, Nasr, Song, Terzis and Tramer, IEEE S&P 2022): per candidate,
the target model's logit-scaled confidence in the true label against Gaussians fitted to the reference models'
confidences with the candidate IN their training set and OUT of it.

- The signal (its Sec. IV.B): phi = log(p / (1 - p)), p the model's softmax probability of the true label,
  which makes the references' confidences approximately Gaussian. It is taken as the protocol gives it, the
  true-label log-odds computed from the logits in float64 (protocol.log_odds: z_y - logsumexp of the others), not
  from a float32 probability, which saturates at 1 from a margin of about 17 on.
- Online (references trained with and without each candidate, `ref_member` given): the score is the log
  likelihood ratio log N(phi; mu_in, sigma_in^2) - log N(phi; mu_out, sigma_out^2) (its eq. 4).
- Offline (every reference trained without it, or `ref_member` None): the one-sided test against OUT only, the
  score Phi((phi - mu_out) / sigma_out) (its Sec. VI.C): how far above the OUT models the target is confident.
- Variance: with few references a per-candidate variance from 1-4 values is noise; `variance="global"` (the paper's
  choice below 64 references, its Sec. VI.C) pools one variance per side over every candidate, `"per_example"`
  fits each candidate's own. With 2 references online (one IN and one OUT per candidate) or 1 offline, no degree of
  freedom is left for a variance: both sides then take one common variance, whose value changes no ranking (the
  online score is a difference of squared distances over it, the offline one monotone in phi - mu_out), so the
  AUC and the TPRs are the equal-variance likelihood ratio's; `zero_dof` says where this happened.

Higher scores mean "member". The metrics (ROC AUC, TPR at 1 % and 0.1 % FPR) are RMIA's (`rmia.metrics`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from .protocol import Fitted, References, reference_attack

VARIANCES = ("global", "per_example")


def zero_dof(member: np.ndarray) -> bool:
    """Whether some side of the references ([k, n] membership) leaves no degree of freedom for a variance: every
    candidate with references on that side has exactly one."""
    return any(((c := side.sum(0))[c > 0] == 1).all() and (c > 0).any() for side in (member, ~member))


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


def scores(phi_target, phi_ref, ref_member=None, variance: str = "global") -> np.ndarray:
    """LiRA scores of n candidates: phi_target [n] the target's log-odds of each candidate's true label, phi_ref
    [k, n] the references', ref_member [k, n] (optional) whether each reference trained on each candidate. Online
    where a candidate has IN and OUT references, offline where it has OUT ones only (module docstring)."""
    if variance not in VARIANCES:
        raise ValueError(f"lira: variance = {variance!r}; valid: {', '.join(VARIANCES)}")
    target, phi = np.asarray(phi_target, np.float64), np.asarray(phi_ref, np.float64)
    if not (np.isfinite(target).all() and np.isfinite(phi).all()):
        raise ValueError("lira: some log-odds are not finite; valid: finite log-odds (protocol.log_odds)")
    if phi.ndim != 2 or phi.shape[1] != len(target):
        raise ValueError(f"lira: phi_ref has shape {phi.shape}; valid: [k, {len(target)}]")
    member = np.zeros(phi.shape, bool) if ref_member is None else np.asarray(ref_member, bool)
    if member.shape != phi.shape:
        raise ValueError(f"lira: ref_member has shape {member.shape}; valid: phi_ref's {phi.shape}")
    mu_out, sd_out, has_out = _fit(phi, ~member, variance)
    if not has_out.all():
        raise ValueError("lira: some candidates have no OUT reference; valid: references trained without each")
    mu_in, sd_in, has_in = _fit(phi, member, variance)
    if zero_dof(member):  # no variance to estimate: one common one, which ranks nothing differently
        sd_in, sd_out = np.ones_like(sd_in), np.ones_like(sd_out)
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
    variance = "global" if len(refs.phi_ref) < 64 else "per_example"
    member = np.zeros(refs.phi_ref.shape, bool) if refs.cand_member is None else refs.cand_member
    how = ", one common variance (no degree of freedom for one: 2 references)" if zero_dof(member) else ""
    return Fitted(lambda phi_cand, phi_pop: scores(phi_cand, refs.phi_ref, refs.cand_member, variance),
                  ("online" if refs.cand_member is not None else "offline") + f", {variance} variance{how}")
