#!/usr/bin/env bash
# PDUDT at the paper scale on one GPU machine, as recorded in reports/recorded/pdudt_cnn_gpu: every job of
# `snakemake reports/pdudt/index.md` except Table 2's timing, GPU_JOBS at a time on the one GPU, then the timing
# alone on it (so that Table 2's seconds are not shared), then the report. Each phase has a deadline, so that a run
# cut short still leaves its logs, results and benchmarks (a failed job ends the run at once); everything but the
# models and histories in artifacts/ (the CNN's history is 1.2 GB) goes into one archive. A run cut short resumes
# where it stopped when started again in the same tree (on the device tool: the next call on the still-warm machine,
# which keeps artifacts/). On an H200 the whole DAG takes about 20-25 minutes, most of it the noise-adding methods'
# subsequent rounds (reports/recorded/pdudt_cnn_gpu: two calls of the device tool, each cut by its deadline).
# Usage, in the repository root with a params.yaml at `scale: paper` (engine.cpu_threads a number: `auto` gives every
# job all cores, so one job runs at a time):
#   bash scripts/gpu/pdudt_paper.sh OUT.tgz [seconds before the timing, default 390] [seconds for timing and report,
#        default 120] [GPU jobs at a time, default 8]
set -u
out=${1:?usage: pdudt_paper.sh OUT.tgz [main seconds] [timing seconds] [gpu jobs]}
main_s=${2:-390} last_s=${3:-120} gpu_jobs=${4:-8}
grep -q "^scale: paper" params.yaml || { echo "pdudt_paper.sh: params.yaml is not at scale: paper" >&2; exit 2; }
export CUBLAS_WORKSPACE_CONFIG=:4096:8
mkdir -p logs
progress=logs/gpu_progress.txt
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nproc; } > logs/gpu_device.txt 2>&1
echo "$(date +%T) start" >> "$progress"
timeout -k 15 "$main_s" snakemake reports/pdudt/index.md --cores all --resources gpu="$gpu_jobs" \
  --omit-from pdudt_timing --rerun-incomplete > logs/gpu_main.log 2>&1
rc=$?; echo "$(date +%T) jobs before the timing: rc=$rc (124, 137: deadline)" >> "$progress"
if [ "$rc" = 0 ] || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then  # a failed job ends the run early: its log comes sooner
  timeout -k 15 "$last_s" snakemake reports/pdudt/index.md --cores all --resources gpu=1 --rerun-incomplete \
    > logs/gpu_last.log 2>&1
  rc=$?; echo "$(date +%T) timing and report: rc=$rc (124, 137: deadline)" >> "$progress"
fi
tar czf "$out" params.yaml logs $(ls -d reports/pdudt results timings 2>/dev/null) \
  $(find artifacts -name "*.json" 2>/dev/null)
echo "$(date +%T) archived" >> "$progress"
cat "$progress"
