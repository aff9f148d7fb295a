#!/usr/bin/env bash
# reproduce.sh BUILDDIR — what `make reproduce` runs: the paper's grid, then the figures.
#
#   every method; llama3-8b on 8 GPUs; qwen3-32b on 8 GPUs and as the paper ran it, 16 GPUs
#   (Ulysses 8 x ring 2); 128K to 8M tokens including 3M and 5M; then the longest context
#   per method, bisected; FPDT also in the paper's Megatron-DeepSpeed setup; METP's claims
#   on llama2-7b (MHA) and 8 x A100; then the figures, tables and paper/out/claims.md, and
#   paper/out/external.md (published numbers of other sources against their cpbench commands).
#
# Where the numbers come from (each row of the results says so in its `backend` column):
#   - always: a CPU verification of every method (mpirun -np 4, real math against the fp64
#     reference, and the methods' fingerprints compared) and the simulator at full scale (results/reproduce-sim.h5; layer scope and
#     the whole-model estimate).  Simulator numbers are predictions: exact tracked memory of
#     the same schedule, time from the H100 profile.
#   - on a machine with NVIDIA GPUs (nvidia-smi -L), also the cuda backend
#     (results/reproduce-cuda.h5): a preflight first (cpbench selftest, then a verify of every
#     method on the GPUs; the script stops if either fails), then every method at the grid's
#     lengths plus the simulator's predicted longest fit and first OOM of that method (the
#     prediction chooses where to bracket instead of bisecting on the GPUs), with fewer
#     iterations for the long lengths whose steps take minutes.
# Points already in a results file are not run again: an interrupted reproduce resumes.
#
# Environment: CPB_REPRODUCE_BACKEND=sim skips the GPUs even when present;
# CPB_REPRODUCE_QUICK=1 runs a reduced grid (a smoke test of this script);
# CPB_REPRODUCE_OUT=DIR writes the results to DIR/results and the figures, tables and
# claims to DIR/paper-out instead of results/ and paper/out/ (the ctest of this script).
set -uo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
CPB="$BUILD/cpbench"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
RESULTS="$ROOT/results"
FIGS="$ROOT/paper/out"
if [ -n "${CPB_REPRODUCE_OUT:-}" ]; then
  RESULTS="$CPB_REPRODUCE_OUT/results"
  FIGS="$CPB_REPRODUCE_OUT/paper-out"
fi
SIM_H5="$RESULTS/reproduce-sim.h5"
CUDA_H5="$RESULTS/reproduce-cuda.h5"
LOGS="$RESULTS/logs" # every step's full output

log() { echo "[reproduce $(date -u +%H:%M:%S)] $*"; }
die() { echo "[reproduce] STOP: $*" >&2; exit 1; }
FAILED=()
note_fail() { FAILED+=("$1"); echo "[reproduce] FAILED: $1 (continuing; summary at the end)" >&2; }

[ -x "$CPB" ] || die "$CPB not found: build first (make build, or cmake -S . -B $BUILD && cmake --build $BUILD)"
mkdir -p "$RESULTS" "$FIGS" "$LOGS"

# single-node MPI that works in containers and as root
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
MPIRUN=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)

LIST=128K,256K,512K,1M,2M,3M,4M,5M,8M
METP_LIST=16K,32K,64K,128K,256K
SHORT_LIST=128K,256K,512K,1M
LONG_LIST=2M,3M,4M,5M,8M
BISECT=64K
if [ "${CPB_REPRODUCE_QUICK:-0}" = 1 ]; then
  LIST=128K,1M,3M
  METP_LIST=16K,64K
  SHORT_LIST=128K
  LONG_LIST=1M
  BISECT=512K
  log "CPB_REPRODUCE_QUICK=1: reduced grid ($LIST)"
fi
T0=$(date +%s)

