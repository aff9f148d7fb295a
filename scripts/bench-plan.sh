#!/usr/bin/env bash
# bench-plan.sh [BUILDDIR] — what `make bench-plan` runs: the speed targets of `cpbench plan`
# and of the simulator at scale, measured as a benchmark (wall-clock targets are never
# checked by tests: a loaded machine would make a test flaky, a benchmark just reports it).
#
#   plan llama3-8b, 8 GPUs, 4M tokens, whole model            target: under 10 s
#   plan llama3-8b, 8 GPUs, longest context, whole model      (reported)
#   plan llama3-8b, 1,024 GPUs, 128M tokens, whole model      target: under 60 s
#   run --backend sim, usp on 1,024 GPUs at 128M, one layer   target: seconds (under 10 s)
#
# Prints wall time, CPU time and peak memory of each, and exits 1 when a target is missed.
# The targets are for the project's 2-core machine; BENCH_NICE=0 runs without `nice`.
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
CPB="$BUILD/cpbench"
[ -x "$CPB" ] || { echo "bench-plan: no $CPB: build first (make build)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "bench-plan: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
missed=0

# bench NAME TARGET_S -- CMD...: one timed run (TARGET_S 0: reported only)
bench() {
  local name=$1 target=$2
  shift 3
  /usr/bin/time -f "%e %U %M" -o "$OUT/t" "$@" > "$OUT/out" 2> "$OUT/err"
  local rc=$? wall user rss verdict
  read -r wall user rss < <(tail -1 "$OUT/t")
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    verdict="FAILED (exit $rc: $(tail -1 "$OUT/err"))"
    missed=1
  elif [ "$target" = 0 ]; then
    verdict="(no target)"
  elif awk -v w="$wall" -v t="$target" 'BEGIN { exit !(w < t) }'; then
    verdict="ok (target < ${target} s)"
  else
    verdict="MISSED (target < ${target} s)"
    missed=1
  fi
  printf '%-58s %7.2f s wall %7.2f s cpu %6d MiB  %s\n' "$name" "$wall" "$user" $((rss / 1024)) "$verdict"
  local line
  line=$(grep -m1 -E "^#   [0-9]+ candidates of" "$OUT/out" || true)
  [ -n "$line" ] && echo "    ${line#\#   }"
  line=$(grep -m1 -E "^Recommendation|^Nothing fits|^status:" "$OUT/out" || true)
  [ -n "$line" ] && echo "    $line"
}

NICE=()
[ "${BENCH_NICE:-1}" = 0 ] || NICE=(nice -n 10)
echo "bench-plan: $CPB on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
bench "plan llama3-8b 8 GPUs 4M (model)" 10 -- "${NICE[@]}" "$CPB" plan --model llama3-8b --gpus 8 --seq 4M
bench "plan llama3-8b 8 GPUs --max-context (model)" 0 -- "${NICE[@]}" "$CPB" plan --model llama3-8b --gpus 8 --max-context
bench "plan llama3-8b 1024 GPUs 128M (model)" 60 -- "${NICE[@]}" "$CPB" plan --model llama3-8b --gpus 1024 --seq 128M
bench "run --backend sim usp 1024 GPUs 128M (layer)" 10 -- "${NICE[@]}" "$CPB" run --backend sim --method usp \
  --model llama3-8b --gpus 1024 --seq 128M
[ "$missed" -eq 0 ] && echo "bench-plan: every target met" || echo "bench-plan: a target was missed or a run failed"
exit "$missed"
