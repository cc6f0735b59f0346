#!/usr/bin/env bash
# The workflow's own jobs for some targets at scale paper on a lent GPU, under one time limit (issue 71): what
# Snakemake printed, the exit status and wall time go to OUT, with each experiment's results, timings, logs and
# Snakemake benchmarks as one tar.gz (the device tool returns eight files). Usage, in the repository root of the
# device machine:
#   source .gpu/setup.sh && bash scripts/gpu/paper_jobs.sh "$OUT" results/rrdu/fashion_mnist/seed0.json ...
# LIMIT_S bounds the run (default 420 s); CONFIGFILE merges a parameter file over params.yaml (Snakemake's
# --configfile, e.g. scripts/gpu/r2d_resnet.yaml); SCALE=quick DEVICE=cpu tries the script on a machine without a GPU.
set -uo pipefail
out=${1:?usage: scripts/gpu/paper_jobs.sh OUT_DIR TARGET...}
shift
[ $# -gt 0 ] || { echo "paper_jobs.sh: no target; valid: result files, e.g. results/rrdu/fashion_mnist/seed0.json" >&2
                  exit 2; }
limit=${LIMIT_S:-420} scale=${SCALE:-paper} device=${DEVICE:-cuda}
[[ $limit =~ ^[0-9]+$ ]] || { echo "paper_jobs.sh: LIMIT_S=$limit; valid: whole seconds" >&2; exit 2; }
[[ $scale =~ ^(quick|paper)$ ]] || { echo "paper_jobs.sh: SCALE=$scale; valid: quick, paper" >&2; exit 2; }
extra=()
if [ -n "${CONFIGFILE:-}" ]; then
    [ -s "$CONFIGFILE" ] || { echo "paper_jobs.sh: CONFIGFILE=$CONFIGFILE not found; valid: a YAML file of parameters" >&2
                              exit 2; }
    extra=(--configfile "$CONFIGFILE")
fi
for target in "$@"; do
    [[ $target == results/*/* ]] || { echo "paper_jobs.sh: $target; valid: result files under results/<experiment>/" >&2
                                      exit 2; }
done
py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
mkdir -p "$out"
export CUBLAS_WORKSPACE_CONFIG=:4096:8
start=$(date +%s)
timeout -k 10 "$limit" "$py" -m snakemake "$@" --cores all "${extra[@]}" --config scale="$scale" device="$device" \
    > "$out/jobs.log" 2>&1
rc=$?
echo "jobs ($*): rc=$rc$([ $rc = 124 ] && echo " (cut at $limit s)") $(( $(date +%s) - start )) s" >> "$out/summary.txt"
parts=$(for target in "$@"; do cut -d/ -f2 <<< "$target"; done | sort -u)
tar -czf "$out/results.tar.gz" $(for p in $parts; do ls -d results/$p timings/$p logs/$p logs/benchmarks/$p; done \
    2>/dev/null)
exit $rc
