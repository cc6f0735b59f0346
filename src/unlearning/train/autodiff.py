"""Gradients by torch.autograd, where the package used torch.func's `grad` transform.

torch.func.grad's first call imports torch._dynamo (about 1 s, a quarter of a small workflow job's start;
benchmarks/results/job_start_tiny.json), for a context manager it enters around torch.autograd.grad. `grad` here
computes the same gradient by torch.autograd.grad itself, bit-identical to torch.func.grad, so that a job that
differentiates one model at a time (a loop over clients, a method's own steps) never imports torch._dynamo. Every
row's gradient at once (`grad(f).rows()`, the engine's clients stacked in one tensor) stays torch.func's vmap of
its grad (why: `rows`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.func


def _grad_of(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d out / d x; zeros where `out` does not depend on `x` (as torch.func.grad returns)."""
    if not out.requires_grad:
        return torch.zeros_like(x)
    (g,) = torch.autograd.grad(out, x, allow_unused=True)
    return torch.zeros_like(x) if g is None else g


class grad:
    """The gradient of a scalar f(x, *rest) with respect to its first argument, as torch.func.grad(f)."""

    def __init__(self, f: Callable[..., torch.Tensor]):
        self.f = f

    def __call__(self, x: torch.Tensor, *rest) -> torch.Tensor:
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            return _grad_of(self.f(x, *rest), x)

    def rows(self, in_dims=0, randomness: str = "error") -> Callable[..., torch.Tensor]:
        """vmap(torch.func.grad(f), in_dims): every row's gradient in one call. This one is torch.func's (its
        first call imports torch._dynamo): differentiating one vmap of f by autograd instead moves the last bits
        (up to 4.5e-8 on the MLP, logistic regression and CNN) and is slower on the CPU (MLP +7-10 %, logistic
        regression +44 %, CNN +62 % a call; issue 70), which a long run pays many times over the import's second."""
        return torch.func.vmap(torch.func.grad(self.f), in_dims=in_dims, randomness=randomness)