# ---------------------------------------------------------------- 1. CPU verification
log "1/4 CPU verification of every method (4 MPI ranks, tiny model, 192 tokens): measured, real math"
if "${MPIRUN[@]}" -np 4 "$CPB" verify --backend cpu --method all --model tiny --seq 192 \
    > "$LOGS/verify-cpu.log" 2>&1; then
  tail -n 3 "$LOGS/verify-cpu.log"
else
  tail -n 20 "$LOGS/verify-cpu.log" >&2
  note_fail "CPU verification (results/logs/verify-cpu.log)"
fi
# the numeric fingerprints (y, dx, dW norms) of every method at one point agree: the same
# check the GPU runs get below, where no fp64 reference is in reach
CPU_H5="$RESULTS/reproduce-cpu.h5"
rm -f "$CPU_H5"
if "${MPIRUN[@]}" -np 4 "$CPB" sweep --backend cpu --method all --model tiny --seq-list 192 --warmup 0 --iters 1 \
    --out "$CPU_H5" > "$LOGS/fingerprints-cpu.log" 2>&1 \
    && "$CPB" fingerprints --results "$CPU_H5" >> "$LOGS/fingerprints-cpu.log" 2>&1; then
  tail -n 1 "$LOGS/fingerprints-cpu.log"
else
  tail -n 20 "$LOGS/fingerprints-cpu.log" >&2
  note_fail "CPU fingerprints (results/logs/fingerprints-cpu.log)"
fi

# ---------------------------------------------------------------- GPUs present?
NGPU=0 GPU_NAME="" PROFILE=h100-sxm
if [ "${CPB_REPRODUCE_BACKEND:-}" != sim ] && command -v nvidia-smi >/dev/null 2>&1; then
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  GPU_NAME=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
fi
# the simulator predicts for this machine's GPU when it has a profile for it (so its
# predictions bracket the measurements), else for the paper's H100
case "$GPU_NAME" in
  *H200*) PROFILE=h200 ;;
  *A100*40*) PROFILE=a100-40g ;;
  *A100*) PROFILE=a100-80g ;;
esac

# ---------------------------------------------------------------- 2. simulator, full scale
sim_sweep() { # label, then cpbench sweep options; --gpu and --method default to the
  # profile and all (cpbench refuses an option given twice, so a default is added only
  # when the step does not name its own)
  local label=$1
  shift
  local defaults=() a has_gpu=0 has_method=0
  for a in "$@"; do
    case "$a" in --gpu|--gpu=*) has_gpu=1 ;; --method|--method=*) has_method=1 ;; esac
  done
  [ $has_gpu = 1 ] || defaults+=(--gpu "$PROFILE")
  [ $has_method = 1 ] || defaults+=(--method all)
  log "   sim: $label"
  "$CPB" sweep --backend sim "${defaults[@]}" --out "$SIM_H5" "$@" > "$LOGS/sim-$label.log" 2>&1
  local rc=$?
  grep -E "^# [a-z]+: (largest|no length)" "$LOGS/sim-$label.log" | sed 's/^/      /'
  [ $rc -eq 0 ] || note_fail "simulator sweep $label (exit $rc; rows with status error in results/logs/sim-$label.log)"
}
log "2/4 simulator at full scale -> $SIM_H5 (predictions: exact tracked memory, modelled time, GPU profile $PROFILE)"
for scope in layer model; do
  sim_sweep "llama3-8b-8gpu-$scope-grid" --model llama3-8b --gpus 8 --scope $scope --seq-list $LIST
  sim_sweep "llama3-8b-8gpu-$scope-max" --model llama3-8b --gpus 8 --scope $scope \
    --seq-start 128K --seq-stop 8M --bisect $BISECT
  sim_sweep "qwen3-32b-8gpu-$scope-grid" --model qwen3-32b --gpus 8 --scope $scope --seq-list $LIST
  sim_sweep "qwen3-32b-8gpu-$scope-max" --model qwen3-32b --gpus 8 --scope $scope \
    --seq-start 128K --seq-stop 8M --bisect $BISECT
  # the paper's Qwen3-32B runs: 16 GPUs, Ulysses 8 inside a node x ring 2 across
  sim_sweep "qwen3-32b-16gpu-$scope-grid" --model qwen3-32b --gpus 16 --gpus-per-node 8 \
    --ulysses-degree 8 --scope $scope --seq-list $LIST
  sim_sweep "qwen3-32b-16gpu-$scope-max" --model qwen3-32b --gpus 16 --gpus-per-node 8 \
    --ulysses-degree 8 --scope $scope --seq-start 128K --seq-stop 8M --bisect $BISECT
  # the paper's Llama3-8B 16-GPU points (8 x 2) up to 8M: the hybrid methods and pure upipe
  sim_sweep "llama3-8b-16gpu-$scope-grid" --model llama3-8b --gpus 16 --gpus-per-node 8 \
    --ulysses-degree 8 --scope $scope --seq-list $LIST,6M,7M --method usp,hupipe,upipe
