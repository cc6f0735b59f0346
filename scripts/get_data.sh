#!/usr/bin/env bash
# Puts Fashion-MNIST's IDX files where torchvision.datasets.FashionMNIST reads them
# (data/raw/FashionMNIST/raw/): from Debian's dataset-fashion-mnist package where apt and root are
# available, else through torchvision's download where a network is; otherwise stops saying both ways.
set -euo pipefail
cd "$(dirname "$0")/.."
raw=data/raw/FashionMNIST/raw
debian=/usr/share/datasets/fashion-mnist
files="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"

have_all() { for f in $files; do [ -s "$raw/$f" ] || return 1; done; }
have_all && exit 0

if [ ! -d "$debian" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "get_data: installing Debian's dataset-fashion-mnist" >&2
  (apt-get install -y -qq dataset-fashion-mnist >/dev/null 2>&1 ||
   { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq dataset-fashion-mnist >/dev/null; }) || true
fi
if [ -d "$debian" ]; then
  mkdir -p "$raw"
  for f in $files; do
    gunzip -c "$debian/$f.gz" > "$raw/.$f.tmp" && mv "$raw/.$f.tmp" "$raw/$f"
  done
  echo "get_data: Fashion-MNIST from $debian -> $raw" >&2
  exit 0
fi
if .venv/bin/python -c "from torchvision.datasets import FashionMNIST as F; F('data/raw', train=True, download=True); F('data/raw', train=False, download=True)" >/dev/null 2>&1; then
  echo "get_data: Fashion-MNIST downloaded by torchvision -> $raw" >&2
  exit 0
fi
cat >&2 <<'MSG'
get_data: Fashion-MNIST is not available. Either
  - offline, as root on Debian/Ubuntu: apt-get install dataset-fashion-mnist, then run this script again; or
  - with a network: run this script again and torchvision downloads it into data/raw/FashionMNIST/raw.
MSG
exit 1
