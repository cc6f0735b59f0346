"""Models, all stateless so that `torch.func.functional_call` and `vmap` can batch them over clients.

ResNet-18 uses GroupNorm(2 groups) in place of BatchNorm: GroupNorm normalises each sample on its own,
so a model has no running statistics (buffers) to carry, mix or correct, and the forward pass is a
pure function of the parameters that `vmap` can batch over clients. BatchNorm without running
statistics would also be vmap-able, but its output would depend on the other samples of a batch,
which couples the per-sample losses used by membership inference and per-sample clipping.
"""

from __future__ import annotations

import torch
from torch import nn

MODELS = ("logreg", "mlp", "cnn", "cnn_small", "resnet18")


class MaxPool2x2(nn.Module):
    """nn.MaxPool2d(2), with its bits: where no gradient is taken (evaluation, attacks' scores), the maxima of
    the 2x2 windows come from three elementwise `maximum`s of strided views, 5-8x faster on a CPU than ATen's NCHW
    max_pool2d kernel (benchmarks/pool.py); max is exact, so the values are the same. Where a gradient is taken,
    ATen's kernel runs (its backward routes the gradient to each window's first maximum)."""

    def forward(self, x):
        if torch.is_grad_enabled() and x.requires_grad:
            return nn.functional.max_pool2d(x, 2)
        x = x[..., : x.shape[-2] // 2 * 2, : x.shape[-1] // 2 * 2]
        return torch.maximum(torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2]),
                             torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]))


class LogisticRegression(nn.Module):
    def __init__(self, in_features: int, classes: int):
        super().__init__()
        self.linear = nn.Linear(in_features, classes)

    def forward(self, x):
        return self.linear(x.flatten(1))


class MLP(nn.Module):
    def __init__(self, in_features: int, hidden: int, classes: int):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    """McMahan et al.'s FedAvg CNN without padding for 28x28 images (582,026 parameters)."""

    def __init__(self, in_channels: int = 1, classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 32, 5), nn.ReLU(), MaxPool2x2(),
            nn.Conv2d(32, 64, 5), nn.ReLU(), MaxPool2x2(),
            nn.Flatten(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, classes),
        )

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    """The small CNN for 28x28 images (21,840 parameters, no dropout): Conv(1->10, 5x5) -> MaxPool2 -> ReLU ->
    Conv(10->20, 5x5) -> MaxPool2 -> ReLU -> Flatten(320) -> Linear(320, 50) -> ReLU -> Linear(50, 10), the
    PyTorch MNIST example without dropout; a concrete choice for Wu et al. 2026's unspecified "CNN model"."""

    def __init__(self, in_channels: int = 1, classes: int = 10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 10, 5), MaxPool2x2(), nn.ReLU(),
            nn.Conv2d(10, 20, 5), MaxPool2x2(), nn.ReLU(),
            nn.Flatten(), nn.Linear(320, 50), nn.ReLU(), nn.Linear(50, classes),
        )

    def forward(self, x):
        return self.net(x)


def resnet18_cifar(in_channels: int = 3, classes: int = 10, groups: int = 2, norm: str = "group") -> nn.Module:
    """torchvision's ResNet-18 with the CIFAR stem (3x3 stride-1 conv, no max-pool) and GroupNorm (`norm`
    "group", for clients stacked under vmap) or BatchNorm ("batch": 11,173,962 parameters, the standard CIFAR
    ResNet-18 of a token walk)."""
    from torchvision.models.resnet import BasicBlock, ResNet  # torchvision costs ~2 s at start-up

    if norm not in ("group", "batch"):
        raise ValueError(f"norm = {norm!r}: valid: group, batch")
    layer = nn.BatchNorm2d if norm == "batch" else (lambda channels: nn.GroupNorm(groups, channels))
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=classes, norm_layer=layer)
    model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


def build_model(name: str, shape: tuple[int, int, int], classes: int, mlp_hidden: int = 128) -> nn.Module:
    """A freshly initialised model for inputs of `shape` (C, H, W); use `init_seed` for determinism."""
    in_features = shape[0] * shape[1] * shape[2]
    if name == "logreg":
        return LogisticRegression(in_features, classes)
    if name == "mlp":
        return MLP(in_features, mlp_hidden, classes)
    if name == "cnn":
        return CNN(shape[0], classes)
    if name == "cnn_small":
        return SmallCNN(shape[0], classes)
    if name == "resnet18":
        return resnet18_cifar(shape[0], classes)
    raise ValueError(f"model {name!r}: unknown; valid: {', '.join(MODELS)}")


