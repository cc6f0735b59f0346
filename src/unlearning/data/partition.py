"""Partitions of a training set over clients: IID, Dirichlet(alpha) non-IID, and by class."""

from __future__ import annotations

import numpy as np
import torch

from ..seeding import derive_seed

PARTITIONS = ("iid", "dirichlet", "by_class", "class_to_target")
MAX_DIRICHLET_DRAWS = 10_000


def partition(labels: torch.Tensor, clients: int, kind: str, seed: int, alpha: float = 0.5,
              per_client: int | None = None, target: int = 0, target_class: int = 0,
              min_size: int = 0) -> list[torch.Tensor]:
    """Sorted training-set indices of each client.

    `per_client` first draws a random subset of `per_client * clients` samples. IID splits it into
    equal shares; Dirichlet gives every class proportions ~ Dir(alpha) over the clients; by_class sorts
    it by label and cuts it into equal contiguous shares (with 10 clients and 10 balanced classes,
    client i holds class i). class_to_target gives client `target` every sample of `target_class` and
    deals the other classes round-robin, stratified, over the other
    clients (the target-client split of Qiao et al. 2025, Sec. 5).

    `min_size` (Dirichlet only): the proportions are redrawn until every client holds at least this many
    samples (the NIID-Bench convention, Li et al. 2022), at most MAX_DIRICHLET_DRAWS times.
    """
    rng = np.random.default_rng(derive_seed(seed, "partition", kind))
    y = labels.numpy()
    pool = rng.permutation(len(y))
    if per_client is not None:
        if per_client * clients > len(y):
            raise ValueError(f"train_per_client = {per_client} x {clients} clients needs {per_client * clients} "
                             f"training samples; the data set holds {len(y)}: valid: at most {len(y) // clients}")
        pool = pool[: per_client * clients]
    if kind == "iid":
        shares = np.array_split(pool, clients)
    elif kind == "by_class":
        shares = np.array_split(pool[np.argsort(y[pool], kind="stable")], clients)
    elif kind == "class_to_target":
        rest = pool[y[pool] != target_class]
        rest = rest[np.argsort(y[rest], kind="stable")]  # stratified: deal each class in turn
        others = [rest[k::clients - 1] for k in range(clients - 1)]
        shares = others[:target] + [pool[y[pool] == target_class]] + others[target:]
    elif kind == "dirichlet":
        if min_size * clients > len(pool):
            raise ValueError(f"min_size = {min_size}: {clients} clients x {min_size} exceeds the {len(pool)} samples "
                             f"dealt; valid: at most {len(pool) // clients}")
        for _ in range(MAX_DIRICHLET_DRAWS):
            shares = _dirichlet(rng, y, pool, clients, alpha)
            if min(len(s) for s in shares) >= min_size:
                break
        else:
            raise ValueError(f"min_size = {min_size}: no Dirichlet({alpha}) split of {len(pool)} samples over "
                             f"{clients} clients gave every client that many in {MAX_DIRICHLET_DRAWS} draws; "
                             "valid: a smaller min_size or a larger alpha")
    else:
        raise ValueError(f"partition {kind!r}: unknown; valid: {', '.join(PARTITIONS)}")
    return [torch.from_numpy(np.sort(np.asarray(s, dtype=np.int64))) for s in shares]


def _dirichlet(rng: np.random.Generator, y: np.ndarray, pool: np.ndarray, clients: int, alpha: float) -> list[list]:
    """One draw: every class's samples cut by proportions ~ Dir(alpha 1_clients)."""
    shares: list[list] = [[] for _ in range(clients)]
    for c in np.unique(y[pool]):
        members = pool[y[pool] == c]
        cuts = (np.cumsum(rng.dirichlet(np.full(clients, alpha))) * len(members)).astype(int)[:-1]
        for client, part in enumerate(np.split(members, cuts)):
            shares[client].extend(part.tolist())
    return shares
