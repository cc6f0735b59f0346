"""train/autodiff.py: torch.func.grad's gradients, bit for bit, without importing torch._dynamo."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.func

from conftest import ROOT
from unlearning.models import build_model
from unlearning.train.autodiff import grad
from unlearning.train.dsgd import ClientData, Schedule, local_pseudo_gradients, make_loss, round_batches
from unlearning.train.flat import FlatSpec


def problem(name: str, clients: int = 3, batch: int = 8):
    torch.manual_seed(0)
    model = build_model(name, (1, 28, 28), 10, mlp_hidden=16)
    spec = FlatSpec.of(model)
    theta = spec.flatten(model).repeat(clients, 1) + 0.1 * torch.randn(clients, spec.dim)
    x, y = torch.randn(clients, batch, 1, 28, 28), torch.randint(0, 10, (clients, batch))
    weight = torch.ones(clients, batch)
    weight[1, batch // 2:] = 0  # a padded minibatch
    return model, spec, theta, x, y, weight


@pytest.mark.parametrize("name", ["mlp", "logreg", "cnn"])
def test_grad_is_torch_funcs_bit_for_bit_one_model_and_every_row(name):
    model, spec, theta, x, y, weight = problem(name)
    loss = make_loss(model, spec)
    for i in range(len(theta)):
        assert torch.equal(grad(loss)(theta[i], x[i], y[i], weight[i]),
                           torch.func.grad(loss)(theta[i], x[i], y[i], weight[i]))
    assert torch.equal(grad(loss).rows()(theta, x, y, weight), torch.func.vmap(torch.func.grad(loss))(theta, x, y,
                                                                                                       weight))


def test_grad_under_no_grad_and_of_a_constant():
    """As torch.func.grad: it differentiates inside torch.no_grad(), and a loss that ignores x has gradient zero."""
    x = torch.tensor([1.0, -2.0, 3.0])
    with torch.no_grad():
        assert torch.equal(grad(lambda v: (v ** 2).sum())(x), 2 * x)
    assert torch.equal(grad(lambda v, c: c.sum())(x, torch.ones(2)), torch.zeros(3))
    assert not x.requires_grad  # the caller's tensor is left as it was


def test_the_engine_refuses_a_gradient_it_cannot_batch():
    model, spec, theta, x, y, weight = problem("mlp")
    shards = [torch.arange(8 * c, 8 * c + 8) for c in range(3)]
    data = ClientData(x.flatten(0, 1), y.flatten(), shards, [torch.ones(8, dtype=torch.bool)] * 3)
    sched = Schedule("model", 0.1, 4, 1, None, "complete", 1.0, 0, 3)
    idx, w = round_batches(data, [0, 1, 2], sched, 0)
    with pytest.raises(TypeError, match=r"unlearning.train.autodiff.grad\(loss\)"):
        local_pseudo_gradients(theta, data, idx, w, 0.1, torch.func.grad(make_loss(model, spec)), "vmap")


@pytest.mark.slow  # a fresh interpreter (3 s)
def test_a_gradient_of_one_model_imports_no_dynamo():
    code = ("import sys, torch; from unlearning.models import build_model; from unlearning.train.flat import FlatSpec;"
            "from unlearning.train.dsgd import make_loss; from unlearning.train.autodiff import grad;"
            "m = build_model('mlp', (1, 28, 28), 10, mlp_hidden=8); s = FlatSpec.of(m);"
            "g = grad(make_loss(m, s))(s.flatten(m), torch.randn(4, 1, 28, 28), torch.tensor([0, 1, 2, 3]),"
            " torch.ones(4)); print(g.shape[0] == s.dim, 'torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]
