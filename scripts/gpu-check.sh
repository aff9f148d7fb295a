#!/usr/bin/env bash
# gpu-check.sh — everything the cuda backend must pass on a real GPU, in one command that
# finishes within 6 minutes (so a rerun fits in a 15-minute lease):
#   1. build for the GPU present only (its compute capability), in build-gpu/
#   2. cpbench selftest --backend cuda (every op against the cpu backend), then with
#      4 ranks on one GPU (--comm mpi), then with NCCL on every GPU when there are >= 2
#   3. cpbench verify of every method: 4 ranks on one GPU (--comm mpi), and NCCL on all
#      GPUs when there are >= 2
#   4. a short benchmark: bench-kernels (writes a calibration file) and one
#      `cpbench run --backend cuda` per method at a modest S
# and prints a summary table.  Exit 0 when every step passed.
#
# Usage: scripts/gpu-check.sh [--budget SECONDS] [--seq S]      (from the repository root)
set -u
cd "$(dirname "$0")/.."
BUDGET=340      # seconds for everything; steps that no longer fit are skipped
SEQ=16384       # tokens of the per-method runs (llama3-8b)
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET="$2"; shift 2 ;;
    --seq) SEQ="$2"; shift 2 ;;
    *) echo "usage: scripts/gpu-check.sh [--budget SECONDS] [--seq S]" >&2; exit 2 ;;
  esac
done

T0=$(date +%s)
OUT=results/logs/gpu-check
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
: > "$LOG"
SUMMARY=()
FAILED=0
REFUSE_OK=0     # 1 while running benchmarks: exit 2 (a refused shape) is not a failure

# MPI in containers and as root (the same environment ctest uses)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)

elapsed() { echo $(( $(date +%s) - T0 )); }

# step NAME TIMEOUT CMD...: run with a timeout (clipped to the budget left), log the
# output, record ok / FAIL / TIMEOUT / SKIP with the seconds it took
step() {
  local name="$1" limit="$2"; shift 2
  local left=$(( BUDGET - $(elapsed) ))
  if [ "$left" -lt 10 ]; then
    SUMMARY+=("$(printf '%-44s %-8s %5s  %s' "$name" SKIP - "out of time budget")")
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local s=$(date +%s)
  echo "=== $name: $*" >> "$LOG"
  timeout --signal=TERM --kill-after=5 "$limit" "$@" > "$OUT/step.out" 2>&1
  local rc=$?
  cat "$OUT/step.out" >> "$LOG"
  local dt=$(( $(date +%s) - s ))
  local st=ok note
  note=$(grep -E "passed|failed|FAIL|TFLOP|error" "$OUT/step.out" | tail -1 | cut -c1-70)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then st=TIMEOUT; FAILED=1
  elif [ $rc -eq 2 ] && [ "$REFUSE_OK" = 1 ]; then st=REFUSED  # the method refuses this shape
  elif [ $rc -ne 0 ]; then st=FAIL; FAILED=1
  fi
  SUMMARY+=("$(printf '%-44s %-8s %5s  %s' "$name" "$st" "$dt" "$note")")
  echo "[$(elapsed)s] $name: $st (${dt}s)"
  [ "$st" != ok ] && tail -15 "$OUT/step.out" | sed 's/^/    /'
  return 0
}

# ---------------------------------------------------------------- the machine
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi not found: this machine has no NVIDIA GPU (or driver)." >&2
  exit 2
fi
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
NGPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ -z "$CC" ] || [ "$NGPU" -lt 1 ]; then
  echo "gpu-check: nvidia-smi reports no GPU." >&2
  exit 2
fi
echo "gpu-check: $NGPU x $GPU (sm_$CC), budget ${BUDGET}s, log in $LOG"

# ---------------------------------------------------------------- build
if ! command -v cmake >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
  step "setup (scripts/setup.sh)" 120 scripts/setup.sh
fi
step "configure (sm_$CC only)" 90 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$CC" -DCPB_WITH_CUDA=ON
step "build cpbench" 200 cmake --build build-gpu -j"$(nproc)" --target cpbench
BIN=build-gpu/cpbench
if [ ! -x "$BIN" ]; then
  printf '%s\n' "${SUMMARY[@]}"
  echo "gpu-check: the build failed; see $LOG" >&2
  exit 1
fi
if ! "$BIN" list | grep -q "cuda .*compiled in; [0-9]* device"; then
  "$BIN" list | tail -3
  echo "gpu-check: cpbench does not see a GPU (cpbench list above)" >&2
  exit 1
fi

# ---------------------------------------------------------------- correctness
step "selftest (1 rank)" 90 "$BIN" selftest --backend cuda
step "selftest (4 ranks, 1 GPU, --comm mpi)" 90 "${MPIRUN[@]}" -np 4 "$BIN" selftest --backend cuda --comm mpi
if [ "$NGPU" -ge 2 ]; then
  step "selftest ($NGPU ranks, NCCL)" 90 "${MPIRUN[@]}" -np "$NGPU" "$BIN" selftest --backend cuda
fi
step "verify all, 4 ranks --comm mpi, fp32" 90 "${MPIRUN[@]}" -np 4 "$BIN" verify --backend cuda --comm mpi \
  --method all --model tiny --seq 256 --dtype fp32
step "verify all, 4 ranks --comm mpi, bf16" 90 "${MPIRUN[@]}" -np 4 "$BIN" verify --backend cuda --comm mpi \
  --method all --model tiny --seq 256 --dtype bf16
if [ "$NGPU" -ge 2 ]; then
  step "verify all, $NGPU ranks NCCL, bf16" 90 "${MPIRUN[@]}" -np "$NGPU" "$BIN" verify --backend cuda \
    --method all --model tiny --seq 512 --dtype bf16
fi

# ---------------------------------------------------------------- short benchmark
CALIB="$OUT/calibration-$(echo "$GPU" | tr ' /' '__').txt"
step "bench-kernels (4K..16K)" 120 "$BIN" bench-kernels --seq-start 4096 --seq-stop 16384 --iters 2 --out "$CALIB"
METHODS=$("$BIN" list | awk '/^Methods:/{m=1;next} /^$/{m=0} m && NF {print $1}' | grep -v '^(none')
NP=$NGPU
[ "$NP" -gt 8 ] && NP=8
REFUSE_OK=1
for m in $METHODS; do
  step "run $m llama3-8b S=$SEQ on $NP GPU(s)" 60 "${MPIRUN[@]}" -np "$NP" "$BIN" run --backend cuda --method "$m" \
    --model llama3-8b --seq "$SEQ" --warmup 1 --iters 2
done
REFUSE_OK=0

# ---------------------------------------------------------------- summary
echo
echo "gpu-check summary: $NGPU x $GPU (sm_$CC), $(elapsed)s"
printf '%-44s %-8s %5s  %s\n' step status sec note
printf '%s\n' "${SUMMARY[@]}"
[ -f "$CALIB" ] && { echo; echo "calibration ($CALIB):"; grep -v '^#' "$CALIB"; }
exit $FAILED
