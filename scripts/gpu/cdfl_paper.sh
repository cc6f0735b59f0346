#!/usr/bin/env bash
# CDFL at the paper scale on a GPU machine, as recorded in reports/recorded/cdfl_fashion_mnist: the jobs the rules
# cdfl_cell, cdfl_calibration and cdfl_figure1 run (same commands, same files), started directly so that a run cut
# off on one machine resumes on another from the result files carried back (a job whose result exists is skipped),
# then cdfl-timing (CIFAR-10's ResNet-18 on synthetic inputs) alone on the GPU. The convex stand-in (CPU, float64)
# and the report run where the results land. Usage, in the repository root, with a params file at `scale: paper`
# (the device tool re-sends the working tree, so keep the paper-scale file outside params.yaml, e.g. in .gpu/):
#   bash scripts/gpu/cdfl_paper.sh [params file, default params.yaml] [parallel jobs, default 5]
# SEEDS="1 2" runs those seeds' cells only (default "0 1 2"); FIGURES=0 leaves out the calibration, Figure 1 and
# CIFAR-10's timing (default 1), so that one device call can hold the cells of two seeds.
set -u
params=${1:-params.yaml}
jobs=${2:-5}
seeds=${SEEDS:-0 1 2}
figures=${FIGURES:-1}
for seed in $seeds; do
  [[ $seed =~ ^[0-9]+$ ]] || { echo "cdfl_paper.sh: SEEDS: $seed is not a seed; valid: whole numbers, e.g. SEEDS=\"1 2\"" >&2; exit 2; }
done
[[ $figures =~ ^[01]$ ]] || { echo "cdfl_paper.sh: FIGURES=$figures; valid: 0 or 1" >&2; exit 2; }
[ -s "$params" ] || { echo "cdfl_paper.sh: params file $params not found; valid: a params.yaml at scale paper" >&2; exit 2; }
py="python3 -m unlearning --params $params --threads 2"
features=data/features/fashion_mnist.safetensors
res=results/cdfl/fashion_mnist tim=timings/cdfl/fashion_mnist logs=logs/cdfl/fashion_mnist
mkdir -p "$res" "$tim" "$logs" results/cdfl/cifar10
progress=logs/cdfl/gpu_progress.txt
export CUBLAS_WORKSPACE_CONFIG=:4096:8
[ -s "$features" ] || snakemake "$features" --cores all > logs/cdfl/features.log 2>&1 || { echo "features failed" >> "$progress"; exit 1; }
queue=()
for name in $([ "$figures" = 1 ] && echo calibration figure1); do
  [ -s "$res/$name.json" ] || queue+=("$name cdfl-$([ $name = calibration ] && echo calibrate || echo figure1) --dataset fashion_mnist")
done
for seed in $seeds; do for part in iid dirichlet; do for topo in ring erdos_renyi; do
  name=${part}_${topo}_s$seed
  [ -s "$res/$name.json" ] || queue+=("$name cdfl-cell --dataset fashion_mnist --partition $part --topology $topo --seed $seed")
done; done; done
echo "$(date +%T) start: ${#queue[@]} jobs, $jobs at a time" >> "$progress"
for job in "${queue[@]}"; do
  set -- $job; name=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 2; done
  ( start=$(date +%s)
    $py "$@" --features "$features" --out "$res/$name.json" --timing "$tim/$name.json" > "$logs/$name.log" 2>&1
    rc=$?
    echo "$(date +%T) $name rc=$rc $(( $(date +%s) - start )) s" >> "$progress" ) &
done
wait
if [ "$figures" = 1 ] && [ ! -s results/cdfl/cifar10/timing_synthetic.json ]; then
  $py cdfl-timing --dataset cifar10 --rounds 3 --out results/cdfl/cifar10/timing_synthetic.json \
    > logs/cdfl/cifar10_timing.log 2>&1
  echo "$(date +%T) cifar10 timing rc=$?" >> "$progress"
fi
echo "$(date +%T) all done" >> "$progress"
