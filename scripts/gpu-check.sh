#!/usr/bin/env bash
# gpu-check.sh — everything the cuda backend must pass on a real GPU, in one command that
# finishes within its budget (330 s) on one H200, so that a rerun still fits a 15-minute
# lease that includes the machine's start.  Runs on a bare, offline machine: it never
# installs anything or touches the network.
#
#   gpu-bundle/gpu-check.sh [--log-dir DIR] [--budget SECONDS] [--seq S] [--dry-run] [--rebuild]
#                           [--cpbench FILE]
#   scripts/gpu-check.sh ...             (uses gpu-bundle/ when it is there, else builds)
#
# The steps, in order of value (what runs out of time is skipped from the end; docs/cuda.md
# has the table of what each proves and its budget):
#   1. probe: GPUs, driver, compute capability, the cuBLAS/NCCL/cuDNN found and where, the
#      MPI, the toolchain; which cpbench runs (the bundle's; where it cannot start, or its
#      plugin does not load here, one built for this GPU's architecture from the carried
#      sources against the bundle's MPI/HDF5/BLAS, with every core); the plugin loads
#   2. the device's properties and the self-test, cuDNN attention included
#   3. bench-kernels at 16K, 32K and 64K tokens: cuDNN's and our attention, forward and
#      backward (the calibration file)
#   4. the cuDNN workspace every plan needed (CPB_CUDNN_WS_LOG) against the declared bound
#   5. verify of every method at head dim 128 in bf16, on --attn cudnn and on --attn own
#   6. one llama3-8b run per method (--seq S) beside the simulator's prediction of it
#   7. the 4-rank --comm mpi checks: verify on the cpu backend, the self-test, verify tiny
#      in bf16 and fp32; NCCL on every GPU where there are two or more
# The plan (each step's budget and timeout, and the total) is printed before step 2.  Exit
# 0 only when every step passed; 1 when one failed or was skipped for time; 2 when there is
# no GPU (without --dry-run).
#
# --dry-run: the same steps; those that need a GPU print what they would run instead.  It
#   fails when a step would run a method `cpbench list` does not know.  It proves a bundle
#   complete on a machine without a GPU (and times the rest).
# --rebuild: build cpbench here even when the bundled one starts.
# --cpbench FILE: run this cpbench, with the mpirun on PATH (the dry-run test of the build tree).
# --log-dir DIR (default results/logs/gpu-check): gpu-check.log (everything), summary.txt (the
#   tables), steps.tsv (one line a step, for scripts), probe.txt, device-props.txt,
#   prediction.txt, calibration-<gpu>.txt.
#
# cpbench is read through `cpbench list --format flat` (PATH<TAB>VALUE lines), never its text
# for people: awk reads it on a bare machine, where neither jq nor python3 can be counted on
# (the bundle's proof runs this in a Debian root with no Python at all).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -x "$HERE/bin/cpbench" ] && [ -d "$HERE/libexec" ]; then
  BUNDLE=$HERE SRC=$(cd "$HERE/.." && pwd)
else
  SRC=$(cd "$HERE/.." && pwd) BUNDLE="$SRC/gpu-bundle"
fi
[ -f "$SRC/CMakeLists.txt" ] && [ -d "$SRC/harness" ] || SRC=""
[ -x "$BUNDLE/bin/cpbench" ] || BUNDLE=""

BUDGET=330 SEQ=32768 DRY=0 REBUILD=0 LOGDIR="" GIVEN=""
usage() { sed -n '2,40p' "$0"; }
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "gpu-check: $1 needs a value" >&2; usage >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --log-dir) need_value "$@"; LOGDIR="$2"; shift 2 ;;
    --budget) need_value "$@"; BUDGET="$2"; shift 2 ;;
    --seq) need_value "$@"; SEQ="$2"; shift 2 ;;
    --cpbench) need_value "$@"; GIVEN="$2"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --rebuild) REBUILD=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown option '$1' (the options are below)" >&2; usage >&2; exit 2 ;;
  esac
