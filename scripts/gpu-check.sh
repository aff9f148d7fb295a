#!/usr/bin/env bash
# gpu-check.sh — everything the cuda backend must pass on a real GPU, in one command that
# finishes within 6 minutes on one H200 (a rerun then fits in a 15-minute lease).  Runs on a
# bare, offline machine: it never installs anything or touches the network.
#
#   gpu-bundle/gpu-check.sh [--log-dir DIR] [--budget SECONDS] [--seq S] [--dry-run] [--rebuild]
#   scripts/gpu-check.sh ...             (uses gpu-bundle/ when it is there, else builds)
#
# 1. probe: GPUs, driver, compute capability, the cuBLAS/NCCL/cuDNN found and where, the MPI,
#    the toolchain; which cpbench runs (the bundle's; where it cannot start, or its plugin
#    does not load with this machine's cuBLAS/NCCL, a build for this GPU from the carried
#    sources against the bundle's MPI/HDF5/BLAS, within the same budget)
# 2. the device's properties (cudaDeviceProp), the self-test (every op against the cpu
#    backend, incl. a copy over 2 GiB), verify of every method with 4 ranks on one GPU
#    (--comm mpi): bf16 at head dim 128 (the tensor-core kernels), tiny in bf16 and fp32
# 3. one mid-size run per method (llama3-8b, --seq S) with the memory high-waters and the
#    layer's TFLOP/s beside the simulator's prediction of the same run, bench-kernels (a
#    calibration file, both attention implementations), the self-test with 4 ranks, the cuDNN attention steps when cuDNN
#    attention exists, NCCL steps on every GPU when there are two or more
# Every step has a timeout inside the budget (default 330 s); a step that no longer fits is
# reported as skipped.  Exit 0 only when every step passed; 1 when one failed or was skipped
# for time; 2 when there is no GPU (without --dry-run).
#
# --dry-run: everything but the GPU steps — probe, library resolution, the cpu-backend verify
#   with 4 ranks, the cuda backend's refusal where there is no GPU, the predictions — to prove
#   a bundle complete on a machine without a GPU.
# --log-dir DIR (default results/logs/gpu-check): gpu-check.log (everything), summary.txt (the
#   tables), probe.txt, device-props.txt, prediction.txt, calibration-<gpu>.txt.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -x "$HERE/bin/cpbench" ] && [ -d "$HERE/libexec" ]; then
  BUNDLE=$HERE SRC=$(cd "$HERE/.." && pwd)
else
  SRC=$(cd "$HERE/.." && pwd) BUNDLE="$SRC/gpu-bundle"
fi
[ -f "$SRC/CMakeLists.txt" ] && [ -d "$SRC/harness" ] || SRC=""
[ -x "$BUNDLE/bin/cpbench" ] || BUNDLE=""

BUDGET=330 SEQ=32768 DRY=0 REBUILD=0 LOGDIR=""
usage() { sed -n '2,29p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --log-dir) LOGDIR="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    --seq) SEQ="$2"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --rebuild) REBUILD=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
LOGDIR=${LOGDIR:-${SRC:-$PWD}/results/logs/gpu-check}
mkdir -p "$LOGDIR" || { echo "gpu-check: cannot create $LOGDIR" >&2; exit 2; }
LOGDIR=$(cd "$LOGDIR" && pwd)
LOG="$LOGDIR/gpu-check.log" SUMMARY_FILE="$LOGDIR/summary.txt" PROBE="$LOGDIR/probe.txt"
PROPS="$LOGDIR/device-props.txt" PRED="$LOGDIR/prediction.txt"
rm -f "$LOG" "$SUMMARY_FILE" "$PROBE" "$PROPS" "$PRED" "$LOGDIR"/calibration-*.txt
: > "$LOG"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
T0=$(date +%s)
SUMMARY=() FAILED=0 REFUSE_OK=0
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "$*"; echo "$*" >> "$LOG"; }
row() { SUMMARY+=("$(printf '%-52s %-8s %5s  %s' "$1" "$2" "$3" "$4")"); }

