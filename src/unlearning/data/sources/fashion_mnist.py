"""Fashion-MNIST (Xiao, Rasul and Vollgraf 2017) through torchvision; offline from Debian's dataset-fashion-mnist."""

CLASSES = 10
SHAPE = (1, 28, 28)
TRAIN_SIZE = 60000
RAW_FILE = "FashionMNIST/raw/train-images-idx3-ubyte"
HINT = ("offline: `apt-get install dataset-fashion-mnist` then `bash scripts/get_data.sh`; online: the pipeline "
        "downloads it through torchvision")
TORCHVISION = "FashionMNIST"  # torchvision.datasets' class (images .data [N, 28, 28], labels .targets)


def load(raw_root, download: bool, seed: int):
    from ..datasets import load_torchvision

    return load_torchvision("fashion_mnist", raw_root, download), {}
