"""Loaders for the two user-level data sets of Mu & Klabjan 2025 (Section 4.2-4.3), which cannot be downloaded here:
eICU (credentialed PhysioNet access) and Lacuna-100 (built from VGGFace2, no longer distributed). They read the
processed files in the layout of the authors' pipeline and return the layout of data/user_synthetic.py.

eICU (`folder/{train,test}/{data,labels,identities}.csv`, one row per ICU stay):
- data.csv: the float feature columns (467 in the paper), an optional header row; labels.csv: 0/1 (hospital stay
  longer than a week); identities.csv: the patient id of each stay (the user), any string;
- the train folder is split stratified by label into train and validation (`val_frac`); the test folder is the
  test set (stays, so patients overlap train and test); OOD = the test stays of patients absent from the train
  folder;
- columns 0 and 8-24 (age and the APACHE physiology variables) are z-scored with the train split's statistics,
  fitted once and reused for every run (the other columns are flags and one-hot codes, left as they are).

Lacuna-100 (`folder/{train,test,ood}/{images,labels,identities}.npy`):
- images uint8 [N, H, W, 3] (128 x 128 in the paper), labels 0/1 (the identity's gender), identities int;
- images are resized to 32 x 32 (bilinear) and normalised per channel with mean (0.382, 0.420, 0.502) and std
  (0.276, 0.279, 0.302); train is split stratified into train and validation; OOD = the `ood` folder's identities.
Arrays are read with numpy's `allow_pickle=False`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .availability import LACUNA_FILES
from .user_synthetic import _stratified_val

EICU_SCALED = [0, *range(8, 25)]
LACUNA_MEAN, LACUNA_STD = (0.382, 0.420, 0.502), (0.276, 0.279, 0.302)


def _read_csv(path: Path, numeric: bool = True) -> np.ndarray:
    import pandas as pd

    frame = pd.read_csv(path, header=None, dtype=str, keep_default_na=False)
    if numeric:
        first = frame.iloc[0]
        try:
            first.astype(float)
        except ValueError:  # a header row
            frame = frame.iloc[1:]
        try:
            return frame.astype(float).to_numpy()
        except ValueError as err:
            raise ValueError(f"{path}: not numeric ({err})") from None
    if len(frame) and frame.iloc[0, 0].strip().lower() in ("identity", "identities", "uniquepid", "id", "patient"):
        frame = frame.iloc[1:]
    return frame.iloc[:, 0].to_numpy()


def load_eicu(folder: str | Path, seed: int, val_frac: float) -> dict[str, torch.Tensor]:
    folder = Path(folder)
    parts = {}
    for part in ("train", "test"):
        x = _read_csv(folder / part / "data.csv")
        y = _read_csv(folder / part / "labels.csv").reshape(-1)
        ids = _read_csv(folder / part / "identities.csv", numeric=False)
        if not (len(x) == len(y) == len(ids)):
            raise ValueError(f"{folder / part}: data.csv has {len(x)} rows, labels.csv {len(y)}, identities.csv "
                             f"{len(ids)}; valid: one row per stay in each")
        if not set(np.unique(y)) <= {0.0, 1.0}:
            raise ValueError(f"{folder / part / 'labels.csv'}: labels {sorted(set(np.unique(y)))[:5]}; valid: 0 and 1")
        parts[part] = (x, y.astype(np.int64), ids)
    (xt, yt, it), (xs, ys, is_) = parts["train"], parts["test"]
    if xt.shape[1] != xs.shape[1]:
        raise ValueError(f"{folder}: train has {xt.shape[1]} feature columns, test {xs.shape[1]}")
    users = {u: k for k, u in enumerate(sorted(set(it) | set(is_)))}
    x = torch.from_numpy(np.concatenate([xt, xs])).float()
    y = torch.from_numpy(np.concatenate([yt, ys]))
    user = torch.tensor([users[u] for u in [*it, *is_]])
    n_train = len(yt)
    train, val = _stratified_val(y, torch.arange(n_train), val_frac, seed)
    cols = [c for c in EICU_SCALED if c < x.shape[1]]
    mean, std = x[train][:, cols].mean(0), x[train][:, cols].std(0).clamp_min(1e-6)
    x[:, cols] = (x[:, cols] - mean) / std
    test = torch.arange(n_train, len(y))
    seen = set(it)
    ood = test[torch.tensor([u not in seen for u in is_], dtype=torch.bool)]
    return {"x": x, "y": y, "user": user, "train": train, "val": val, "test": test, "ood": ood}


def _lacuna_images(images: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255
    x = F.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    mean, std = torch.tensor(LACUNA_MEAN).view(1, 3, 1, 1), torch.tensor(LACUNA_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def load_lacuna(folder: str | Path, seed: int, val_frac: float) -> dict[str, torch.Tensor]:
    folder = Path(folder)
    xs, ys, us = [], [], []
    for part in ("train", "test", "ood"):
        arrays = [np.load(folder / part / f, allow_pickle=False) for f in LACUNA_FILES]
        images, labels, ids = arrays
        if images.ndim != 4 or images.shape[-1] != 3 or not (len(images) == len(labels) == len(ids)):
            raise ValueError(f"{folder / part}: images {list(images.shape)}, {len(labels)} labels, {len(ids)} "
                             "identities; valid: images [N, H, W, 3] with one label and identity each")
        xs.append(_lacuna_images(images))
        ys.append(torch.from_numpy(labels.astype(np.int64)))
        us.append(torch.from_numpy(ids.astype(np.int64)))
    sizes = [len(y) for y in ys]
    y = torch.cat(ys)
    train, val = _stratified_val(y, torch.arange(sizes[0]), val_frac, seed)
    return {"x": torch.cat(xs), "y": y, "user": torch.cat(us), "train": train, "val": val,
            "test": torch.arange(sizes[0], sizes[0] + sizes[1]),
            "ood": torch.arange(sizes[0] + sizes[1], sum(sizes))}


def load(name: str, entry: dict, seed: int, val_frac: float) -> dict[str, torch.Tensor]:
    """The real data set `name` (eicu or lacuna100) from `entry['folder']`."""
    if name == "eicu":
        return load_eicu(entry["folder"], seed, val_frac)
    if name == "lacuna100":
        return load_lacuna(entry["folder"], seed, val_frac)
    raise ValueError(f"r2d.real: {name!r}: no loader; valid: eicu, lacuna100")