# step NAME TIMEOUT CMD...: run with a timeout clipped to the budget left, keep the output in
# the log and in $TMP/last.out; ok / FAIL / TIMEOUT / REFUSED / SKIP (no time left: a failure)
step() {
  local name="$1" limit="$2"; shift 2
  local left=$(( BUDGET - $(elapsed) ))
  if [ "$left" -lt 15 ]; then
    : > "$TMP/last.out"
    row "$name" SKIP - "out of time budget (${BUDGET}s)"; FAILED=1
    say "[$(elapsed)s] $name: SKIP (out of time)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local s; s=$(date +%s)
  : > "$TMP/last.out"
  echo "=== [$(elapsed)s] $name: $*" >> "$LOG"
  timeout --signal=TERM --kill-after=5 "$limit" "$@" > "$TMP/last.out" 2>&1
  local rc=$? st=ok note
  cat "$TMP/last.out" >> "$LOG"
  local dt=$(( $(date +%s) - s ))
  note=$(grep -E "passed|failed|FAIL|ERROR|error|TFLOP/s|refuse|cannot|no GPU|no CUDA" "$TMP/last.out" | tail -1 | cut -c1-70)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then st=TIMEOUT; FAILED=1
  elif [ $rc -le 2 ] && [ "$REFUSE_OK" = 1 ] && grep -Eq "^status: (refused|skipped)|refuses this shape" "$TMP/last.out"; then
    st=REFUSED # the method refuses this shape: a result, not a failure
  elif [ $rc -ne 0 ]; then st=FAIL; FAILED=1
  fi
  row "$name" "$st" "$dt" "$note"
  say "[$(elapsed)s] $name: $st (${dt}s)"
  [ "$st" != ok ] && tail -15 "$TMP/last.out" | sed 's/^/    /'
  [ "$st" = ok ]
}
# a step that is not run, and why (not a failure: dry run, one GPU, a feature not built yet)
na() { row "$1" n/a - "$2"; say "[$(elapsed)s] $1: n/a ($2)"; }
# a GPU step: not run by --dry-run
gstep() { if [ "$DRY" = 1 ]; then na "$1" "dry run"; return 0; fi; step "$@"; }

# ---------------------------------------------------------------- 1. probe
NGPU=0 GPU="" CC="" DRIVER=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  NGPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
fi
CUDA_LIBS=""
[ -n "$BUNDLE" ] && CUDA_LIBS="$BUNDLE/bin/cuda-libs"
[ -z "$CUDA_LIBS" ] && [ -n "$SRC" ] && CUDA_LIBS="$SRC/scripts/cuda-libs.sh"
{
  echo "gpu-check probe, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), kernel $(uname -r)"
  echo "mode: $([ "$DRY" = 1 ] && echo 'dry run (no GPU step)' || echo 'full'), budget ${BUDGET}s, log dir $LOGDIR"
  echo "bundle: ${BUNDLE:-none}; sources: ${SRC:-none}"
  [ -n "$BUNDLE" ] && [ -f "$BUNDLE/MANIFEST.txt" ] && sed -n '1,5p' "$BUNDLE/MANIFEST.txt" | sed 's/^/  /'
  echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown); CPUs: $(nproc); memory: $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  if [ "$NGPU" -gt 0 ]; then
    echo "GPUs: $NGPU; driver $DRIVER"
    nvidia-smi --query-gpu=index,name,compute_cap,memory.total,pci.bus_id --format=csv,noheader | sed 's/^/  /'
  else
    echo "GPUs: none ($(command -v nvidia-smi >/dev/null 2>&1 && echo 'nvidia-smi lists none' || echo 'nvidia-smi not found'); /dev/nvidia*: $(ls /dev/nvidia* 2>/dev/null | tr '\n' ' ' || true))"
  fi
  echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}${SLURM_JOB_ID:+; SLURM job $SLURM_JOB_ID, ${SLURM_GPUS_ON_NODE:-?} GPUs on node, ${SLURM_NTASKS:-?} tasks}"
  echo "NVIDIA libraries ($CUDA_LIBS):"
  if [ -n "$CUDA_LIBS" ]; then CPB_CUDA_LIBS_VERBOSE=1 bash "$CUDA_LIBS" 2>&1 | sed 's/^/  /'; else echo "  (no finder)"; fi
  if [ -n "$BUNDLE" ]; then
    echo "MPI: the bundle's, $("$BUNDLE/mpi/bin/ompi_info" --version 2>/dev/null | head -1 || echo '(ompi_info failed)')"
  else
    echo "MPI: $(command -v mpirun || echo 'no mpirun') $(mpirun --version 2>/dev/null | head -1)"
  fi
  echo "nvcc: $(command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -1 || { [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -1; } || echo 'not found')"
  echo "cmake: $(cmake --version 2>/dev/null | head -1 || echo 'not found')"
} > "$PROBE" 2>&1
cat "$PROBE" | tee -a "$LOG"
if [ "$NGPU" -eq 0 ] && [ "$DRY" = 0 ]; then
  echo "gpu-check: no NVIDIA GPU or driver here (probe above); nothing on the GPU was tested. --dry-run checks the rest." >&2
  exit 2