done
# the longest contexts once more on our own attention kernels (--attn own): where an estimate on
# cuDNN's attention falls short of the paper, the claims report sets these beside it with what
# the attention holds beyond our kernels (paper/claims.py)
sim_sweep "llama3-8b-8gpu-model-max-attn-own" --model llama3-8b --gpus 8 --scope model --attn own \
  --seq-start 128K --seq-stop 8M --bisect $BISECT --method ulysses,ring,upipe
sim_sweep "qwen3-32b-16gpu-model-max-attn-own" --model qwen3-32b --gpus 16 --gpus-per-node 8 \
  --ulysses-degree 8 --scope model --attn own --seq-start 128K --seq-stop 8M --bisect $BISECT \
  --method usp,ring,hupipe
# LoongTrain's double ring beside usp on 16 and 32 GPUs (Ulysses 2 x a ring of 8 or 16 whose inner
# rings of 4 fill a node)
for g in 16 32; do
  sim_sweep "llama3-8b-${g}gpu-layer-dring-max" --model llama3-8b --gpus $g --gpus-per-node 8 --scope layer \
    --ulysses-degree 2 --seq-start 128K --seq-stop 16M --bisect $BISECT --method usp,dring
done
# ring's load balances (--ring-layout; striped and contiguous on our kernels, docs/methods.md):
# contiguous's imbalance at full scale, striped up to its 1024 tokens per rank beside zigzag
for scope in layer model; do
  for lay in zigzag contiguous; do
    sim_sweep "llama3-8b-8gpu-$scope-ring-$lay-max" --model llama3-8b --gpus 8 --scope $scope --attn own \
      --ring-layout $lay --seq-start 128K --seq-stop 8M --bisect $BISECT --method ring
  done
  sim_sweep "llama3-8b-8gpu-$scope-ring-layouts-short" --model llama3-8b --gpus 8 --scope $scope --attn own \
    --seq-list 4K,8K --method ring --ring-layout striped
done
# FPDT as the paper ran it: DeepSpeed's schedule (--fpdt-impl deepspeed, the default) in the
# Megatron-DeepSpeed ZeRO-3 setup; and the pipelined schedule beside it
for fw in deepspeed; do
  sim_sweep "llama3-8b-8gpu-model-fpdt-$fw-grid" --model llama3-8b --gpus 8 --scope model --framework $fw \
    --seq-list $LIST --method fpdt
  sim_sweep "llama3-8b-8gpu-model-fpdt-$fw-max" --model llama3-8b --gpus 8 --scope model --framework $fw \
    --seq-start 128K --seq-stop 8M --bisect $BISECT --method fpdt
  sim_sweep "qwen3-32b-16gpu-model-fpdt-$fw-grid" --model qwen3-32b --gpus 16 --gpus-per-node 8 \
    --scope model --framework $fw --seq-list $LIST --method fpdt
  sim_sweep "qwen3-32b-16gpu-model-fpdt-$fw-max" --model qwen3-32b --gpus 16 --gpus-per-node 8 \
    --scope model --framework $fw --seq-start 128K --seq-stop 8M --bisect $BISECT --method fpdt
