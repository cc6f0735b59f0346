#!/usr/bin/env bash
# Issue 71, item 3, on a lent GPU: SGLU's Figures 3a and 3c on Fashion-MNIST at scale paper (the workflow's own
# jobs, each timed by its timing file), then benchmarks/sglu_official.py: the official code's noisy SGD beside ours
# on the same device. What each printed, the wall times and the results (one tar.gz) go to OUT. Usage, in the
# repository root of the device machine, with the official repository's sgd.py (Graph-COM/SGD_unlearning, a clone
# or that one file) in a carried folder:
#   source .gpu/setup.sh && bash scripts/gpu/sglu_paper.sh "$OUT" .gpu/sglu_official
# SGLU_S limits the figures' run (default 420 s); the benchmark takes under a minute after it. To try the script
# on a machine without a GPU: SCALE=quick DEVICE=cpu.
set -uo pipefail
out=${1:?usage: scripts/gpu/sglu_paper.sh OUT_DIR OFFICIAL_DIR}
official=${2:?usage: scripts/gpu/sglu_paper.sh OUT_DIR OFFICIAL_DIR}
limit=${SGLU_S:-420}
[ -s "$official/sgd.py" ] || { echo "sglu_paper.sh: no sgd.py in $official; valid: a clone of" \
    "Graph-COM/SGD_unlearning or a folder holding its sgd.py" >&2; exit 2; }
scale=${SCALE:-paper}
[[ $limit =~ ^[0-9]+$ ]] || { echo "sglu_paper.sh: SGLU_S=$limit; valid: whole seconds" >&2; exit 2; }
[[ $scale =~ ^(quick|paper)$ ]] || { echo "sglu_paper.sh: SCALE=$scale; valid: quick, paper" >&2; exit 2; }
py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
mkdir -p "$out"
export CUBLAS_WORKSPACE_CONFIG=:4096:8
start=$(date +%s)
timeout -k 10 "$limit" "$py" -m snakemake results/sglu/fashion_mnist/fig3a.json results/sglu/fashion_mnist/fig3c.json \
    --cores all --config scale=$scale device=${DEVICE:-cuda} > "$out/figures.log" 2>&1
rc=$?
echo "figures: rc=$rc$([ $rc = 124 ] && echo " (cut at $limit s)") $(( $(date +%s) - start )) s" >> "$out/summary.txt"
"$py" benchmarks/sglu_official.py --official "$official" --device "${DEVICE:-cuda}" \
    --out "$out/sglu_official.json" >> "$out/summary.txt" 2>&1 || rc=1
tar -czf "$out/sglu_results.tar.gz" $(ls -d results/sglu timings/sglu logs/sglu logs/benchmarks/sglu 2>/dev/null)
cat "$out/summary.txt"
exit $rc