fi

# ---------------------------------------------------------------- which cpbench
CPB=() MPIRUN=()
use_bundle() { CPB=("$BUNDLE/bin/cpbench") MPIRUN=("$BUNDLE/bin/mpirun"); }
# build_here: cpbench and its plugin for this GPU's architecture from the carried sources,
# against the bundle's MPI, HDF5 and BLAS when there is a bundle, and the cuBLAS/NCCL the
# finder found on this machine (in the same call, inside the budget)
build_here() {
  local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ -z "$SRC" ] || ! command -v cmake >/dev/null 2>&1 || [ ! -x "$nvcc" ]; then
    row "build cpbench here" FAIL - "needs the sources, cmake and nvcc (sources: ${SRC:-none})"; FAILED=1
    return 1
  fi
  local build="$SRC/build-gpu" arch=${CC:-80;90} deps=() hints=()
  mkdir -p "$build" 2>/dev/null && [ -w "$build" ] || build="$TMP/build"
  [ -n "$BUNDLE" ] && deps=(-DCPB_BUNDLE_DEPS="$BUNDLE")
  [ -n "$CUDA_LIBS" ] && read -r -a hints <<< "$(bash "$CUDA_LIBS" --cmake 2>/dev/null)"
  step "configure (sm_${arch//;/, sm_}, no tests)" 90 cmake -S "$SRC" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCPB_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" "${deps[@]+"${deps[@]}"}" \
    "${hints[@]+"${hints[@]}"}" &&
  step "build cpbench and its cuda plugin" 240 cmake --build "$build" -j"$(nproc)" --target cpbench || return 1
  if [ -n "$BUNDLE" ]; then
    export CPB_BUNDLE_CPBENCH="$build/cpbench"; use_bundle
  else
    CPB=("$build/cpbench") MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  fi
}
if [ -n "$BUNDLE" ] && [ "$REBUILD" = 0 ] && step "bundled cpbench starts (cpbench list)" 30 "$BUNDLE/bin/cpbench" list; then
  use_bundle
  # its plugin must load with this machine's cuBLAS and NCCL; where it does not (an NCCL
  # older than the one it was built with, another CUDA major), build one here against them
  if [ "$DRY" = 0 ] && ! grep -Eq "^  cuda .*plugin .* loaded" "$TMP/last.out"; then
    say "gpu-check: the bundled cuda plugin does not load here ($(grep -E '^  cuda ' "$TMP/last.out" | cut -c8-200)); building cpbench here"
    build_here
  fi
