"""Binary logistic-regression features: one class pair, raw pixels or pretrained ResNet-18 features, unit norm.

A class pair (a, b) of a processed dataset becomes float32 rows of unit L2 norm with labels +1 (class a)
and -1 (class b): all training samples of a, then all of b, each in the original dataset order, truncated
to a multiple of `truncate_to` (512 in the paper: MNIST 3v8 11982 -> 11264, CIFAR-10 cat/ship 10000 -> 9728).
The test set holds every test sample of the pair, in the same order, untruncated.

Extractors: "pixels" (x/255 - 0.5, flattened) and "resnet18" (ImageNet ResNet-18 after global average
pooling, 512-d). The ImageNet weights come from torch hub's cache or a download; offline and uncached,
`WeightsUnavailable` says so before any feature is computed.
"""

from __future__ import annotations

import itertools
import os
import socket
from contextlib import contextmanager
from urllib.error import URLError

import torch

from .datasets import DatasetUnavailable
from .sources import DATASETS

EXTRACTORS = ("pixels", "resnet18")
RESNET18_WEIGHTS = ("imagenet", "none")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
RANDOM_INIT_SEED = 0  # weights="none": a fixed random ResNet-18, for tests only
DOWNLOAD_TIMEOUT_S = 30.0  # per socket operation, so that a silent network fails instead of hanging


class WeightsUnavailable(DatasetUnavailable):
    """Pretrained weights are neither in torch hub's cache nor downloadable; the message says what to do."""


# ---------------------------------------------------------------------------------------------------
# Class pairs: order, labels, truncation (§4.1)
# ---------------------------------------------------------------------------------------------------


def pair_indices(labels: torch.Tensor, classes: tuple[int, int]) -> tuple[torch.Tensor, list[int]]:
    """Indices of class a then class b, each in dataset order, and the two counts (§4.1 "Order")."""
    parts = [torch.nonzero(labels == c).flatten() for c in classes]
    return torch.cat(parts), [len(p) for p in parts]


def signed_labels(counts: list[int]) -> torch.Tensor:
    """+1 for the first class, -1 for the second, float32, in the order of `pair_indices`."""
    return torch.cat([torch.ones(counts[0]), -torch.ones(counts[1])])


