"""Models and flat parameter vectors: stateless models whose stacked clients vmap like separate models."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, vmap

from unlearning.models import MODELS, build_model
from unlearning.train.flat import FlatSpec

SHAPES = {"logreg": (1, 28, 28), "mlp": (1, 28, 28), "cnn": (1, 28, 28), "cnn_small": (1, 28, 28),
          "resnet18": (3, 32, 32)}
# ResNet-18 is fully convolutional up to its adaptive pooling: 8x8 inputs keep the forward passes fast.
INPUTS = {"logreg": (1, 28, 28), "mlp": (1, 28, 28), "cnn": (1, 28, 28), "cnn_small": (1, 28, 28),
          "resnet18": (3, 8, 8)}
CLIENTS = 3


def _clients(name: str) -> list[nn.Module]:
    """Three independently initialised models of the same architecture."""
    models = []
    for k in range(CLIENTS):
        torch.manual_seed(100 + k)
        models.append(build_model(name, SHAPES[name], 10).eval())
    return models


def test_models_cover_the_documented_names():
    assert MODELS == ("logreg", "mlp", "cnn", "cnn_small", "resnet18")


@pytest.mark.parametrize("name", MODELS)
def test_flat_spec_has_no_buffers_and_covers_every_parameter(name):
    """FlatSpec.of works (no buffers) and its dimension is the model's parameter count."""
    model = build_model(name, SHAPES[name], 10)
    assert list(model.buffers()) == []
    spec = FlatSpec.of(model)
    assert spec.names == tuple(n for n, _ in model.named_parameters())
    assert spec.dim == sum(p.numel() for p in model.parameters())
    assert spec.flatten(model).shape == (spec.dim,)


@pytest.mark.parametrize("name", MODELS)
def test_flat_spec_round_trip(name):
    """unflatten(flatten(model)) gives back every named parameter, same shape and values."""
    torch.manual_seed(0)
    model = build_model(name, SHAPES[name], 10)
    spec = FlatSpec.of(model)
    back = spec.unflatten(spec.flatten(model))
    params = dict(model.named_parameters())
    assert list(back) == list(params)
    for n, p in params.items():
        assert back[n].shape == p.shape
        assert torch.equal(back[n], p.detach())


def test_flat_spec_unflatten_keeps_leading_dims_as_views():
    """[n, d] unflattens to [n, *shape] views of the flat tensor."""
    model = build_model("mlp", SHAPES["mlp"], 10, mlp_hidden=16)
    spec = FlatSpec.of(model)
    flat = torch.zeros(CLIENTS, spec.dim)
    params = spec.unflatten(flat)
    for p, s in zip(params.values(), spec.shapes):
        assert p.shape == (CLIENTS, *s)
    params["net.1.weight"][1, 0, 0] = 7.0
    assert flat[1, 0] == 7.0


@pytest.mark.parametrize("name", MODELS)
def test_vmapped_functional_call_matches_separate_models(name):
    """Logits of 3 clients' stacked [3, d] parameters under vmap equal each client's own forward pass."""
    models = _clients(name)
    spec = FlatSpec.of(models[0])
    stacked = torch.stack([spec.flatten(m) for m in models])
    assert stacked.shape == (CLIENTS, spec.dim)
    assert not torch.equal(stacked[0], stacked[1])

    torch.manual_seed(7)
    x = torch.randn(4, *INPUTS[name])
    logits = vmap(lambda p: functional_call(models[0], p, (x,)))(spec.unflatten(stacked))
    assert logits.shape == (CLIENTS, 4, 10)
    with torch.no_grad():
        for k, model in enumerate(models):
            assert torch.allclose(logits[k], model(x), atol=1e-5)


def test_vmapped_clients_can_each_see_their_own_batch():
    """in_dims=0 for both parameters and inputs: client k's logits depend on batch k only."""
    models = _clients("cnn")
    spec = FlatSpec.of(models[0])
    stacked = torch.stack([spec.flatten(m) for m in models])
    torch.manual_seed(8)
    xs = torch.randn(CLIENTS, 2, 1, 28, 28)
    logits = vmap(lambda p, x: functional_call(models[0], p, (x,)))(spec.unflatten(stacked), xs)
    with torch.no_grad():
        for k, model in enumerate(models):
            assert torch.allclose(logits[k], model(xs[k]), atol=1e-5)


def test_resnet18_on_cifar_sized_inputs():
    """The CIFAR ResNet-18 maps 3x32x32 images to 10 logits, with a stride-1 3x3 stem and no max-pool."""
    torch.manual_seed(0)
    model = build_model("resnet18", (3, 32, 32), 10).eval()
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert isinstance(model.maxpool, nn.Identity)
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    with torch.no_grad():
        assert model(torch.randn(1, 3, 32, 32)).shape == (1, 10)