else
  build_here
fi
if [ ${#CPB[@]} -eq 0 ]; then
  printf '%s\n' "${SUMMARY[@]}"
  echo "gpu-check: no cpbench that starts here; see $LOG" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# every new cuDNN attention plan logs the workspace it needs against the declared bound
# (cpb_attn_cudnn_workspace_bytes), so the bound the simulator tracks gets measured
export CPB_CUDNN_WS_LOG=1

# library resolution: the plugin loads, with the cuBLAS/NCCL it names
"${CPB[@]}" list > "$TMP/list.txt" 2>&1
CUDA_LINE=$(grep -E '^  cuda ' "$TMP/list.txt")
say "cpbench: ${CPB[*]}${CPB_BUNDLE_CPBENCH:+ (running $CPB_BUNDLE_CPBENCH, built here)}"; say "$CUDA_LINE"
if echo "$CUDA_LINE" | grep -q "plugin .* loaded"; then
  row "cuda plugin and libraries load" ok - "$(echo "$CUDA_LINE" | grep -o 'cuBLAS from [^,]*' | cut -c1-70)"
elif [ "$DRY" = 1 ]; then
  na "cuda plugin and libraries load" "not here: $(echo "$CUDA_LINE" | grep -oE '(cuBLAS|cuBLASLt|NCCL)[^ ]* libc[a-zA-Z]*\.so\.[0-9]+|lib[a-zA-Z]+\.so\.[0-9]+ \(needed' | head -1)"
else
  row "cuda plugin and libraries load" FAIL - "$(echo "$CUDA_LINE" | cut -c8-77)"; FAILED=1
fi

# ---------------------------------------------------------------- 2. correctness
step "verify all, cpu backend, 4 ranks, tiny S=192" 90 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify --backend cpu \
  --method all --model tiny --seq 192
if [ "$NGPU" -eq 0 ]; then
  # where there is no GPU the cuda backend must refuse cleanly: exit 2, a reason
  step "cuda backend refuses without a GPU (exit 2)" 30 bash -c \
    '"$@" run --backend cuda --method ulysses --model tiny --seq 64; rc=$?; [ $rc -eq 2 ] || { echo "exit $rc, expected 2"; exit 1; }' \
    _ "${CPB[@]}"
fi
gstep "device properties (cudaDeviceProp)" 30 "${CPB[@]}" device-props
[ "$DRY" = 0 ] && cp "$TMP/last.out" "$PROPS"
gstep "selftest, 1 rank (incl. a copy over 2 GiB)" 120 "${CPB[@]}" selftest --backend cuda
D128=(--model tiny --head-dim 128 --seq 1024) # H 8, G 2, d 128: the tensor-core kernels (H*d != D)
gstep "verify all, 4 ranks on 1 GPU --comm mpi, bf16 d=128, --attn own" 120 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify \
  --backend cuda --comm mpi --method all "${D128[@]}" --dtype bf16 --attn own
gstep "verify all, 4 ranks on 1 GPU --comm mpi, bf16 tiny" 90 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify \
  --backend cuda --comm mpi --method all --model tiny --seq 256 --dtype bf16
gstep "verify all, 4 ranks on 1 GPU --comm mpi, fp32 tiny" 90 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify \
  --backend cuda --comm mpi --method all --model tiny --seq 256 --dtype fp32

# ---------------------------------------------------------------- 3. measurements and predictions
METHODS=$(awk '/^Methods:/{m=1;next} /^$/{m=0} m && NF {print $1}' "$TMP/list.txt" | grep -v '^(none')
NP=$NGPU; [ "$NP" -gt 8 ] && NP=8; [ "$NP" -lt 1 ] && NP=1
PROFILE=""
case "$GPU" in
  *H200*) PROFILE=h200 ;; *H100*) PROFILE=h100-sxm ;; *A100*80GB*) PROFILE=a100-80g ;; *A100*) PROFILE=a100-40g ;;