done
sim_sweep "llama3-8b-8gpu-model-fpdt-pipelined-grid" --model llama3-8b --gpus 8 --scope model \
  --fpdt-impl pipelined --seq-list $LIST --method fpdt
# METP's claims (MHA: llama2-7b; 8 x A100): memory against TP at p = 2, 4, 8 and the
# longest sequence against the other methods, one attention layer
for p in 2 4 8; do
  sim_sweep "llama2-7b-${p}gpu-a100-layer-metp-grid" --gpu a100-80g --model llama2-7b --gpus $p --scope layer \
    --seq-list $METP_LIST --method tp,metp
done
sim_sweep "llama2-7b-8gpu-a100-layer-max" --gpu a100-80g --model llama2-7b --gpus 8 --scope layer \
  --seq-start 16K --seq-stop 16M --bisect $BISECT --method tp,metp,ring,ulysses

# ---------------------------------------------------------------- 3. GPUs
if [ "$NGPU" -gt 0 ]; then
  C=$(( NGPU < 8 ? NGPU : 8 ))
  log "3/4 cuda backend on $C of $NGPU GPUs ($GPU_NAME) -> $CUDA_H5: measured"
  log "   preflight: cpbench selftest --backend cuda"
  "$CPB" selftest --backend cuda > "$LOGS/selftest-cuda.log" 2>&1 \
    || { tail -n 20 "$LOGS/selftest-cuda.log" >&2; die "cuda self-test failed (results/logs/selftest-cuda.log); no GPU numbers were taken"; }
  log "   preflight: verify of every method on $C GPUs"
  "${MPIRUN[@]}" -np "$C" "$CPB" verify --backend cuda --method all --model tiny --seq 1024 \
    > "$LOGS/verify-cuda.log" 2>&1 \
    || { tail -n 20 "$LOGS/verify-cuda.log" >&2; die "cuda verification failed (results/logs/verify-cuda.log); no GPU numbers were taken"; }
  for model in llama3-8b qwen3-32b; do
    # the registry's methods, from the machine form of `cpbench list` (its text is for people)
    for m in $("$CPB" list --format json | "$PY" -c 'import json, sys; print("\n".join(m["name"] for m in json.load(sys.stdin)["methods"]))'); do
      # the simulator's longest fit and first OOM for this method: the GPUs bracket there
      extra=$("$PY" - "$SIM_H5" "$model" "$C" "$m" "$PROFILE" <<'PYEOF'
import sys, h5py
f, model, C, m = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4].encode()
try:
    r = h5py.File(f, "r")["runs"][:]
except OSError:
    sys.exit(0)
r = r[(r["model"] == model) & (r["world_size"] == C) & (r["method"] == m) & (r["scope"] == b"layer")
      & (r["gpu"] == sys.argv[5].encode())]
ok = r[r["status"] == b"ok"]["seq_len"]
oom = r[r["status"] == b"oom"]["seq_len"]
pts = ([int(ok.max())] if len(ok) else []) + ([int(oom.min())] if len(oom) else [])
print(",".join(str(p) for p in pts))
PYEOF
)
      short=$SHORT_LIST long=$LONG_LIST
      [ -n "$extra" ] && long="$LONG_LIST,$extra"
      log "   cuda: $model $m (long lengths $long)"
      "${MPIRUN[@]}" -np "$C" "$CPB" sweep --backend cuda --model "$model" --method "$m" \
        --seq-list "$short" --warmup 1 --iters 3 --out "$CUDA_H5" >> "$LOGS/cuda-$model.log" 2>&1 \
        || note_fail "cuda sweep $model $m, short lengths (results/logs/cuda-$model.log)"
      # one step at these lengths takes seconds to minutes: one measured step
      "${MPIRUN[@]}" -np "$C" "$CPB" sweep --backend cuda --model "$model" --method "$m" \
        --seq-list "$long" --warmup 0 --iters 1 --out "$CUDA_H5" >> "$LOGS/cuda-$model.log" 2>&1 \
        || note_fail "cuda sweep $model $m, long lengths (results/logs/cuda-$model.log)"
    done
  done
  # every method ran in a sweep of its own: compare their fingerprints point by point
  log "   fingerprints of the methods on the GPUs (y, dx, dW norms agree within the dtype's bar)"
  "$CPB" fingerprints --results "$CUDA_H5" > "$LOGS/fingerprints-cuda.log" 2>&1 \
    || note_fail "methods disagree on the GPUs (results/logs/fingerprints-cuda.log)"
  tail -n 1 "$LOGS/fingerprints-cuda.log"
