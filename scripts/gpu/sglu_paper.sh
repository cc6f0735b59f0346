#!/usr/bin/env bash
# Issue 71, item 3, on a lent GPU: SGLU's Figures 3a and 3c on Fashion-MNIST at scale paper (the workflow's own
# jobs, each timed by its timing file; scripts/gpu/paper_jobs.sh), then benchmarks/sglu_official.py: the official
# code's noisy SGD beside ours on the same device. Usage, in the repository root of the device machine, with the
# official repository's sgd.py (Graph-COM/SGD_unlearning, a clone or that one file) in a carried folder:
#   source .gpu/setup.sh && bash scripts/gpu/sglu_paper.sh "$OUT" .gpu/sglu_official
# LIMIT_S limits the figures' run (default 420 s); the benchmark takes under a minute after it. To try the script
# on a machine without a GPU: SCALE=quick DEVICE=cpu.
set -uo pipefail
out=${1:?usage: scripts/gpu/sglu_paper.sh OUT_DIR OFFICIAL_DIR}
official=${2:?usage: scripts/gpu/sglu_paper.sh OUT_DIR OFFICIAL_DIR}
[ -s "$official/sgd.py" ] || { echo "sglu_paper.sh: no sgd.py in $official; valid: a clone of" \
    "Graph-COM/SGD_unlearning or a folder holding its sgd.py" >&2; exit 2; }
bash "$(dirname "$0")/paper_jobs.sh" "$out" results/sglu/fashion_mnist/fig3a.json results/sglu/fashion_mnist/fig3c.json
rc=$?
[ $rc = 2 ] && [ ! -s "$out/summary.txt" ] && exit 2  # refused before it ran
py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
"$py" benchmarks/sglu_official.py --official "$official" --device "${DEVICE:-cuda}" \
    --out "$out/sglu_official.json" >> "$out/summary.txt" 2>&1 || rc=1
cat "$out/summary.txt"
exit $rc
