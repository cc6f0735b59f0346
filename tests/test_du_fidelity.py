"""DU against exact retraining where the paper's assumptions hold: L2-regularised multinomial logistic regression
(eq. 4) at exact minimisers (full-batch L-BFGS, then Newton polish to ||grad|| < 1e-13), complete graph at
consensus, IID, 10 % of every client's data deleted, exact Hessians (spec section 11, tests 4-5, as amended).

The problem is synthetic (5 Gaussian classes in 20 dimensions, d = 105, 10 clients x 1,000 samples), small
enough for seconds; the ratios are ||DU - x'*|| / ||x* - x'*||, with x* the full-data and x'* the retained-data
minimiser of eq. (1). Measured here (seed 0):

    lambda   Algorithm 1   centralised Newton (Lemma 3's step)   diagonal Fisher (eq. 7)
    1e-3     0.682         0.0493                                1.32
    1e-2     0.263         0.0141                                1.36
    0.1      0.123         0.0044                                1.69

Algorithm 1's residual comes from its local Hessians with the 1/N weight (uniform influence, Sec. IV-B), not
from the deletion size. The Fisher variant lands farther from x'* than x* itself (reported, not gated): at
lambda 1e-2 the Hessian's own diagonal gives 0.61 and the full empirical Fisher 1.40, so the loss is the
empirical Fisher's (it differs from the Hessian by 57 % in norm at x*: the regularised model is not the data's
distribution, where Sec. IV-D's "Psi_c = H_c at x_c*" would need it to be), not the diagonal's.
"""

from __future__ import annotations

import math

import networkx as nx
import pytest
import torch

from unlearning.methods import du
from unlearning.models import LogisticRegression
from unlearning.seeding import generator
from unlearning.train import exact
from unlearning.train.dsgd import ClientData
from unlearning.train.flat import FlatSpec