done
case "$BUDGET" in ''|*[!0-9]*) echo "gpu-check: --budget '$BUDGET': expected whole seconds" >&2; exit 2 ;; esac
if [ -n "$GIVEN" ]; then
  [ -x "$GIVEN" ] || { echo "gpu-check: --cpbench '$GIVEN' is not an executable file" >&2; exit 2; }
  GIVEN=$(cd "$(dirname "$GIVEN")" && pwd)/$(basename "$GIVEN")
  [ "$REBUILD" = 0 ] || { echo "gpu-check: give --cpbench or --rebuild, not both" >&2; exit 2; }
fi
LOGDIR=${LOGDIR:-${SRC:-$PWD}/results/logs/gpu-check}
mkdir -p "$LOGDIR" || { echo "gpu-check: cannot create $LOGDIR" >&2; exit 2; }
LOGDIR=$(cd "$LOGDIR" && pwd)
LOG="$LOGDIR/gpu-check.log" SUMMARY_FILE="$LOGDIR/summary.txt" PROBE="$LOGDIR/probe.txt"
PROPS="$LOGDIR/device-props.txt" PRED="$LOGDIR/prediction.txt" STEPS="$LOGDIR/steps.tsv"
rm -f "$LOG" "$SUMMARY_FILE" "$PROBE" "$PROPS" "$PRED" "$STEPS" "$LOGDIR"/calibration-*.txt
: > "$LOG"
printf 'group\tstep\tstatus\tseconds\tbudget\ttimeout\tcommand\n' > "$STEPS"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
T0=$(date +%s)
SUMMARY=() FAILED=0 REFUSE_OK=0 GROUP=1 PASS=run PLAN=() KNOWN=""
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "$*"; echo "$*" >> "$LOG"; }
row() { # row NAME STATUS SECONDS NOTE [BUDGET TIMEOUT CMD...]: the summary and steps.tsv
  local name=$1 st=$2 sec=$3 note=$4 budget=${5:--} limit=${6:--}
  shift 4; [ $# -ge 2 ] && shift 2
  SUMMARY+=("$(printf '%-2s %-66s %-8s %5s  %s' "$GROUP" "$name" "$st" "$sec" "$note")")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$GROUP" "$name" "$st" "$sec" "$budget" "$limit" \
    "$([ $# -gt 0 ] && printf '%q ' "$@")" >> "$STEPS"
}

# ---------------------------------------------------------------- cpbench list, for scripts
# list_get PATH: the value at PATH of `cpbench list --format flat` (list_json.h)
list_get() { awk -F'\t' -v k="$1" '$1 == k { print $2; found = 1; exit } END { exit !found }' "$TMP/list.flat"; }
# the registry's methods, in order: methods.N.name
list_methods() { awk -F'\t' '$1 ~ /^methods\.[0-9]+\.name$/ { print $2 }' "$TMP/list.flat"; }
# the --method values of a command that `cpbench list` does not know, one a line
unknown_methods() {
  local prev="" a n
  for a in "$@"; do
    if [ "$prev" = --method ]; then
      IFS=, read -r -a names <<< "$a"
      for n in "${names[@]}"; do
        [ "$n" = all ] && [ "$a" = all ] && continue
        printf '%s\n' $KNOWN | grep -qxF -- "$n" || echo "$n"
      done
    fi
    prev=$a
  done
}

# ---------------------------------------------------------------- steps
# step NAME BUDGET TIMEOUT CMD...: run with the timeout clipped to the budget left, keep the
# output in the log and in $TMP/last.out; ok / FAIL / TIMEOUT / REFUSED / SKIP (no time
# left: a failure).  BUDGET is what the step is planned to take (the plan), TIMEOUT the most
# it may.  In the plan pass it is only recorded.
step() {
  local name="$1" budget="$2" limit="$3"; shift 3
  if [ "$PASS" = plan ]; then PLAN+=("$GROUP|$name|$budget|$limit"); return 1; fi
  local bad; bad=$(unknown_methods "$@" | tr '\n' ' ')
  if [ -n "$bad" ]; then
    : > "$TMP/last.out"
    row "$name" FAIL - "would run unknown method ${bad% } (cpbench list knows: $(echo $KNOWN))" "$budget" "$limit" "$@"
    FAILED=1
    say "[$(elapsed)s] $name: FAIL: it would run --method ${bad% }, which \`cpbench list\` does not know"
    return 1
  fi
  local left=$(( BUDGET - $(elapsed) ))
  if [ "$left" -lt 15 ]; then
    : > "$TMP/last.out"
    row "$name" SKIP - "out of time budget (${BUDGET}s)" "$budget" "$limit" "$@"; FAILED=1
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
  row "$name" "$st" "$dt" "$note" "$budget" "$limit" "$@"
  say "[$(elapsed)s] $name: $st (${dt}s of ${budget}s planned)"
  [ "$st" != ok ] && tail -15 "$TMP/last.out" | sed 's/^/    /'
  [ "$st" = ok ]
}
# a step that is not run, and why (not a failure: one GPU, a feature this build lacks)
na() {
  if [ "$PASS" = plan ]; then PLAN+=("$GROUP|$1|0|-"); return 0; fi
  row "$1" n/a - "$2"; say "[$(elapsed)s] $1: n/a ($2)"
}
# a GPU step: --dry-run prints what it would run (and refuses an unknown method) instead
gstep() {
  if [ "$DRY" = 0 ] || [ "$PASS" = plan ]; then step "$@"; return; fi
  local name="$1" budget="$2" limit="$3"; shift 3
  local bad; bad=$(unknown_methods "$@" | tr '\n' ' ')
  if [ -n "$bad" ]; then
    row "$name" FAIL - "would run unknown method ${bad% } (cpbench list knows: $(echo $KNOWN))" "$budget" "$limit" "$@"
    FAILED=1
    say "[$(elapsed)s] $name: FAIL: it would run --method ${bad% }, which \`cpbench list\` does not know"
    return 1
  fi
  local what="${*##*/}" # the command without folders; the note shows cpbench's part of it
  [[ "$what" == *"cpbench "* ]] && what="cpbench ${what#*cpbench }"
  row "$name" dry - "would run: $(echo "$what" | cut -c1-90)" "$budget" "$limit" "$@"
  say "[$(elapsed)s] $name: would run: $*"
  return 1 # nothing ran: nothing to keep
}
# a step of this script's own (a function, run here: no timeout of its own)
lstep() {
  local name="$1" budget="$2"; shift 2
  if [ "$PASS" = plan ]; then PLAN+=("$GROUP|$name|$budget|-"); return 1; fi
  local s; s=$(date +%s)
  echo "=== [$(elapsed)s] $name" >> "$LOG"
  "$@" > "$TMP/last.out" 2>&1
  local rc=$? st=ok dt
  cat "$TMP/last.out" >> "$LOG"
  dt=$(( $(date +%s) - s ))
  [ $rc -ne 0 ] && { st=FAIL; FAILED=1; }
  row "$name" "$st" "$dt" "$(tail -1 "$TMP/last.out" | cut -c1-70)" "$budget" -
  say "[$(elapsed)s] $name: $st (${dt}s of ${budget}s planned)"
  [ "$st" != ok ] && tail -15 "$TMP/last.out" | sed 's/^/    /'
  [ "$st" = ok ]
}
group() { GROUP=$1; [ "$PASS" = run ] && say "--- [$(elapsed)s] $1. $2"; return 0; }
# keep FILE: the last step's output, when it really ran on the GPU
keep() { [ "$PASS" = run ] && [ "$DRY" = 0 ] && cp "$TMP/last.out" "$1"; }

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
  echo "bundle: ${BUNDLE:-none}; sources: ${SRC:-none}${GIVEN:+; cpbench given: $GIVEN}"
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
  if [ -n "$BUNDLE" ] && [ -z "$GIVEN" ]; then
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
row probe ok "$(elapsed)" "$NGPU GPU(s)${GPU:+: $GPU}${CC:+, sm_$CC}" "5" -
# the bundle's wrappers find the CUDA libraries (bin/cuda-libs, which asks every python3
# for its site-packages) on each start unless CPB_CUDA_LIB_PATH is set: find them once here
# (about a second saved on each of the check's some thirty cpbench starts)
if [ -n "$BUNDLE" ] && [ -z "${CPB_CUDA_LIB_PATH+set}" ]; then
  CPB_CUDA_LIB_PATH=$("$BUNDLE/bin/cuda-libs" --path 2>/dev/null) || true
  export CPB_CUDA_LIB_PATH
fi

# ---------------------------------------------------------------- 1. which cpbench
CPB=() MPIRUN=()
use_bundle() { CPB=("$BUNDLE/bin/cpbench") MPIRUN=("$BUNDLE/bin/mpirun"); }
use_path_mpirun() {
  MPIRUN=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
}
# build_here: cpbench and its plugin for this GPU's architecture only (a dry run without a
# GPU: sm_90, the project's H200), with every core, from the carried sources, against the
# bundle's MPI, HDF5 and BLAS when there is a bundle, and the CUDA libraries and headers the
# finder found on this machine (cuda-libs --cmake: NCCL, cuDNN, the toolkit)
build_here() {
  local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ -z "$SRC" ] || ! command -v cmake >/dev/null 2>&1 || [ ! -x "$nvcc" ]; then
    row "build cpbench here" FAIL - "needs the sources, cmake and nvcc (sources: ${SRC:-none})"; FAILED=1
    return 1
  fi
  local build="$SRC/build-gpu" arch=${CC:-90} deps=() hints=()
  mkdir -p "$build" 2>/dev/null && [ -w "$build" ] || build="$TMP/build"
  [ -n "$BUNDLE" ] && deps=(-DCPB_BUNDLE_DEPS="$BUNDLE")
  [ -n "$CUDA_LIBS" ] && mapfile -t hints < <(bash "$CUDA_LIBS" --cmake 2>/dev/null)
  say "gpu-check: building cpbench for sm_$arch with $(nproc) cores in $build${hints[*]:+ (${hints[*]})}"
  step "configure (sm_$arch, no tests)" 20 90 cmake -S "$SRC" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCPB_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" "${deps[@]+"${deps[@]}"}" \
    "${hints[@]+"${hints[@]}"}" &&
  step "build cpbench and its cuda plugin (sm_$arch, $(nproc) cores)" 120 240 \
    cmake --build "$build" -j"$(nproc)" --target cpbench || return 1
  if [ -n "$BUNDLE" ]; then
    export CPB_BUNDLE_CPBENCH="$build/cpbench"; use_bundle
  else
    CPB=("$build/cpbench"); use_path_mpirun
  fi
}
if [ -n "$GIVEN" ]; then
  step "cpbench starts (cpbench list --format flat)" 2 30 "$GIVEN" list --format flat && { CPB=("$GIVEN"); use_path_mpirun; }
elif [ -n "$BUNDLE" ] && [ "$REBUILD" = 0 ] &&
     step "bundled cpbench starts (cpbench list --format flat)" 2 30 "$BUNDLE/bin/cpbench" list --format flat; then
  use_bundle
  # its plugin must load with this machine's cuBLAS and NCCL; where it does not (an NCCL
  # older than the one it was built with, another CUDA major), build one here against them
  cp "$TMP/last.out" "$TMP/list.flat"
  if [ "$DRY" = 0 ] && [ "$(list_get backends.cuda.present)" != true ]; then
    say "gpu-check: the bundled cuda plugin does not load here ($(list_get backends.cuda.description | cut -c1-200)); building cpbench here"
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
# (cpb_attn_cudnn_workspace_bytes), so the bound the simulator tracks gets measured (step 4)
export CPB_CUDNN_WS_LOG=1

# what this cpbench has: its methods, its cuda plugin and libraries, cuDNN attention
if ! "${CPB[@]}" list --format flat > "$TMP/list.flat" 2> "$TMP/list.err" || ! list_get schema > /dev/null; then
  cat "$TMP/list.flat" "$TMP/list.err" | tail -15
  echo "gpu-check: \`${CPB[*]} list --format flat\` failed; see above" >&2
  exit 1
fi
"${CPB[@]}" list >> "$LOG" 2>&1 # the same for people, in the log
KNOWN=$(list_methods)
CUDA_PRESENT=$(list_get backends.cuda.present) CUDA_DESC=$(list_get backends.cuda.description)
CUDNN_USABLE=$(list_get attention.cudnn.usable) CUDNN_WHY=$(list_get attention.cudnn.why)
say "cpbench: ${CPB[*]}${CPB_BUNDLE_CPBENCH:+ (running $CPB_BUNDLE_CPBENCH, built here)}"
say "  cuda: ${CUDA_DESC:-absent}"; say "  cuDNN attention: ${CUDNN_WHY:-unknown}"
if [ "$CUDA_PRESENT" = true ]; then
  row "cuda plugin and libraries load" ok - "$(echo "$CUDA_DESC" | grep -o 'cuBLAS from [^,;]*' | cut -c1-70)" 0 -
elif [ "$DRY" = 1 ]; then
  na "cuda plugin and libraries load" "not here: $(echo "${CUDA_DESC:-no cuda backend}" | cut -c1-60)"
else
  row "cuda plugin and libraries load" FAIL - "$(echo "${CUDA_DESC:-no cuda backend}" | cut -c1-70)" 0 -; FAILED=1
fi
if [ "$NGPU" -eq 0 ]; then
  # where there is no GPU the cuda backend must refuse cleanly: exit 2, a reason
  step "cuda backend refuses without a GPU (exit 2)" 2 30 bash -c \
    '"$@" run --backend cuda --method ulysses --model tiny --seq 64; rc=$?; [ $rc -eq 2 ] || { echo "exit $rc, expected 2"; exit 1; }' \
    _ "${CPB[@]}"
else
  na "cuda backend refuses without a GPU (exit 2)" "a GPU is present"
fi

# ---------------------------------------------------------------- what steps 2-7 run
METHODS=$(list_methods) # the per-method runs of step 6: the registry's methods
NP=$NGPU; [ "$NP" -gt 8 ] && NP=8; [ "$NP" -lt 1 ] && NP=1
PROFILE=""
case "$GPU" in
  *H200*) PROFILE=h200 ;; *H100*) PROFILE=h100-sxm ;; *A100*80GB*) PROFILE=a100-80g ;; *A100*) PROFILE=a100-40g ;;
