#!/usr/bin/env bash
# Sets up everything a fresh clone needs: .venv with the package (torch>=2.14 and the matching
# torchvision from PyPI, Snakemake, DVC, pytest) and the Fashion-MNIST files. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
bash scripts/get_data.sh
