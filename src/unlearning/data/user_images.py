"""A real-image user-level stand-in: Fashion-MNIST (or any processed image set) regrouped into "users" that each
carry an identity signature, for user-level unlearning benchmarks whose data cannot be had offline (Mu & Klabjan
2025, Section 4.3: Lacuna-100, the images of 100 celebrities, one gender label per celebrity).

Construction (every draw from generators seeded by (seed, purpose)):
- a binary task on two classes `pair` = (a, b): label 0 for class a, 1 for class b;
- `users` in-distribution users, half of each label (as Lacuna's 50 female + 50 male training identities); a
  user owns `per_user` distinct images of its label, drawn without replacement from the official training
  split; the last `test_frac` of each user's images go to the test split (Lacuna's last 100 of 500);
- `ood_users` out-of-distribution users (half per label), `ood_per_user` images each, drawn from the official
  test split, so no OOD image or user is ever trained on (Lacuna's 100 unseen celebrities);
- every user u has a signature s_u: a random +-1 pattern on a 7 x 7 grid, upsampled to the image, scaled by
  `signature_scale`; each of u's images is x = image / 255 + s_u, then all are standardised with the training
  split's mean and standard deviation.

Why the signature stands for identity: in Lacuna-100 every image of a celebrity shares the face, a feature no
other user has and that the label (gender) does not need; here every image of a user shares s_u, which no other
user has and which carries no label information (it is drawn independently of the label). A model can memorise
it, so forgetting a user is forgetting something user-specific, and a membership attack that compares the
forgotten users with unseen users (whose signatures were never trained on) sees it: identity, not class or
image statistics, separates members from non-members.

The train folder is split stratified by label into train and validation (`val_frac`), as Lacuna's 80/20.
Returns the same dictionary as `user_synthetic.user_dataset`, so the same forget-user draw applies.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..seeding import generator
from .user_synthetic import _frac, _int, _stratified_val

SIGNATURE_GRID = 7


def _pick(labels: torch.Tensor, cls: int, count: int, gen: torch.Generator, what: str) -> torch.Tensor:
    pool = torch.nonzero(labels == cls).flatten()
    if count > len(pool):
        raise ValueError(f"{what}: {count} images of class {cls} needed, the split has {len(pool)}; valid: fewer "
                         "users or images per user")
    return pool[torch.randperm(len(pool), generator=gen)[:count]]


def _users(images: torch.Tensor, labels: torch.Tensor, pair: tuple[int, int], users: int, per_user: int,
           gen: torch.Generator, what: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(image rows, binary labels, user ids 0..users-1): users/2 per label, per_user distinct images each."""
    rows, ys, owner = [], [], []
    half = users // 2
    for b, cls in enumerate(pair):
        chosen = _pick(labels, cls, half * per_user, gen, what).view(half, per_user)
        for k in range(half):
            rows.append(chosen[k])
            ys.append(torch.full((per_user,), b))
            owner.append(torch.full((per_user,), b * half + k))
    return torch.cat(rows), torch.cat(ys), torch.cat(owner)


def signatures(seed: int, count: int, shape: tuple[int, ...], scale: float, purpose: str) -> torch.Tensor:
    """[count, C, H, W] user signatures: +-1 on a 7 x 7 grid, nearest-upsampled to H x W, times `scale`."""
    g = generator(seed, "user-images", "signature", purpose)
    grid = torch.randint(0, 2, (count, shape[0], SIGNATURE_GRID, SIGNATURE_GRID), generator=g).float() * 2 - 1
    return scale * F.interpolate(grid, size=tuple(shape[1:]), mode="nearest")


def user_image_dataset(processed: dict[str, torch.Tensor], seed: int, pair: tuple[int, int] = (2, 4),
                       users: int = 100, per_user: int = 50, ood_users: int = 20, ood_per_user: int = 50,
                       signature_scale: float = 0.5, test_frac: float = 0.2, val_frac: float = 0.2,
                       flatten: bool = True) -> dict[str, torch.Tensor]:
    """The user-structured binary image set described in the module docstring, from processed uint8 tensors
    {x_train, y_train, x_test, y_test} (data/datasets.py). Features are normalised per pixel and flattened to
    [N, C*H*W] float32, or kept as [N, C, H, W] images with `flatten=False` (a convolutional model)."""
    a, b = (int(c) for c in pair)
    if a == b:
        raise ValueError(f"pair = {list(pair)}: the two classes must differ")
    users, per_user = _int("users", users, 2), _int("per_user", per_user, 2)
    ood_users, ood_per_user = _int("ood_users", ood_users, 2), _int("ood_per_user", ood_per_user, 1)
    if users % 2 or ood_users % 2:
        raise ValueError(f"users = {users}, ood_users = {ood_users}: half of each label; valid: even counts")
    test_frac, val_frac = _frac("test_frac", test_frac), _frac("val_frac", val_frac)
    if not signature_scale >= 0:
        raise ValueError(f"signature_scale = {signature_scale!r}: valid: a number >= 0")
    for c in (a, b):
        if not bool((processed["y_train"] == c).any()):
            raise ValueError(f"pair = {[a, b]}: class {c} has no training images; valid: classes of the data set")
    shape = tuple(processed["x_train"].shape[1:])
    g = generator(seed, "user-images", "draw")
    rows, y, user = _users(processed["y_train"], processed["y_train"], (a, b), users, per_user, g, "users")
    orows, oy, ouser = _users(processed["y_test"], processed["y_test"], (a, b), ood_users, ood_per_user, g,
                              "ood_users")
    sig = signatures(seed, users, shape, float(signature_scale), "in")
    osig = signatures(seed, ood_users, shape, float(signature_scale), "ood")
    x = processed["x_train"][rows].float() / 255 + sig[user]
    ox = processed["x_test"][orows].float() / 255 + osig[ouser]
    k = max(1, round(test_frac * per_user))
    position = torch.arange(len(user)) % per_user  # rows are grouped by user, per_user each
    is_test = position >= per_user - k
    test = torch.nonzero(is_test).flatten()
    train, val = _stratified_val(y, torch.nonzero(~is_test).flatten(), val_frac, seed)
    flat = torch.cat([x, ox]).flatten(1)
    mean, std = flat[train].mean(0), flat[train].std(0).clamp_min(1e-6)
    n_in = len(user)
    features = ((flat - mean) / std).float()
    return {"x": features if flatten else features.view(-1, *shape), "y": torch.cat([y, oy]).long(),
            "user": torch.cat([user, ouser + users]), "train": train, "val": val, "test": test,
            "ood": torch.arange(n_in, n_in + len(ouser))}