def truncated_size(n: int, truncate_to: int) -> int:
    """floor(n / truncate_to) * truncate_to, the paper's n (§7 item 7); truncate_to=1 keeps all rows."""
    if truncate_to < 1:
        raise ValueError(f"truncate_to={truncate_to}: must be >= 1 (1 keeps every row)")
    kept = n // truncate_to * truncate_to
    if kept == 0:
        raise ValueError(f"{n} training samples: fewer than truncate_to={truncate_to}, nothing would remain")
    return kept


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row scaled to L2 norm 1 (computed in float64), returned as float32 (§4.1, keeps M = 1 valid)."""
    x = x.double()
    return (x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)).float()


# ---------------------------------------------------------------------------------------------------
# Extractors (§4.1, §7 item 8)
# ---------------------------------------------------------------------------------------------------


def pixel_features(images: torch.Tensor) -> torch.Tensor:
    """uint8 [N, C, H, W] -> x/255 - 0.5 flattened (784-d for MNIST), rows of unit norm (§4.1 MNIST)."""
    return unit_rows(images.double().flatten(1) / 255 - 0.5)


def resnet18_cache_file() -> str:
    """Where torch hub keeps (or would download) the ImageNet ResNet-18 weights."""
    from torchvision.models import ResNet18_Weights

    name = os.path.basename(ResNet18_Weights.IMAGENET1K_V1.url)
    return os.path.join(torch.hub.get_dir(), "checkpoints", name)


@contextmanager
def _socket_timeout(seconds: float):
    """A default socket timeout for the duration of the block (torch hub's download sets none)."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def imagenet_resnet18_state() -> dict[str, torch.Tensor]:
    """IMAGENET1K_V1 state dict from torch hub's cache, downloading it once if allowed.
    Raises WeightsUnavailable, naming the cache file and the fixes, when neither works."""
    from torchvision.models import ResNet18_Weights

    weights = ResNet18_Weights.IMAGENET1K_V1
    cached = resnet18_cache_file()
    if os.path.isfile(cached):  # torch hub loads it without touching the network
        return weights.get_state_dict(progress=False)
    try:
        with _socket_timeout(DOWNLOAD_TIMEOUT_S):
            return weights.get_state_dict(progress=False, check_hash=True)
    except (URLError, OSError) as err:  # URLError, socket timeouts and refused connections are all OSErrors
        reason = " ".join(str(err).split())[:200]
        raise WeightsUnavailable(
            f"ResNet-18 weights {weights} ({os.path.basename(cached)}): not in torch hub's cache "
            f"{os.path.dirname(cached)} and the download from {weights.url} failed ({reason}); "
            f"run once with a network, or copy {os.path.basename(cached)} into {os.path.dirname(cached)}"
        ) from None


def resnet18_trunk(weights: str = "imagenet") -> torch.nn.Module:
    """ResNet-18 without `fc` (ends with global average pooling), eval mode (§4.1 CIFAR, §7 item 8).
    weights="imagenet" is IMAGENET1K_V1; "none" is a random init with a fixed seed, for tests."""
    from torchvision.models import resnet18

    if weights not in RESNET18_WEIGHTS:
        raise ValueError(f"weights={weights!r}: valid: {', '.join(RESNET18_WEIGHTS)}")
    if weights == "imagenet":
        state = imagenet_resnet18_state()
        model = resnet18()
        model.load_state_dict(state)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            model = resnet18()
    return torch.nn.Sequential(*list(model.children())[:-1]).eval()


def imagenet_input(images: torch.Tensor) -> torch.Tensor:
    """uint8 [B, 3, H, W] -> Resize(224) (antialiased, on the float tensor), /255, ImageNet Normalize."""
    from torchvision.transforms.v2 import functional as tvf

    x = tvf.resize(images.float(), [224], antialias=True) / 255
    return tvf.normalize(x, list(IMAGENET_MEAN), list(IMAGENET_STD))


@torch.no_grad()
def resnet18_features(images: torch.Tensor, trunk: torch.nn.Module, device: str | torch.device = "cpu",
                      batch_size: int = 256) -> torch.Tensor:
    """512-d post-avgpool features of uint8 [N, 3, H, W] images, batched, rows of unit norm (§4.1 CIFAR)."""
    trunk = trunk.to(device)
    out = [trunk(imagenet_input(batch.to(device))).flatten(1).cpu() for batch in images.split(batch_size)]
    return unit_rows(torch.cat(out) if out else torch.empty(0, 512))


# ---------------------------------------------------------------------------------------------------
# The stage
# ---------------------------------------------------------------------------------------------------


def binary_features(processed: dict[str, torch.Tensor], dataset: str, classes: tuple[int, int],
                    extractor: str, truncate_to: int = 512, weights: str = "imagenet",
                    device: str | torch.device = "cpu", batch_size: int = 256,
                    ) -> tuple[dict[str, torch.Tensor], dict]:
    """Features and ±1 labels of one class pair (§4.1): x_train [n, d], y_train [n], x_test, y_test
    (float32) and metadata (dataset, classes, extractor, sizes before/after truncation, d, class counts).
    The model is built first, so that missing weights fail before any feature is computed."""
    a, b = (int(c) for c in classes)
    if a == b:
        raise ValueError(f"classes={classes}: two different classes are needed")
    if extractor not in EXTRACTORS:
        raise ValueError(f"extractor={extractor!r}: valid: {', '.join(EXTRACTORS)}")
    trunk = resnet18_trunk(weights) if extractor == "resnet18" else None

    def extract(images: torch.Tensor) -> torch.Tensor:
        if trunk is None:
            return pixel_features(images)
        return resnet18_features(images, trunk, device=device, batch_size=batch_size)

    train_idx, full_counts = pair_indices(processed["y_train"], (a, b))
    n = truncated_size(len(train_idx), truncate_to)
    test_idx, test_counts = pair_indices(processed["y_test"], (a, b))
    counts = [min(full_counts[0], n), n - min(full_counts[0], n)]
    out = {
        "x_train": extract(processed["x_train"][train_idx[:n]]),
        "y_train": signed_labels(counts),
        "x_test": extract(processed["x_test"][test_idx]),
        "y_test": signed_labels(test_counts),
    }
    meta = {
        "dataset": dataset, "classes": [a, b], "labels": {str(a): 1, str(b): -1},
        "extractor": extractor, "weights": weights if extractor == "resnet18" else None,
        "truncate_to": truncate_to, "n_full": len(train_idx), "n": n, "d": out["x_train"].shape[1],
        "train_counts_full": full_counts, "train_counts": counts,
        "n_test": len(test_idx), "test_counts": test_counts,
    }
    return out, meta


# ---------------------------------------------------------------------------------------------------
# Noiseless accuracy of the paper's model (§4.2) and a pair ranking
# ---------------------------------------------------------------------------------------------------


def fit_logistic(x: torch.Tensor, y: torch.Tensor, lam_per_n: float = 1e-6, steps: int = 20000,
                 tol: float = 1e-6) -> torch.Tensor:
    """argmin (1/n) Σ -log σ(y wᵀx) + (λ/2)||w||², λ = lam_per_n·n, no bias (§4.2), by full-batch gradient
    descent from w = 0 with step 1/L, L = 1/4 + λ, until the gradient norm is below `tol` (float64).
    Rows of unit norm make the eq. 72 clipping a no-op, so none is applied."""
    x, y = x.double(), y.double()
    n = len(y)
    lam = lam_per_n * n
    step = 1 / (0.25 + lam)
    w = torch.zeros(x.shape[1], dtype=torch.float64)
    for _ in range(steps):
        margin = y * (x @ w)
        grad = x.T @ (-y * torch.sigmoid(-margin)) / n + lam * w
        if grad.norm() < tol:
            break
        w = w - step * grad
    return w


def accuracy(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows with sign(wᵀx) == y (§4.2 prediction); wᵀx = 0 counts as wrong."""
    return float((torch.sign(x.double() @ w) == y.double()).double().mean())


def pair_accuracy(x_train: torch.Tensor, y_train: torch.Tensor, x_test: torch.Tensor, y_test: torch.Tensor,
                  lam_per_n: float = 1e-6, steps: int = 20000, tol: float = 1e-6) -> float:
    """Noiseless test accuracy of the converged L2-regularised logistic regression (§4.2)."""
    return accuracy(fit_logistic(x_train, y_train, lam_per_n, steps, tol), x_test, y_test)


def rank_pairs(processed: dict[str, torch.Tensor], dataset: str, target_accuracy: float,
               truncate_to: int = 512, lam_per_n: float = 1e-6) -> list[dict]:
    """pair_accuracy of every class pair with the "pixels" extractor, sorted by |accuracy - target|
    (then by pair). Each row: class_a, class_b, accuracy, gap, n_full, n, n_test and the class counts."""
    classes = DATASETS[dataset].info[0] if dataset in DATASETS else int(processed["y_train"].max()) + 1
    rows = []
    for a, b in itertools.combinations(range(classes), 2):
        feats, meta = binary_features(processed, dataset, (a, b), "pixels", truncate_to=truncate_to)
        acc = pair_accuracy(feats["x_train"], feats["y_train"], feats["x_test"], feats["y_test"], lam_per_n)
        rows.append({
            "class_a": a, "class_b": b, "accuracy": acc, "gap": abs(acc - target_accuracy),
            "n_full": meta["n_full"], "n": meta["n"], "n_test": meta["n_test"],
            "train_a_full": meta["train_counts_full"][0], "train_b_full": meta["train_counts_full"][1],
            "train_a": meta["train_counts"][0], "train_b": meta["train_counts"][1],
            "test_a": meta["test_counts"][0], "test_b": meta["test_counts"][1],
        })
    return sorted(rows, key=lambda r: (r["gap"], r["class_a"], r["class_b"]))