esac
[ "$NGPU" -eq 0 ] && PROFILE=h200 # dry run: predict what the check would run on the project's H200
CALIB="$LOGDIR/calibration-$(echo "${GPU:-none}" | tr ' /' '__').txt"
D128=(--model tiny --head-dim 128 --seq 1024) # H 8, G 2, d 128: the tensor-core kernels (H*d != D)
# step 5's world: one rank per GPU over NCCL where there are two or more, else 4 ranks
# sharing the one GPU over MPI
if [ "$NGPU" -ge 2 ]; then V5=(-np "$NP") V5NAME="$NP ranks NCCL"; else V5=(-np 4) V5NAME="4 ranks on 1 GPU --comm mpi"; fi
[ "$NGPU" -ge 2 ] || V5COMM=(--comm mpi)
RUNARGS=(--model llama3-8b --seq "$SEQ" --warmup 1 --iters 3)

# the simulator's prediction of each run (published profile; and calibrated by bench-kernels
# when it ran), beside what was measured
parse() { # parse FILE: status peak reserved device-used (GiB) step (s) TFLOP/s
  [ -s "$1" ] || { echo "- - - - - -"; return; }
  awk 'function g(v, u) { return u == "B" ? v / 2^30 : u == "KiB" ? v / 2^20 : u == "MiB" ? v / 1024 : u == "TiB" ? v * 1024 : v }
       /^status:/ { st = $2 } /refuses this shape/ { st = "refused" } /^  peak / { pk = g($2, $3) } /^  reserved / { rs = g($2, $3) }
       /^  device used / { du = g($3, $4) } /^  step / { sp = $2 } /^  TFLOP\/s\/GPU/ { tf = $2 }
       END { printf "%s %s %s %s %s %s\n", st ? st : "-", pk != "" ? sprintf("%.2f", pk) : "-",
             rs != "" ? sprintf("%.2f", rs) : "-", du != "" ? sprintf("%.2f", du) : "-",
             sp != "" ? sprintf("%.4f", sp) : "-", tf != "" ? sprintf("%.0f", tf) : "-" }' "$1"
}
predict() {
  local npred=0 m
  {
    echo "prediction vs measurement: llama3-8b layer, S=$SEQ, $NP rank(s), $([ -n "$GPU" ] && echo "$GPU" || echo "no GPU (dry run)")"
    echo "sim = the simulator with the ${PROFILE:-(no profile for this GPU)} profile$([ -f "$CALIB" ] && echo "; cal = calibrated by $(basename "$CALIB")"); cuda = measured"
    echo "GiB: peak (tracked), reserved (pool high-water; = peak on sim), used (driver-level, cuda); step in s; TFLOP/s per GPU of the layer"
    printf '%-8s %-8s | %6s %6s %6s | %6s %6s %6s | %6s | %8s %8s %8s | %5s %5s %5s\n' method status peak:sim cal cuda \
      resv:sim cal cuda used step:sim cal cuda "TF:sim" cal cuda
    for m in $METHODS; do
      read -r sst spk srs _ ssp stf <<< "$( [ -n "$PROFILE" ] && timeout 60 "${CPB[@]}" run --backend sim --gpus "$NP" \
        --gpu "$PROFILE" --method "$m" --model llama3-8b --seq "$SEQ" > "$TMP/run-$m.sim" 2>&1; parse "$TMP/run-$m.sim")"
      read -r _ cpk crs _ csp ctf <<< "$( [ -f "$CALIB" ] && timeout 60 "${CPB[@]}" run --backend sim --gpus "$NP" \
        --gpu "${PROFILE:-h100-sxm}" --calibration "$CALIB" --method "$m" --model llama3-8b --seq "$SEQ" > "$TMP/run-$m.cal" 2>&1
        parse "$TMP/run-$m.cal")"
      read -r gst gpk grs gdu gsp gtf <<< "$(parse "$TMP/run-$m.cuda")"
      [ "$sst" = ok ] && npred=$((npred + 1))
      printf '%-8s %-8s | %6s %6s %6s | %6s %6s %6s | %6s | %8s %8s %8s | %5s %5s %5s\n' "$m" \
        "$([ "$DRY" = 1 ] && echo "$sst" || echo "$gst")" "$spk" "$cpk" "$gpk" "$srs" "$crs" "$grs" "$gdu" \
        "$ssp" "$csp" "$gsp" "$stf" "$ctf" "$gtf"
    done
    [ "$DRY" = 1 ] && echo "(dry run: nothing was measured; the cuda columns stay empty)"
  } > "$PRED"
  cat "$PRED"
  if [ -z "$PROFILE" ]; then echo "no simulator profile for ${GPU:-this GPU}: measured only"; return 0; fi
  [ "$npred" -gt 0 ] || { echo "no prediction came out (see $PRED)"; return 1; }
  echo "$npred of $(echo $METHODS | wc -w) methods predicted"
}

