"""DU's curvature (eq. 2, 5, 7): the diagonal empirical Fisher from per-sample gradients (torch.func) against a
per-sample loop, and the closed-form logistic-regression Hessian against torch.autograd.functional.hessian."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from unlearning.methods import du
from unlearning.models import MLP, LogisticRegression
from unlearning.train.flat import FlatSpec


def tiny(model_cls, *args, n=23, features=5, classes=3, seed=0):
    torch.manual_seed(seed)
    model = model_cls(*args).double()
    spec = FlatSpec.of(model)
    flat = spec.flatten(model) + 0.3 * torch.randn(spec.dim, dtype=torch.float64)
    x = torch.randn(n, features, dtype=torch.float64)
    y = torch.randint(0, classes, (n,))
    return model, spec, flat, x, y


def loop_grads(model, spec, flat, x, y):
    rows = []
    for xi, yi in zip(x, y):
        params = {k: v.detach().clone().requires_grad_(True) for k, v in spec.unflatten(flat).items()}
        loss = F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])
        grads = torch.autograd.grad(loss, [params[name] for name in spec.names])
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


@pytest.mark.parametrize("model_cls, args", [(MLP, (5, 4, 3)), (LogisticRegression, (5, 3))])
def test_fisher_from_vmap_equals_a_per_sample_loop(model_cls, args):
    model, spec, flat, x, y = tiny(model_cls, *args)
    looped = loop_grads(model, spec, flat, x, y)
    assert torch.allclose(du.per_sample_grads(model, spec, flat, x, y, chunk=7), looped, atol=1e-12)
    expected = (looped**2).mean(0)
    got = du.fisher_diag(model, spec, flat, x, y, chunk=5)  # chunks of 5 over 23 samples
    assert torch.allclose(got, expected, atol=1e-12)
    # the squared minibatch gradient is not it (spec 3.4: it underestimates by about the batch size)
    assert not torch.allclose(looped.mean(0) ** 2, expected, rtol=0.1)


def test_logreg_hessian_equals_autograd():
    model, spec, flat, x, y = tiny(LogisticRegression, 4, 3, n=17, features=4)

    def mean_loss(w):
        return F.cross_entropy(functional_call(model, spec.unflatten(w), (x,)), y)

    expected = torch.autograd.functional.hessian(mean_loss, flat)
    got = du.logreg_hessian(flat, x, 3)
    assert got.shape == (15, 15)
    assert torch.allclose(got, expected, atol=1e-12)
    with pytest.raises(ValueError, match="hessian_exact: .* valid: curvature: fisher_diag"):
        du.logreg_hessian(flat[:-1], x, 3)


def test_solve_and_regularised_gradient_sum():
    model, spec, flat, x, y = tiny(LogisticRegression, 5, 3)
    l2 = 0.05
    expected = loop_grads(model, spec, flat, x, y).sum(0) + len(x) * l2 * flat
    assert torch.allclose(du.grad_sum(model, spec, flat, x, y, l2, chunk=4), expected, atol=1e-12)
    h = du.logreg_hessian(flat, x, 3)
    step = du.solve(h, 0.1, expected)
    assert torch.allclose((h + 0.1 * torch.eye(len(flat), dtype=h.dtype)) @ step, expected, atol=1e-10)
    diag = torch.rand(len(flat), dtype=torch.float64)
    assert torch.allclose(du.solve(diag, 0.1, expected), expected / (diag + 0.1))


@pytest.mark.parametrize("key, value, valid", [("damping", 0.0, "> 0"), ("damping", -1e-3, "> 0"),
                                               ("curvature", "kfac", "fisher_diag, hessian_exact"),
                                               ("client_weight", "half", "literal, newton"),
                                               ("epsilon", 2.0, "<= 1"), ("delta", 1.0, "< 1")])
def test_config_refuses_bad_values_naming_the_key(key, value, valid):
    with pytest.raises(ValueError, match=rf"^{key} = .*valid: .*{valid}"):
        du.DUConfig(**{key: value})


def test_theory_noise_needs_valid_constants():
    with pytest.raises(ValueError, match="noise: theory needs M and L"):
        du.DUConfig(noise="theory", M=1.0)
    with pytest.raises(ValueError, match=r"^L = "):
        du.DUConfig(noise="theory", M=1.0, L=-1.0)
    cfg = du.DUConfig(noise="theory", M=1.0, L=1.0, l2=1.0)
    assert cfg.sigma_for(10, 100, 10) == pytest.approx(0.096896, abs=5e-7)  # Delta F = 0.02 (Lemma 3)
    assert du.DUConfig(noise="none").sigma_for(10, 100, 10) == 0.0
    assert du.DUConfig(noise="fixed", sigma=0.3).sigma_for(10, 100, 10) == 0.3
    with pytest.raises(ValueError, match=r"^damping = True"):
        du.DUConfig(damping=True)