N, PER, FEATURES, CLASSES = 10, 1000, 20, 5


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """These small float64 problems run ~10x faster on one thread than on two contended ones; restored after."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def problem(clients=N, per=PER, frac=0.1, seed=0, single_class=False):
    gen = generator(seed, "du-fidelity")
    means = torch.randn(CLASSES, FEATURES, generator=gen, dtype=torch.float64)
    y = torch.randint(0, CLASSES, (clients * per,), generator=gen)
    x = means[y] + torch.randn(clients * per, FEATURES, generator=gen, dtype=torch.float64)
    indices = list(torch.arange(clients * per).view(clients, per))
    forget = []
    for idx in indices:
        pool = torch.nonzero(y[idx] == 0).flatten() if single_class else torch.arange(per)
        mask = torch.zeros(per, dtype=torch.bool)
        mask[pool[torch.randperm(len(pool), generator=gen)[: int(frac * per)]]] = True
        forget.append(mask)
    data = ClientData(x, y, indices, [torch.ones(per, dtype=torch.bool)] * clients)
    model = LogisticRegression(FEATURES, CLASSES).double()
    return model, FlatSpec.of(model), data, forget


def minimiser(model, spec, data, keep, lam):
    """argmin of eq. (1) on the kept samples (train/exact.py: L-BFGS, then Newton polish to ||grad|| < 1e-13)."""
    found = exact.minimiser(model, spec, data, keep, lam, CLASSES)
    assert found.grad_norm < 1e-12
    return found.w


def ratios(lam, seed=0):
    model, spec, data, forget = problem(seed=seed)
    x_full = minimiser(model, spec, data, data.keep, lam)
    x_ret = minimiser(model, spec, data, [~f for f in forget], lam)
    gap = float((x_full - x_ret).norm())
    theta, graph, clients = x_full.expand(N, -1).clone(), nx.complete_graph(N), list(range(N))
    out = {}
    for kind in ("hessian_exact", "fisher_diag"):
        cfg = du.DUConfig(curvature=kind, damping=lam, l2=lam, noise="none")
        res = du.sample_wise(model, spec, theta, data, forget, graph, clients, cfg, classes=CLASSES)
        assert torch.allclose(res.theta, res.theta[0].expand_as(res.theta), atol=1e-14)  # still at consensus
        out[kind] = float((res.theta[0] - x_ret).norm()) / gap
    cfg = du.DUConfig(curvature="hessian_exact", damping=lam, l2=lam, noise="none")
    out["central"] = float((du.global_newton(model, spec, x_full, data, forget, cfg, CLASSES) - x_ret).norm()) / gap
    return out


@pytest.fixture(scope="module")
def measured():
    return {lam: ratios(lam) for lam in (1e-3, 1e-2, 0.1)}


def test_ratios_to_the_retrained_minimiser(measured):
    """Gates of the amended acceptance: Algorithm 1 <= 0.4 at lambda 1e-2 and <= 0.2 at 0.1, the centralised Newton
    step <= 0.02 at 1e-2; at 1e-3 (no gate in the note) the centralised step at about twice its 0.049."""
    for lam, r in measured.items():
        print(f"lambda {lam:g}: Algorithm 1 {r['hessian_exact']:.4f}  centralised {r['central']:.5f}  "
              f"Fisher {r['fisher_diag']:.4f}")
    assert measured[1e-2]["hessian_exact"] <= 0.4
    assert measured[0.1]["hessian_exact"] <= 0.2
    assert measured[1e-2]["central"] <= 0.02
    assert measured[1e-3]["central"] <= 0.1
    for r in measured.values():  # the global Hessian beats local ones at every lambda
        assert r["central"] < r["hessian_exact"] / 5
    alg1 = [measured[lam]["hessian_exact"] for lam in (1e-3, 1e-2, 0.1)]
    assert alg1[0] > alg1[1] > alg1[2]  # stronger convexity, smaller residual


def test_noiseless_du_lands_much_closer_to_retraining_than_the_original(measured):
    """Issue 12's unit test at lambda = 0.1 (note 3): measured 0.123 with 1,000 samples per client; gate at about
    twice it."""
    assert measured[0.1]["hessian_exact"] < 0.25


def residual_halving(single_class: bool, seed: int, lam=1e-2, per=1000, m=100) -> float:
    """||x^ - x'*|| at m deletions over the same at m/2 (a random half of the same set), one client (N = 1)."""
    model, spec, data, forget = problem(clients=1, per=per, frac=m / per, seed=seed, single_class=single_class)
    chosen = torch.nonzero(forget[0]).flatten()
    half = torch.zeros_like(forget[0])
    half[chosen[torch.randperm(len(chosen), generator=generator(seed, "half"))[: m // 2]]] = True
    x_full = minimiser(model, spec, data, data.keep, lam)
    cfg = du.DUConfig(curvature="hessian_exact", damping=lam, l2=lam, noise="none")
    out = []
    for mask in (forget[0], half):
        x_ret = minimiser(model, spec, data, [~mask], lam)
        out.append(float((du.global_newton(model, spec, x_full, data, [mask], cfg, CLASSES) - x_ret).norm()))
    return out[0] / out[1]


def test_halving_the_deletion_shrinks_the_newton_residual():
    """Lemma 3's O(m^2/n^2) is the worst case (note 4): at lambda = 0.1, 100 of 1,000 deleted vs a random half of
    them, single-class deletions cut the residual about 4x or more (measured over seeds 0-9: 6.45 5.44 4.52 4.23
    3.60 5.36 6.67 5.00 5.37 5.56, geometric mean 5.14), random ones about 2x (sum_U grad F is a zero-mean random
    sum: 3.08 1.49 2.06 1.19 1.99 1.78 2.19 1.42 2.03 2.03, geometric mean 1.87). Gated on the geometric means."""
    single = [residual_halving(True, s, lam=0.1) for s in range(10)]
    random_ = [residual_halving(False, s, lam=0.1) for s in range(10)]
    geo = [math.exp(sum(map(math.log, v)) / len(v)) for v in (single, random_)]
    print(f"halving m: single-class geometric mean {geo[0]:.2f}, random {geo[1]:.2f}")
    assert geo[0] >= 3.5
    assert geo[1] >= 1.6
    assert geo[0] > 2 * geo[1]