# the cuDNN workspace every new plan needed so far (the CPB_CUDNN_WS_LOG lines that
# backends/cuda/attn_cudnn.cpp writes: "cudnn workspace: ...: plan needs N bytes, declared
# bound M (P%)") against the bound declared for it.  A plan above its bound, no line at all
# (nothing measured) or a line this cannot read (its format moved: change WS_RE with it) fail.
WS_RE='^cudnn workspace: .*: plan needs [0-9]+ bytes, declared bound [0-9]+ '
ws_log() {
  local n unread
  n=$(grep -c "^cudnn workspace:" "$LOG")
  unread=$(grep "^cudnn workspace:" "$LOG" | grep -Ev "$WS_RE" | head -1)
  if [ "$n" -eq 0 ]; then
    echo "no 'cudnn workspace:' line in $LOG: cuDNN attention built no plan in steps 2-3 (see them)"
    return 1
  fi
  if [ -n "$unread" ]; then echo "cannot read this workspace line (WS_RE): $unread"; return 1; fi
  grep -E "$WS_RE" "$LOG" | sort -u | sed -E 's/.*plan needs ([0-9]+) bytes, declared bound ([0-9]+) .*/\1 \2/' |
    awk -v n="$n" '{ r = $2 > 0 ? $1 / $2 : ($1 > 0 ? 1e9 : 0); if (r > worst) worst = r; if ($1 > $2) over++; plans++ }
      END { printf "%d plans (%d lines): the largest needs %.1f%% of its bound; %d above it\n", plans, n, 100 * worst, over
            exit (over > 0) }'
}