esac
[ "$NGPU" -eq 0 ] && PROFILE=h200 # dry run: predict what the check would run on the project's H200
RUNARGS=(--model llama3-8b --seq "$SEQ" --warmup 1 --iters 3)
REFUSE_OK=1
for m in $METHODS; do
  gstep "run $m llama3-8b S=$SEQ on $NP GPU(s)" 60 "${MPIRUN[@]}" -np "$NP" "${CPB[@]}" run --backend cuda \
    --method "$m" "${RUNARGS[@]}"
  [ "$DRY" = 0 ] && cp "$TMP/last.out" "$TMP/run-$m.cuda"
done
REFUSE_OK=0
CALIB="$LOGDIR/calibration-$(echo "${GPU:-none}" | tr ' /' '__').txt"
gstep "bench-kernels (4K..16K)" 120 "${CPB[@]}" bench-kernels --seq-start 4096 --seq-stop 16384 --iters 2 --out "$CALIB"
gstep "selftest, 4 ranks on 1 GPU --comm mpi" 150 "${MPIRUN[@]}" -np 4 "${CPB[@]}" selftest --backend cuda --comm mpi
# cuDNN attention (when cpbench has it: `cpbench list` says "attention: cudnn (compiled in; cuDNN ...")":
# the selftest above already compared its call classes with the cpu backend and bench-kernels
# measured both implementations; here every method end to end on it
if grep -q "^attention: cudnn (compiled in; cuDNN" "$TMP/list.txt"; then
  gstep "verify all, 4 ranks on 1 GPU --comm mpi, bf16 d=128, --attn cudnn" 120 "${MPIRUN[@]}" -np 4 "${CPB[@]}" \
    verify --backend cuda --comm mpi --method all "${D128[@]}" --dtype bf16 --attn cudnn
else
  na "verify all, --attn cudnn" "$(grep '^attention:' "$TMP/list.txt" || echo 'no attention line in cpbench list')"
fi
if [ "$NGPU" -ge 2 ]; then
  gstep "selftest, $NGPU ranks, NCCL" 90 "${MPIRUN[@]}" -np "$NGPU" "${CPB[@]}" selftest --backend cuda
  gstep "verify all, $NGPU ranks NCCL, bf16" 90 "${MPIRUN[@]}" -np "$NGPU" "${CPB[@]}" verify --backend cuda \
    --method all --model tiny --seq 512 --dtype bf16
else
  na "selftest and verify over NCCL" "$NGPU GPU(s): NCCL needs two or more, one per rank"
fi