class FLNet(nn.Module):
    """McMahan et al.'s FedAvg CNN with padding, BatchNorm after each conv and Dropout(0.5) before the last
    linear, for 28x28 images (1,663,562 parameters at 1 channel, 10 classes). Lamri & Maniatakos 2025 call it
    FLNet (Table 10). Unlike the models above it has BatchNorm running statistics (buffers): it is for
    training one model at a time (e.g. a token random walk), not for clients stacked under `vmap`."""

    def __init__(self, in_channels: int = 1, classes: int = 10, side: int = 28):
        super().__init__()
        flat = 64 * (side // 4) ** 2
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 32, 5, padding=2), nn.BatchNorm2d(32), nn.ReLU(), MaxPool2x2(),
            nn.Conv2d(32, 64, 5, padding=2), nn.BatchNorm2d(64), nn.ReLU(), MaxPool2x2(),
            nn.Flatten(), nn.Linear(flat, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, classes),
        )

    def forward(self, x):
        return self.net(x)


class SmeLU(nn.Module):
    """Smooth ReLU (Shamir et al. 2020): 0 for x <= -beta, (x + beta)^2 / (4 beta) for |x| <= beta, x for x >= beta.
    Continuously differentiable, so the network is L-smooth where ReLU is not (Mu & Klabjan 2025, Section 4)."""

    def __init__(self, beta: float = 0.5):
        super().__init__()
        if not beta > 0:
            raise ValueError(f"beta = {beta!r}: valid: a number > 0")
        self.beta = float(beta)

    def forward(self, x):
        b = self.beta
        c = x.clamp(-b, b)
        return (c + b) ** 2 / (4 * b) + (x - c).clamp(min=0)


class SmeluMLP(nn.Module):
    """Fully connected layers of `widths` (in, hidden..., out) with SmeLU between them, no normalisation or dropout
    (467 -> 2048 -> 512 -> 256 -> 128 -> 2: 2,172,034 parameters, Mu & Klabjan 2025, Table 4)."""

    def __init__(self, widths: tuple[int, ...] = (467, 2048, 512, 256, 128, 2), beta: float = 0.5):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(widths, widths[1:])):
            if i:
                layers.append(SmeLU(beta))
            layers.append(nn.Linear(a, b))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class _SmoothPreActBlock(nn.Module):
    """Pre-activation basic block without normalisation: out = SmeLU(x); shortcut = 1x1 conv(out) when the shape
    changes, else x; return conv2(SmeLU(conv1(out))) + shortcut."""

    def __init__(self, cin: int, cout: int, stride: int, beta: float):
        super().__init__()
        self.act1, self.act2 = SmeLU(beta), SmeLU(beta)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.shortcut = (nn.Conv2d(cin, cout, 1, stride=stride, bias=False) if stride != 1 or cin != cout else None)

    def forward(self, x):
        out = self.act1(x)
        short = self.shortcut(out) if self.shortcut is not None else x
        return self.conv2(self.act2(self.conv1(out))) + short


class SmoothResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs without BatchNorm and with SmeLU (Mu & Klabjan 2025, Section 4): a 3x3 stem conv
    (no bias, no max-pool), pre-activation blocks [2, 2, 2, 2] of widths 64/128/256/512 and strides 1/2/2/2 (the
    first block's pre-activation is the SmeLU after the stem), 4x4 average pooling, Linear(512, classes).
    11,160,258 parameters for 3 channels and 2 classes; no buffers."""

    def __init__(self, in_channels: int = 3, classes: int = 2, beta: float = 0.5):
        super().__init__()
        self.stem = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [_SmoothPreActBlock(cin, cout, stride, beta), _SmoothPreActBlock(cout, cout, 1, beta)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        out = self.blocks(self.stem(x))
        return self.fc(nn.functional.avg_pool2d(out, 4).flatten(1))
