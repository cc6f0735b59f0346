"""Synthetic user-structured data: the offline stand-in for user-level unlearning benchmarks (Mu & Klabjan 2025,
Section 4: eICU stays grouped by patient, Lacuna-100 faces grouped by celebrity), which cannot be downloaded here.

Each user u has a latent offset o_u ~ N(0, offset_scale^2 I); a sample of u is x = z + o_u with z ~ N(0, I).
One global nonlinear rule labels every sample: y = 1[w2 . tanh(W1 x) > t] (a fixed random two-layer map, t the
quantile that gives `positive_rate`), then each label flips with probability `flip`. A large offset makes the
label mostly a property of the user (Lacuna-like: one gender per celebrity); a small one makes it per sample
(eICU-like). Users for the out-of-distribution (OOD) pool are fresh draws that never enter training.

Two shapes of data set, as in the paper's Section 4.2-4.3:
- eICU-like: many users with 1-24 samples each (1 + a geometric count capped at 23), a test split of
  `test_frac` of all samples at sample level (users overlap train and test), small offsets;
- Lacuna-like: few users with `per_user` samples each (the last `test_frac` of each user's samples to test),
  large offsets, a class-balanced OOD pool of fresh users.
The remaining "train folder" is split stratified by class into train and validation (`val_frac`).
Everything is drawn from generators seeded by (seed, purpose), so a seed gives byte-identical tensors.
"""

from __future__ import annotations

import math
import numbers

import torch

from .. import floatmath
from ..seeding import generator


def _int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} = {value!r}: valid: an integer >= {low}")
    return int(value)


