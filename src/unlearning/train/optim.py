"""Per-client local optimizers on stacked parameters [clients, d]: SGD, heavy-ball momentum and Adam.

The rules are those of torch.optim.SGD (momentum, no dampening, no Nesterov) and torch.optim.Adam
(Kingma & Ba 2015, Algorithm 1; not AMSGrad), applied to every client row at once, with an optional L2
term (lambda/2)||x||^2 in the local loss, whose gradient lambda x is added to the minibatch gradient
(torch's `weight_decay`, the regularised loss of Wu et al. 2026, eq. 4). Each client has its own state
(momentum buffer, Adam moments and step count), stacked like the parameters.

Adam's square root is the IEEE one on every CPU (unlearning.floatmath; torch's own float32 sqrt on the CPU is
MKL's, whose bits follow the CPU's vendor), so a step is torch.optim.Adam's up to that rounding.

`step` returns the update direction u of every row (the parameters move by -lr u), so the local
pseudo-gradient (theta - phi) / lr is the sum of the u of a round, for every optimizer. Rows whose client
has no minibatch at a local step neither move nor change their state (an optimizer that is not stepped).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import floatmath

OPTIMIZERS = ("sgd", "momentum", "adam")


@dataclass(frozen=True)
class LocalOptimizer:
    kind: str = "sgd"
    momentum: float = 0.9                     # used by kind "momentum"
    betas: tuple[float, float] = (0.9, 0.999)  # used by kind "adam" (torch defaults)
    eps: float = 1e-8                         # used by kind "adam" (torch default)
    l2: float = 0.0                           # lambda of the L2 term (lambda/2)||x||^2 in the local loss

    def __post_init__(self) -> None:
        if self.kind not in OPTIMIZERS:
            raise ValueError(f"train.optimizer = {self.kind!r}: unknown; valid: {', '.join(OPTIMIZERS)}")
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"train.momentum = {self.momentum!r}: valid: a number in [0, 1)")
        if not self.l2 >= 0.0:
            raise ValueError(f"train.l2 = {self.l2!r}: valid: a number >= 0")
        if not all(0.0 <= b < 1.0 for b in self.betas) or len(self.betas) != 2:
            raise ValueError(f"Adam betas = {self.betas!r}: valid: two numbers in [0, 1)")
        if not self.eps > 0.0:
            raise ValueError(f"Adam eps = {self.eps!r}: valid: a number > 0")

    @property
    def plain(self) -> bool:
        """Plain SGD without the L2 term: the engine's original code path, untouched."""
        return self.kind == "sgd" and self.l2 == 0.0

    def init(self, theta: torch.Tensor) -> "OptState":
        """Zero state for the rows of `theta` ([clients, d]); momentum's first step then gives buf = g, Adam's
        step count starts at 0, as in torch.optim."""
        steps = torch.zeros(theta.shape[0], dtype=torch.long, device=theta.device)
        if self.kind == "momentum":
            return OptState(steps, buf=torch.zeros_like(theta))
        if self.kind == "adam":
            return OptState(steps, exp_avg=torch.zeros_like(theta), exp_avg_sq=torch.zeros_like(theta))
        return OptState(steps)

    def step(self, g: torch.Tensor, phi: torch.Tensor, state: "OptState",
             active: torch.Tensor | None = None) -> tuple[torch.Tensor, "OptState"]:
        """Update directions u [clients, d] for minibatch gradients `g` at parameters `phi`, and the new state.

        `active` [clients] (bool) marks the rows that have a minibatch at this step (None: all rows); the
        others get u = 0 and keep their state. The state is not modified in place (the caller may keep the
        old one)."""
        if self.l2 != 0.0:
            g = g + self.l2 * phi
        steps = state.steps + (1 if active is None else active.long())

        def keep(new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
            """The new rows of the clients that step, the old ones of the others."""
            return new if active is None else torch.where(active.view(-1, 1), new, old)

        if self.kind == "sgd":
            u, new = g, OptState(steps)
        elif self.kind == "momentum":
            buf = keep(self.momentum * state.buf + g, state.buf)
            u, new = buf, OptState(steps, buf=buf)
        else:
            beta1, beta2 = self.betas
            m = keep(state.exp_avg.lerp(g, 1 - beta1), state.exp_avg)
            v = keep(torch.addcmul(state.exp_avg_sq * beta2, g, g, value=1 - beta2), state.exp_avg_sq)
            t = steps.clamp_min(1).to(torch.float64)
            bc1 = (1 - beta1 ** t).to(g.dtype).view(-1, 1)
            bc2_sqrt = (1 - beta2 ** t).sqrt().to(g.dtype).view(-1, 1)
            u = torch.div(m, floatmath.sqrt(v).div_(bc2_sqrt).add_(self.eps)).div_(bc1)
            new = OptState(steps, exp_avg=m, exp_avg_sq=v)
        return keep(u, u.new_zeros(())), new


@dataclass
class OptState:
    """Per-client optimizer state, rows in the order of the engine's `clients`: local steps taken [clients]
    and, by kind, the momentum buffer or Adam's first and second moments [clients, d]."""

    steps: torch.Tensor
    buf: torch.Tensor | None = None
    exp_avg: torch.Tensor | None = None
    exp_avg_sq: torch.Tensor | None = None

    def select(self, rows: list[int]) -> "OptState":
        """The state of the clients in `rows` (positions), e.g. after a client leaves."""
        index = torch.tensor(rows, dtype=torch.long, device=self.steps.device)
        picked = [None if t is None else t.index_select(0, index)
                  for t in (self.steps, self.buf, self.exp_avg, self.exp_avg_sq)]
        return OptState(*picked)
