#!/usr/bin/env bash
# Issue 71, items 1 and 3, on a lent GPU: the test suite less its whole-workflow tests (`-m "not slow or cuda"`: the
# edit loop plus every cuda-marked test) with `--device cuda`, then the tiny workflow (tests/config/tiny.yaml) with
# `device: cuda` end to end, then benchmarks/engine.py on the device. Each phase has its own time limit; what each
# printed, its exit status and wall time go to OUT (at most six files: the device tool returns eight), with the
# device and the commit; the script exits non-zero when a phase did. Usage, in the repository root of the device
# machine:
#   source .gpu/setup.sh && COMMIT=<sha> bash scripts/gpu/cuda_checks.sh "$OUT" [phases, default "tests tiny engine"]
# The three phases' limits (240 + 300 + 90 s) exceed one device call's 10 minutes: run "tests engine", then "tiny"
# while the machine is still warm.
# DEVICE=cpu runs the same phases on the CPU (to try the script on a machine without a GPU); TESTS="tests/a.py::b ..."
# runs those tests instead of the selection; TINY_S sets the tiny workflow's limit (default 300 s: it needed over
# 180 on an H200) and TINY_CORES its cores (default all: fewer leave some to a run beside it). The package is
# installed (editable, offline) where it is not, as the bootstrap does: provenance reads its metadata.
set -uo pipefail
out=${1:?usage: scripts/gpu/cuda_checks.sh OUT_DIR [tests] [tiny] [engine]}
shift
phases=${*:-tests tiny engine}
for p in $phases; do  # refuse a misspelt phase before any runs
    case $p in tests|tiny|engine) ;; *) echo "cuda_checks.sh: unknown phase $p; valid: tests, tiny, engine" >&2; exit 2 ;; esac
done
failed=0
device=${DEVICE:-cuda}
py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}  # the checkout's, else the image's
if [[ " $phases " == *" tiny "* ]] && ! "$py" -c "import snakemake" 2> /dev/null; then  # a shell that did not source the setup
    echo "cuda_checks.sh: $py cannot import snakemake, which the tiny phase runs; valid: a Python with it" \
         "(on the device tool's, source .gpu/setup.sh first)" >&2
    exit 2
fi
mkdir -p "$out"
summary=$out/summary.txt
if [ "$device" = cuda ] && ! "$py" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "cuda_checks.sh: $py cannot import torch or torch sees no CUDA device; valid: a machine with one" \
         "(on the device tool's, after source .gpu/setup.sh), or DEVICE=cpu" | tee "$summary" >&2
    exit 2
fi
{
    echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
    echo "device: $device"
    "$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
    nproc | sed 's/^/cores: /'
} > "$summary"
"$py" -c "import importlib.metadata as m; m.version('unlearning')" 2>/dev/null \
    || "$py" -m pip install -q --no-deps --no-index --no-build-isolation -e . >> "$summary" 2>&1 \
    || echo "install: pip install -e . failed" >> "$summary"
export CUBLAS_WORKSPACE_CONFIG=:4096:8  # deterministic cuBLAS (torch's use_deterministic_algorithms asks for it)

phase() {  # name, limit in seconds, command...: run it, log it, record its status and wall time
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s)
    timeout -k 10 "$limit" "$@" > "$out/$name.log" 2>&1  # killed 10 s after its TERM if it lingers
    rc=$?
    echo "$name: rc=$rc$([ $rc = 124 ] && echo " (cut at $limit s)") $(( $(date +%s) - start )) s" >> "$summary"
    [ $rc = 0 ] || failed=1
}

for p in $phases; do
    case $p in
        tests)
            if [ -n "${TESTS:-}" ]; then read -ra pick <<< "$TESTS"; else pick=(-m "not slow or cuda"); fi
            phase tests 240 "$py" -m pytest -q -p no:cacheprovider --device "$device" -rs --durations=15 "${pick[@]}" ;;
        tiny)
            work=$(mktemp -d)
            sed "s/^device: .*/device: $device/" tests/config/tiny.yaml > "$work/params.yaml"
            grep -q "^device: $device$" "$work/params.yaml" \
                || { echo "tiny: tests/config/tiny.yaml has no top-level device key" >> "$summary"; failed=1; continue; }
            # small jobs: several share the one GPU (the profile's default is one at a time)
            phase tiny "${TINY_S:-300}" "$py" -m snakemake --cores "${TINY_CORES:-all}" --resources gpu=8 -s "$PWD/Snakefile" -d "$work"
            (cd "$work" && find reports results logs \( -name "*.csv" -o -name "*.json" -o -name "*.md" -o -name "*.log" \) \
                2>/dev/null | tar -czf "$out/tiny_results.tar.gz" -T -)  # one file (the tool returns eight), the jobs' logs too
            rm -rf "$work" ;;
        engine)
            phase engine 90 "$py" benchmarks/engine.py --device "$device" --out "$out/engine_$device.json" ;;
    esac
done
cat "$summary"
exit $failed