def _frac(name: str, value, low: float = 0.0, high: float = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not low < value < high:
        raise ValueError(f"{name} = {value!r}: valid: a number in ({low:g}, {high:g})")
    return float(value)


def _rule(seed: int, dim: int, hidden: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = generator(seed, "user-synthetic", "rule")
    return torch.randn(dim, hidden, generator=g) / math.sqrt(dim), torch.randn(hidden, generator=g)


def _score(x: torch.Tensor, rule: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    W1, w2 = rule
    return floatmath.tanh(x @ W1 * 2.0) @ w2


def _samples(seed: int, purpose: str, sizes: torch.Tensor, dim: int, offset_scale: float
             ) -> tuple[torch.Tensor, torch.Tensor]:
    g = generator(seed, "user-synthetic", purpose)
    offsets = torch.randn(len(sizes), dim, generator=g) * offset_scale
    user = torch.repeat_interleave(torch.arange(len(sizes)), sizes)
    return torch.randn(len(user), dim, generator=g) + offsets[user], user


def _labels(seed: int, purpose: str, x: torch.Tensor, rule, threshold: float, flip: float) -> torch.Tensor:
    g = generator(seed, "user-synthetic", purpose, "flip")
    y = (_score(x, rule) > threshold).long()
    flips = torch.rand(len(y), generator=g) < flip
    return torch.where(flips, 1 - y, y)


def _stratified_val(y: torch.Tensor, idx: torch.Tensor, val_frac: float, seed: int) -> tuple[torch.Tensor, ...]:
    g = generator(seed, "user-synthetic", "val")
    train, val = [], []
    for c in (0, 1):
        members = idx[y[idx] == c]
        members = members[torch.randperm(len(members), generator=g)]
        k = round(val_frac * len(members))
        val.append(members[:k])
        train.append(members[k:])
    return torch.sort(torch.cat(train)).values, torch.sort(torch.cat(val)).values


def user_dataset(seed: int, kind: str, users: int, dim: int, per_user: int = 500, ood_users: int = 20,
                 ood_per_user: int = 100, offset_scale: float | None = None, positive_rate: float | None = None,
                 flip: float = 0.05, test_frac: float = 0.2, val_frac: float = 0.2, geometric_p: float = 0.35
                 ) -> dict[str, torch.Tensor]:
    """A user-structured binary data set of `kind` "eicu-like" or "lacuna-like" (module docstring).

    Returns tensors x [N, dim] float32, y [N] int64, user [N] int64 (OOD users numbered after the `users`
    in-distribution ones) and the index sets train, val, test, ood into them."""
    if kind not in ("eicu-like", "lacuna-like"):
        raise ValueError(f"kind = {kind!r}: valid: eicu-like, lacuna-like")
    users, dim = _int("users", users, 2), _int("dim", dim, 1)
    ood_users, ood_per_user = _int("ood_users", ood_users, 0), _int("ood_per_user", ood_per_user, 1)
    lacuna = kind == "lacuna-like"
    offset_scale = (3.0 if lacuna else 0.5) if offset_scale is None else offset_scale
    if isinstance(offset_scale, bool) or not isinstance(offset_scale, numbers.Real) or offset_scale < 0:
        raise ValueError(f"offset_scale = {offset_scale!r}: valid: a number >= 0")
    positive_rate = _frac("positive_rate", (0.5 if lacuna else 0.35) if positive_rate is None else positive_rate)
    flip = float(flip) if flip == 0 else _frac("flip", flip, 0.0, 0.5)
    test_frac, val_frac = _frac("test_frac", test_frac), _frac("val_frac", val_frac)
    if lacuna:
        per_user = _int("per_user", per_user, 2)
        sizes = torch.full((users,), per_user)
    else:
        geometric_p = _frac("geometric_p", geometric_p)
        g = generator(seed, "user-synthetic", "sizes")
        u = torch.rand(users, generator=g).clamp_min(1e-12)
        extra = torch.floor(torch.log(u) / math.log(1 - geometric_p)).long()
        sizes = 1 + extra.clamp(max=23)
    rule = _rule(seed, dim)
    x, user = _samples(seed, "in", sizes, dim, float(offset_scale))
    threshold = float(torch.quantile(_score(x, rule), 1 - positive_rate))
    y = _labels(seed, "in", x, rule, threshold, flip)
    if lacuna:  # the last test_frac of each user's samples (the paper's last 100 of 500)
        k = max(1, round(test_frac * per_user))
        position = torch.arange(len(user)) - torch.repeat_interleave(torch.cumsum(sizes, 0) - sizes, sizes)
        is_test = position >= per_user - k
    else:  # a random test_frac of all samples; users overlap train and test
        perm = torch.randperm(len(user), generator=generator(seed, "user-synthetic", "test"))
        is_test = torch.zeros(len(user), dtype=torch.bool)
        is_test[perm[:round(test_frac * len(user))]] = True
    test = torch.nonzero(is_test).flatten()
    train, val = _stratified_val(y, torch.nonzero(~is_test).flatten(), val_frac, seed)
    ox, ouser = _samples(seed, "ood", torch.full((ood_users,), ood_per_user), dim, float(offset_scale))
    oy = _labels(seed, "ood", ox, rule, threshold, flip)
    n_in = len(user)
    return {"x": torch.cat([x, ox]).float(), "y": torch.cat([y, oy]), "user": torch.cat([user, ouser + users]),
            "train": train, "val": val, "test": test, "ood": torch.arange(n_in, n_in + len(ouser))}


def user_labels(data: dict[str, torch.Tensor], index: torch.Tensor) -> dict[int, int]:
    """Each user's label among the samples `index`: the mode (ties -> 1), as Lacuna-100's per-identity label."""
    out: dict[int, int] = {}
    users, ys = data["user"][index], data["y"][index]
    for u in torch.unique(users).tolist():
        mine = ys[users == u]
        out[u] = int(2 * int(mine.sum()) >= len(mine))
    return out


def forget_users(data: dict[str, torch.Tensor], count: int, seed: int, per_class: bool = False) -> list[int]:
    """`count` users drawn uniformly among those with training samples (eICU-like), or count/2 within each
    class of the user labels (`per_class`, Lacuna-like: one female and one male celebrity for count 2)."""
    count = _int("forget_users", count, 1)
    labels = user_labels(data, data["train"])
    g = generator(seed, "user-synthetic", "forget")
    if not per_class:
        pool = torch.tensor(sorted(labels))
        if count > len(pool):
            raise ValueError(f"forget_users = {count}: only {len(pool)} users have training samples; valid: "
                             f"1 .. {len(pool)}")
        return sorted(pool[torch.randperm(len(pool), generator=g)[:count]].tolist())
    if count % 2:
        raise ValueError(f"forget_users = {count}: per-class selection needs an even count; valid: 2, 4, ...")
    chosen: list[int] = []
    for c in (0, 1):
        pool = torch.tensor(sorted(u for u, lab in labels.items() if lab == c))
        if count // 2 > len(pool):
            raise ValueError(f"forget_users = {count}: class {c} has only {len(pool)} users; valid: at most "
                             f"{2 * len(pool)}")
        chosen += pool[torch.randperm(len(pool), generator=g)[:count // 2]].tolist()
    return sorted(chosen)


def forget_indices(data: dict[str, torch.Tensor], users: list[int]) -> torch.Tensor:
    """Z: the training samples of `users`; every user must have training samples (else a one-line error)."""
    train_users = set(data["user"][data["train"]].tolist())
    missing = [u for u in users if u not in train_users]
    if missing:
        raise ValueError(f"forget users = {missing[:5]}: not in the training data; valid: users with training "
                         "samples")
    mask = torch.isin(data["user"][data["train"]], torch.tensor(users))
    return data["train"][mask]