# the simulator's prediction of each run (published profile; and calibrated by bench-kernels
# when it ran), beside what was measured
parse() { # parse FILE: status peak reserved device-used (GiB) step (ms) TFLOP/s
  [ -s "$1" ] || { echo "- - - - - -"; return; }
  awk 'function g(v, u) { return u == "B" ? v / 2^30 : u == "KiB" ? v / 2^20 : u == "MiB" ? v / 1024 : u == "TiB" ? v * 1024 : v }
       /^status:/ { st = $2 } /refuses this shape/ { st = "refused" } /^  peak / { pk = g($2, $3) } /^  reserved / { rs = g($2, $3) }
       /^  device used / { du = g($3, $4) } /^  step / { sp = $2 } /^  TFLOP\/s\/GPU/ { tf = $2 }
       END { printf "%s %s %s %s %s %s\n", st ? st : "-", pk != "" ? sprintf("%.2f", pk) : "-",
             rs != "" ? sprintf("%.2f", rs) : "-", du != "" ? sprintf("%.2f", du) : "-",
             sp != "" ? sprintf("%.1f", sp) : "-", tf != "" ? sprintf("%.0f", tf) : "-" }' "$1"
}
NPRED=0
{
  echo "prediction vs measurement: llama3-8b layer, S=$SEQ, $NP rank(s), $([ -n "$GPU" ] && echo "$GPU" || echo "no GPU (dry run)")"
  echo "sim = the simulator with the ${PROFILE:-(no profile for this GPU)} profile$([ -f "$CALIB" ] && echo "; cal = calibrated by $(basename "$CALIB")"); cuda = measured"
  echo "GiB: peak (tracked), reserved (pool high-water; = peak on sim), used (driver-level, cuda); step in ms; TFLOP/s per GPU of the layer"
  printf '%-8s %-8s | %6s %6s %6s | %6s %6s %6s | %6s | %8s %8s %8s | %5s %5s %5s\n' method status peak:sim cal cuda \
    resv:sim cal cuda used step:sim cal cuda "TF:sim" cal cuda
  for m in $METHODS; do
    read -r sst spk srs _ ssp stf <<< "$( [ -n "$PROFILE" ] && "${CPB[@]}" run --backend sim --gpus "$NP" --gpu "$PROFILE" \
      --method "$m" --model llama3-8b --seq "$SEQ" > "$TMP/run-$m.sim" 2>&1; parse "$TMP/run-$m.sim")"
    read -r _ cpk crs _ csp ctf <<< "$( [ -f "$CALIB" ] && "${CPB[@]}" run --backend sim --gpus "$NP" --gpu "${PROFILE:-h100-sxm}" \
      --calibration "$CALIB" --method "$m" --model llama3-8b --seq "$SEQ" > "$TMP/run-$m.cal" 2>&1; parse "$TMP/run-$m.cal")"
    read -r gst gpk grs gdu gsp gtf <<< "$(parse "$TMP/run-$m.cuda")"
    [ "$sst" = ok ] && NPRED=$((NPRED + 1))
    printf '%-8s %-8s | %6s %6s %6s | %6s %6s %6s | %6s | %8s %8s %8s | %5s %5s %5s\n' "$m" \
      "$([ "$DRY" = 1 ] && echo "$sst" || echo "$gst")" "$spk" "$cpk" "$gpk" "$srs" "$crs" "$grs" "$gdu" \
      "$ssp" "$csp" "$gsp" "$stf" "$ctf" "$gtf"
  done
  [ "$DRY" = 1 ] && echo "(dry run: nothing was measured; the cuda columns stay empty)"
} > "$PRED"
if [ -n "$PROFILE" ] && [ "$NPRED" -eq 0 ]; then
  row "simulator predictions of the runs" FAIL - "no prediction came out (see $PRED)"; FAILED=1
fi

# ---------------------------------------------------------------- summary
{
  echo "gpu-check summary: ${NGPU} x ${GPU:-no GPU}${CC:+ (sm_$CC)}, driver ${DRIVER:-none}, $(elapsed)s of ${BUDGET}s$([ "$DRY" = 1 ] && echo ', dry run')"
  echo "cpbench: ${CPB[*]}${CPB_BUNDLE_CPBENCH:+ (running $CPB_BUNDLE_CPBENCH, built here)}"
  printf '%-52s %-8s %5s  %s\n' step status sec note
  printf '%s\n' "${SUMMARY[@]}"
  echo
  cat "$PRED"
  if [ -f "$CALIB" ]; then echo; echo "calibration ($CALIB):"; grep -v '^#' "$CALIB"; fi
  if grep -q "^cudnn workspace:" "$LOG"; then
    echo; echo "cuDNN attention plans closest to their declared workspace bound (every plan: $LOG):"
    grep "^cudnn workspace:" "$LOG" | sort -u | awk '{p=$NF; gsub(/[()%]/, "", p); print p "\t" $0}' \
      | sort -rn | head -5 | cut -f2-
  fi
  echo
  echo "result: $([ "$FAILED" = 0 ] && echo 'every step passed' || echo 'FAILED (a step failed or was skipped for time)')"
} > "$SUMMARY_FILE"
echo; cat "$SUMMARY_FILE" | tee -a "$LOG"
exit $FAILED