def test_cnn_has_the_spec_parameter_count():
    """PDUDT spec 4.2: McMahan et al.'s CNN on 1x28x28 inputs has 582,026 parameters."""
    model = build_model("cnn", (1, 28, 28), 10)
    assert sum(p.numel() for p in model.parameters()) == 582_026
    assert FlatSpec.of(model).dim == 582_026


def test_cnn_small_has_the_spec_parameter_count():
    """The small F-MNIST CNN (Wu et al. 2026's setting; 10x1x5x5+10 + 20x10x5x5+20 + 320x50+50 + 50x10+10)."""
    model = build_model("cnn_small", (1, 28, 28), 10)
    assert FlatSpec.of(model).dim == 260 + 5_020 + 16_050 + 510 == 21_840
    with torch.no_grad():
        assert model(torch.randn(2, 1, 28, 28)).shape == (2, 10)


def test_resnet18_has_the_spec_parameter_count():
    """PDUDT spec: ResNet-18 for 3x32x32 inputs and 10 classes has 11,173,962 parameters."""
    model = build_model("resnet18", (3, 32, 32), 10)
    assert sum(p.numel() for p in model.parameters()) == 11_173_962
    assert FlatSpec.of(model).dim == 11_173_962


def test_small_model_parameter_counts():
    """logreg: 784*10 + 10; mlp with 128 hidden units: 784*128 + 128 + 128*10 + 10."""
    assert FlatSpec.of(build_model("logreg", (1, 28, 28), 10)).dim == 7_850
    assert FlatSpec.of(build_model("mlp", (1, 28, 28), 10)).dim == 101_770


def test_flat_spec_refuses_models_with_buffers():
    with pytest.raises(ValueError, match="buffers"):
        FlatSpec.of(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))


def test_unknown_model_names_valid_ones():
    with pytest.raises(ValueError, match="vit") as info:
        build_model("vit", (3, 32, 32), 10)
    for name in MODELS:
        assert name in str(info.value)


def _ties_and_zeros(shape: tuple[int, ...]) -> torch.Tensor:
    """Random values with whole windows of equal values, zeros (ReLU's ties) and a negative zero."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    x[..., 0:4, 0:4] = 0.25
    x[..., 4:6, 4:8] = 0.0
    x[..., 6, 6] = -0.0
    return x


@pytest.mark.parametrize("shape", [(3, 4, 28, 28), (2, 3, 7, 9), (5, 2, 14, 14)])
def test_max_pool_2x2_computes_torch_max_pool2d_bits_with_and_without_gradient(shape):
    from unlearning.models import MaxPool2x2

    x = _ties_and_zeros(shape)
    reference = nn.functional.max_pool2d(x, 2)
    with torch.no_grad():  # the strided-maximum path
        fast = MaxPool2x2()(x)
    assert fast.shape == reference.shape and torch.equal(fast, reference)
    assert torch.equal(fast.view(-1).view(torch.int32), reference.view(-1).view(torch.int32))  # signs of zero too
    g = torch.randn_like(reference)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    nn.functional.max_pool2d(a, 2).backward(g)
    MaxPool2x2()(b).backward(g)
    assert torch.equal(a.grad.view(torch.int32), b.grad.view(torch.int32))  # bit for bit, signs of zero too


@pytest.mark.parametrize("name", ["cnn", "cnn_small"])
def test_pooling_models_give_max_pool2d_outputs_when_stacked_under_vmap(name):
    from unlearning.models import MaxPool2x2

    torch.manual_seed(0)
    model = build_model(name, (1, 28, 28), 10)
    reference = build_model(name, (1, 28, 28), 10)
    reference.load_state_dict(model.state_dict())
    for i, layer in enumerate(reference.net):
        if isinstance(layer, MaxPool2x2):
            reference.net[i] = nn.MaxPool2d(2)
    params = {k: v.detach().expand(3, *v.shape) + 0.01 * torch.randn(3, *v.shape) for k, v in model.named_parameters()}
    x = torch.randn(6, 1, 28, 28)
    run = lambda m: vmap(lambda p: functional_call(m, p, (x,)))(params)  # noqa: E731
    assert torch.equal(run(model), run(reference))
    y = torch.arange(6) % 10  # every client's gradient at once, as the engine takes it (torch.func's grad under vmap)
    loss = lambda m: lambda p: nn.functional.cross_entropy(functional_call(m, p, (x,)), y)  # noqa: E731
    grads = lambda m: vmap(torch.func.grad(loss(m)))(params)  # noqa: E731
    got, expected = grads(model), grads(reference)
    assert all(torch.equal(got[k], expected[k]) for k in expected)
