#!/usr/bin/env bash
# Sets up everything a fresh clone needs: .venv with a pinned pip (requirements/pip.txt) and the exact, hash-checked
# versions in requirements/lock.txt (torch 2.14.1, torchvision 0.29.1, Snakemake, DVC, pytest, ruff, hypothesis and
# all their dependencies), this package on top of them (editable, no dependency resolution), and the
# Fashion-MNIST files. Safe to re-run: an existing .venv is reused and brought back to the lock's versions.
# The lock is for CPython 3.11 on Linux x86_64; PYTHON=/path/to/python3.11 picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=requirements/lock.txt
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
platform=$(.venv/bin/python -c 'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]} {platform.system()} {platform.machine()}")')
if [ "$platform" != "3.11 Linux x86_64" ]; then
    echo "scripts/bootstrap.sh: $lock is for Python 3.11 on Linux x86_64, .venv has Python $platform;" \
         "remove .venv and re-run with PYTHON=python3.11, or refresh the lock for this platform (see its header)" >&2
    exit 2
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
# the installer first (requirements/pip.txt: the bundled pip reads PyPI's index pages at twice the CPU cost)
"${pip[@]}" install --quiet --no-compile --require-hashes -r requirements/pip.txt
# The lock in three installs side by side (scripts/split_lock.awk): the CUDA libraries, torch with triton (both mostly
# unpacking) and the other packages (mostly reading the index): 24-33 s on 2 cores against 63 s in one install.
# --no-deps: the lock lists every dependency, which `pip check` below proves. --no-compile: pip byte-compiles the
# 14,500 installed modules one at a time; compileall below does it on every core, beside get_data.sh and get_browser.sh
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
awk -v dir="$parts" -f scripts/split_lock.awk "$lock"
installs=()
for part in "$parts"/*.txt; do  # the parts split_lock.awk names; one holding options alone installs nothing
    if grep -q '^[A-Za-z0-9]' "$part"; then
        "${pip[@]}" install --quiet --no-compile --no-deps --require-hashes -r "$part" & installs+=($!)
    fi
done
failed=0
for install in "${installs[@]}"; do wait "$install" || failed=1; done  # each to its end: none left running
[ "$failed" = 0 ] || { echo "scripts/bootstrap.sh: installing $lock failed (pip's message above)" >&2; exit 1; }
"${pip[@]}" install --quiet --no-compile --no-deps --no-build-isolation -e .
"${pip[@]}" check
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# -qq: a module for a newer Python (torch ships one) fails to compile here; pip ignores it too, and so does this.
# -x: not the packages' own test suites (3,400 of the 14,500 modules, half the time), which nothing here imports
.venv/bin/python -m compileall -qq -j 0 -x '/tests?/' "$site" src & compiling=$!
bash scripts/get_data.sh
bash scripts/get_browser.sh
wait "$compiling" || true