# the steps 2-7, in order of value; called twice: PASS=plan records them (nothing runs),
# PASS=run runs them
run_steps() {
  local m
  group 2 "the device and the self-test (cuDNN attention included)"
  gstep "device properties (cudaDeviceProp)" 2 30 "${CPB[@]}" device-props && keep "$PROPS"
  gstep "selftest, 1 rank (cuDNN attention, copies over 2 GiB)" 35 120 "${CPB[@]}" selftest --backend cuda

  group 3 "kernel timings: cuDNN's and our attention, forward and backward"
  gstep "bench-kernels 16K..64K tokens, 5 iterations" 60 180 "${CPB[@]}" bench-kernels \
    --seq-start 16384 --seq-stop 65536 --iters 5 --out "$CALIB"

  group 4 "cuDNN attention's workspace against its declared bound"
  if [ "$CUDNN_USABLE" != true ]; then na "cuDNN workspace log against the bound" "cuDNN attention: ${CUDNN_WHY:-unknown}"
  elif [ "$DRY" = 1 ]; then na "cuDNN workspace log against the bound" "dry run: no plan was built"
  else lstep "cuDNN workspace log against the bound" 1 ws_log
  fi

  group 5 "every method end to end at head dim 128, bf16, on both attention implementations"
  if [ "$CUDNN_USABLE" = true ]; then
    gstep "verify all, $V5NAME, bf16 d=128, --attn cudnn" 25 90 "${MPIRUN[@]}" "${V5[@]}" "${CPB[@]}" verify \
      --backend cuda "${V5COMM[@]+"${V5COMM[@]}"}" --method all "${D128[@]}" --dtype bf16 --attn cudnn
  else
    na "verify all, $V5NAME, bf16 d=128, --attn cudnn" "cuDNN attention: ${CUDNN_WHY:-unknown}"
  fi
  gstep "verify all, $V5NAME, bf16 d=128, --attn own" 25 90 "${MPIRUN[@]}" "${V5[@]}" "${CPB[@]}" verify \
    --backend cuda "${V5COMM[@]+"${V5COMM[@]}"}" --method all "${D128[@]}" --dtype bf16 --attn own

  group 6 "one run per method, predicted vs measured"
  REFUSE_OK=1
  for m in $METHODS; do
    gstep "run $m llama3-8b S=$SEQ on $NP GPU(s)" 7 45 "${MPIRUN[@]}" -np "$NP" "${CPB[@]}" run --backend cuda \
      --method "$m" "${RUNARGS[@]}" && keep "$TMP/run-$m.cuda"
  done
  REFUSE_OK=0
  lstep "simulator predictions of the runs" 5 predict

  group 7 "the 4-rank checks over MPI, and NCCL"
  step "verify all, cpu backend, 4 ranks, tiny S=192" 5 60 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify --backend cpu \
    --method all --model tiny --seq 192
  gstep "selftest, 4 ranks on 1 GPU --comm mpi" 30 150 "${MPIRUN[@]}" -np 4 "${CPB[@]}" selftest --backend cuda --comm mpi
  gstep "verify all, 4 ranks on 1 GPU --comm mpi, bf16 tiny" 15 90 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify \
    --backend cuda --comm mpi --method all --model tiny --seq 256 --dtype bf16
  gstep "verify all, 4 ranks on 1 GPU --comm mpi, fp32 tiny" 15 90 "${MPIRUN[@]}" -np 4 "${CPB[@]}" verify \
    --backend cuda --comm mpi --method all --model tiny --seq 256 --dtype fp32
  if [ "$NGPU" -ge 2 ]; then
    gstep "selftest, $NGPU ranks, NCCL" 20 90 "${MPIRUN[@]}" -np "$NGPU" "${CPB[@]}" selftest --backend cuda
    gstep "verify all, $NGPU ranks NCCL, bf16 tiny" 15 90 "${MPIRUN[@]}" -np "$NGPU" "${CPB[@]}" verify --backend cuda \
      --method all --model tiny --seq 512 --dtype bf16
  else
    na "selftest and verify over NCCL" "$NGPU GPU(s): NCCL needs two or more, one per rank"
  fi
}