else
  log "3/4 no NVIDIA GPU found (nvidia-smi -L)${CPB_REPRODUCE_BACKEND:+ or CPB_REPRODUCE_BACKEND=$CPB_REPRODUCE_BACKEND}: every throughput and memory number below is a simulator prediction"
fi

# ---------------------------------------------------------------- 4. figures
FILES=("$SIM_H5")
[ -f "$CUDA_H5" ] && FILES+=("$CUDA_H5")
log "4/4 figures and tables -> $FIGS"
MPLBACKEND=Agg "$PY" "$ROOT/paper/make_figures.py" "${FILES[@]}" --out "$FIGS" --length 1M \
  > "$LOGS/figures.log" 2>&1 || note_fail "figures (results/logs/figures.log)"
tail -n 1 "$LOGS/figures.log"
log "   the seed papers' claims against our numbers -> $FIGS/claims.md"
"$PY" "$ROOT/paper/claims.py" "${FILES[@]}" --out "$FIGS/claims.md" > "$LOGS/claims.log" 2>&1 \
  || note_fail "claims (results/logs/claims.log)"
grep -E "^(claim|target): " "$LOGS/claims.log" || true
tail -n 1 "$LOGS/claims.log"
# predictions against published measurements from sources other than the seed papers, each
# row's own cpbench command on the simulator (paper/external.csv, docs/external.md); the
# ratios recorded before and after each modelled mechanism come from paper/external_history.csv
log "   cpbench against published measurements it was not tuned on -> $FIGS/external.md"
MPLBACKEND=Agg "$PY" "$ROOT/paper/external.py" --cpbench "$CPB" --out "$FIGS/external.md" \
  --history "$ROOT/paper/external_history.csv" > "$LOGS/external.log" 2>&1 \
  || note_fail "external report (results/logs/external.log)"
tail -n 1 "$LOGS/external.log"
log "   every row as a CSV for pandas -> $FIGS/results.csv"
"$PY" "$ROOT/paper/export_csv.py" "${FILES[@]}" --out "$FIGS/results.csv" > "$LOGS/export.log" 2>&1 \
  || note_fail "CSV export (results/logs/export.log)"

# ---------------------------------------------------------------- summary
echo
echo "================ cpbench reproduce: where each number comes from ================"
"$PY" - "${FILES[@]}" <<'PYEOF'
import sys, h5py
from collections import Counter
words = {"sim": "simulator PREDICTION (not measured)", "cuda": "MEASURED on GPUs", "cpu": "measured on CPUs"}
for f in sys.argv[1:]:
    r = h5py.File(f, "r")["runs"][:]
    c = Counter((x["backend"].decode(), x["scope"].decode(), x["status"].decode()) for x in r)
    print(f)
    for (b, s, st), n in sorted(c.items()):
        print("   %-5s %-6s %-8s %5d rows  %s" % (b, s, st, n, words.get(b, b)))
PYEOF
echo "CPU verification: results/logs/verify-cpu.log ($(grep -c -i "pass" "$LOGS/verify-cpu.log" 2>/dev/null || echo 0) lines say pass)"
echo "figures and tables: $FIGS (tables.md lists our numbers beside the paper's; claims.md each claim's verdict; results.csv every row, for pandas)"
echo "time: $(( $(date +%s) - T0 )) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "FAILED steps:"
  printf '   %s\n' "${FAILED[@]}"
  exit 1
fi
echo "all steps passed"
