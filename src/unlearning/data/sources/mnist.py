"""MNIST (LeCun et al. 1998) through torchvision (a network, or its files under data.raw_root)."""

CLASSES = 10
SHAPE = (1, 28, 28)
TRAIN_SIZE = 60000
RAW_FILE = "MNIST/raw/train-images-idx3-ubyte"
TORCHVISION = "MNIST"  # torchvision.datasets' class (images .data [N, 28, 28], labels .targets)


def load(raw_root, download: bool, seed: int):
    from ..datasets import load_torchvision

    return load_torchvision("mnist", raw_root, download), {}