# ---------------------------------------------------------------- the plan, then the steps
PASS=plan; run_steps; PASS=run
{
  echo "gpu-check plan: steps in order of value; a step that no longer fits the ${BUDGET}s budget is skipped (a failure)"
  printf '  %-2s %-66s %7s %7s\n' "" "step" "budget" "timeout"
  printf '  %-2s %-66s %6ss %7s\n' 1 "probe, cpbench, its plugin (done)" "$(elapsed)" -
  total=$(elapsed)
  for p in "${PLAN[@]}"; do
    IFS='|' read -r g n b l <<< "$p"
    printf '  %-2s %-66s %6ss %7s\n' "$g" "$n" "$b" "$([ "$l" = - ] && echo - || echo "${l}s")"
    total=$((total + b))
  done
  echo "  total: ${total}s planned of the ${BUDGET}s budget$([ "$DRY" = 1 ] && echo ' (a GPU run; this dry run runs only the steps without the GPU)')"
} | tee -a "$LOG"
run_steps

# ---------------------------------------------------------------- summary
{
  echo "gpu-check summary: ${NGPU} x ${GPU:-no GPU}${CC:+ (sm_$CC)}, driver ${DRIVER:-none}, $(elapsed)s of ${BUDGET}s$([ "$DRY" = 1 ] && echo ', dry run')"
  echo "cpbench: ${CPB[*]}${CPB_BUNDLE_CPBENCH:+ (running $CPB_BUNDLE_CPBENCH, built here)}"
  printf '%-2s %-66s %-8s %5s  %s\n' "" step status sec note
  printf '%s\n' "${SUMMARY[@]}"
  echo
  [ -f "$PRED" ] && cat "$PRED"
  if [ -f "$CALIB" ]; then echo; echo "calibration ($CALIB):"; grep -v '^#' "$CALIB"; fi
  if grep -Eq "$WS_RE" "$LOG"; then
    echo; echo "cuDNN attention plans closest to their declared workspace bound (every plan: $LOG):"
    grep -E "$WS_RE" "$LOG" | sort -u | awk '{p=$NF; gsub(/[()%]/, "", p); print p "\t" $0}' \
      | sort -rn | head -5 | cut -f2-
  fi
  echo
  echo "result: $([ "$FAILED" = 0 ] && echo 'every step passed' || echo 'FAILED (a step failed or was skipped for time)')"
} > "$SUMMARY_FILE"
echo; cat "$SUMMARY_FILE" | tee -a "$LOG"
exit $FAILED
