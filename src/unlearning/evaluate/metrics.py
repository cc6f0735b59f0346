"""Accuracy of the average model and of each client, per-class accuracy, forget accuracy and the
loss-threshold membership inference AUC (Yeom et al. 2018: a lower loss means "member")."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..experiment import Setup
from ..seeding import generator
from .attacks.loss_threshold import loss_threshold_auc
from .forward import logits_in_batches


@torch.no_grad()
def per_sample_loss_and_pred(setup: Setup, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                             batch: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    losses, preds = [], []
    for start, logits in zip(range(0, len(x), batch), logits_in_batches(setup, flat, x, batch)):
        losses.append(F.cross_entropy(logits, y[start:start + batch], reduction="none"))
        preds.append(logits.argmax(1))
    return torch.cat(losses).cpu(), torch.cat(preds).cpu()


def accuracy(pred: torch.Tensor, y: torch.Tensor) -> float | None:
    return float((pred == y.cpu()).float().mean()) if len(y) else None


def class_matched_pairs(member_labels: torch.Tensor, pool_labels: torch.Tensor, limit: int,
                       gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to `limit` random members and, for each, a distinct held-out sample of the same class, so
    that the attack measures membership and not the class (a forgotten class has a high loss anyway)."""
    members = torch.randperm(len(member_labels), generator=gen)[:limit]
    chosen_members, chosen_others = [], []
    for c in member_labels[members].unique():
        mine = members[member_labels[members] == c]
        pool = (pool_labels == c).nonzero().flatten()
        pool = pool[torch.randperm(len(pool), generator=gen)]
        k = min(len(mine), len(pool))
        chosen_members.append(mine[:k])
        chosen_others.append(pool[:k])
    if not chosen_members:
        return members, members
    return torch.cat(chosen_members), torch.cat(chosen_others)


def evaluate(setup: Setup, theta: torch.Tensor, clients: list[int], mia_samples: int) -> dict:
    """Metrics of the stacked models `theta` [len(clients), d]; the average model is their mean."""
    avg = theta.mean(0)
    y_test = setup.y_test.cpu()
    test_loss, test_pred = per_sample_loss_and_pred(setup, avg, setup.x_test, setup.y_test)
    per_class = {str(c): accuracy(test_pred[y_test == c], y_test[y_test == c]) for c in range(setup.classes)}
    client_preds = [per_sample_loss_and_pred(setup, row, setup.x_test, setup.y_test)[1] for row in theta]
    per_client = {str(c): accuracy(pred, y_test) for c, pred in zip(clients, client_preds)}
    per_class_clients = {str(c): sum(accuracy(pred[y_test == c], y_test[y_test == c]) for pred in client_preds)
                         / len(client_preds) for c in range(setup.classes)}

    indices, masks = setup.data.indices, setup.request.masks
    forget_idx = setup.request.samples(indices).to(setup.data.x.device)
    retain_idx = torch.cat([idx[~m] for idx, m in zip(indices, masks)]).to(setup.data.x.device)
    forget_loss, forget_pred = per_sample_loss_and_pred(setup, avg, setup.data.x[forget_idx], setup.data.y[forget_idx])
    _, retain_pred = per_sample_loss_and_pred(setup, avg, setup.data.x[retain_idx], setup.data.y[retain_idx])

    # where the forget set's influence lives: each client's own model on the forget set and on its own data
    x_forget, y_forget = setup.data.x[forget_idx], setup.data.y[forget_idx]
    per_client_forget, per_client_own = {}, {}
    for c, row in zip(clients, theta):
        per_client_forget[str(c)] = accuracy(per_sample_loss_and_pred(setup, row, x_forget, y_forget)[1], y_forget)
        own = indices[c].to(setup.data.x.device)
        per_client_own[str(c)] = accuracy(per_sample_loss_and_pred(setup, row, setup.data.x[own],
                                                                   setup.data.y[own])[1], setup.data.y[own])

    members, others = class_matched_pairs(setup.data.y[forget_idx].cpu(), y_test, mia_samples,
                                          generator(setup.seed, setup.name, "mia"))
    return {
        "test_accuracy": accuracy(test_pred, y_test),
        "test_loss": float(test_loss.mean()),
        "per_class_accuracy": per_class,
        "per_client_test_accuracy": per_client,
        "per_class_accuracy_client_mean": per_class_clients,
        "forget_accuracy": accuracy(forget_pred, setup.data.y[forget_idx]),
        "retain_accuracy": accuracy(retain_pred, setup.data.y[retain_idx]),
        "per_client_forget_accuracy": per_client_forget,
        "per_client_own_data_accuracy": per_client_own,
        "mia_loss_threshold_auc": loss_threshold_auc(forget_loss[members], test_loss[others]),
        "mia_samples": len(members),
        "forget_samples": len(forget_idx),
        "clients": clients,
    }
