"""Reference models trained like the target (RMIA's online setting; Zarifzadeh et al. 2024, Sec. 3 and App. B).

The target is a decentralized run: `setup`'s architecture, clients, graphs, local epochs, batch, step size and
rounds. Each reference runs that same recipe (D-SGD, `train.dsgd.train`, from its own random initial model and its
own seed for graphs and batches) on data the attacker holds: a pool of candidates and population samples. The
references come in complementary pairs: reference 2j trains on a random half of the pool, 2j + 1 on the other
half, so every pool sample is a member of exactly half of the references. RMIA's Pr(x) is then the mean over all
of them (online, no offline constant `a`), for members and non-members alike. A reference's half is cut into
`clients` IID shards of equal size, and the reference is one client's model of that run (client r mod clients), as
each judged model is one client's.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from ...experiment import Setup
from ...seeding import derive_seed, generator
from ...train.dsgd import ClientData, train
from ..forward import logits_in_batches
from .shadow import init_like


def pool_halves(pool_size: int, models: int, seed: int) -> torch.Tensor:
    """Membership [models, pool_size] (bool): complementary random halves, pair by pair."""
    if models < 2 or models % 2:
        raise ValueError(f"attack.reference_models = {models}; valid: an even number >= 2 (complementary pairs)")
    if pool_size < 2:
        raise ValueError(f"reference pool has {pool_size} samples; valid: at least 2")
    member = torch.zeros(models, pool_size, dtype=torch.bool)
    for j in range(models // 2):
        perm = torch.randperm(pool_size, generator=generator(seed, "pool-halves", j))
        member[2 * j, perm[: pool_size // 2]] = True
        member[2 * j + 1, perm[pool_size // 2:]] = True
    return member


def train_references(setup: Setup, x: torch.Tensor, y: torch.Tensor, models: int) -> dict[str, torch.Tensor]:
    """`models` references trained by the target's D-SGD recipe on complementary halves of the pool (x, y) (see
    the module). Returns one client's model of each run [models, d] (client r mod clients: what a client of such
    a run holds, as each judged model is), membership [models, len(y)] and train accuracy [models] (that model on
    its half)."""
    seed = derive_seed(setup.seed, setup.name, "references")
    member = pool_halves(len(y), models, seed)
    n = setup.cfg["clients"]
    clients = list(range(n))
    base = setup.schedule()
    thetas, accuracy = [], []
    for r in range(models):
        rows = member[r].nonzero().flatten()
        rows = rows[torch.randperm(len(rows), generator=generator(seed, "shards", r))]
        shards = list(torch.tensor_split(rows, n))  # index lists and keep masks on the CPU, as build_setup's
        data = ClientData(x, y.to(x.device), shards, [torch.ones(len(s), dtype=torch.bool) for s in shards])
        sched = replace(base, seed=derive_seed(seed, "schedule", r), keep_connected_without=(), repaired_without=(),
                        experiment=f"{setup.name} reference {r}")
        theta0 = init_like(setup, seed, r).to(setup.device)
        theta, _ = train(setup.model, setup.spec, theta0.expand(n, -1).clone(), data, clients, sched,
                         range(setup.cfg["train"]["rounds"]), setup.strategy)
        model = theta[r % n]
        thetas.append(model.cpu())
        with torch.no_grad():
            logits = torch.cat(list(logits_in_batches(setup, model, x[rows.to(x.device)])))
        accuracy.append(float((logits.argmax(1).cpu() == y.cpu()[rows]).float().mean()))
    return {"theta": torch.stack(thetas), "member": member, "train_accuracy": torch.tensor(accuracy)}
