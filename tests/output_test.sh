#!/usr/bin/env bash
# output_test.sh CPBENCH WORKDIR — what a person reads (issue 25 §2): an OOM `run` (layer and
# model scope) and OOM/refused sweep rows print no step time or throughput; times are in
# seconds (no "ms" anywhere in run, sweep or plan output); every header names its scope;
# `cpbench CMD --help` lists that command's options only and states its default scope.
# Run by ctest (tests/mpi/harness.cmake); all on the simulator, a few seconds.
set -euo pipefail
CPB=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
fail() { echo "output_test: FAIL: $*" >&2; exit 1; }

# 1. an OOM run, layer scope: the memory, then no times
"$CPB" run --backend sim --method ring --model llama3-8b --gpus 8 --seq 16M --mem-cap 20G > "$W/oom.txt" 2>&1 ||
  fail "an OOM run exited $? (an OOM is a result: exit 0)"
grep -q "^status: oom" "$W/oom.txt" || fail "no 'status: oom' in: $(cat "$W/oom.txt")"
grep -q "scope layer" "$W/oom.txt" || fail "the layer run's header does not name its scope"
! grep -Eq "^  (step|forward|backward) +[0-9]|tokens/s/GPU|TFLOP/s/GPU" "$W/oom.txt" ||
  fail "an OOM run prints a step time or throughput: $(grep -E 'step|tokens' "$W/oom.txt")"
grep -q "^time: none" "$W/oom.txt" || fail "an OOM run does not say it has no time"
# ... and model scope (the issue's report: "step 770.790 s, 0.00 tokens/s/GPU")
"$CPB" run --backend sim --scope model --method ulysses --model llama3-8b --gpus 8 --seq 16M --seq-start 4M \
  --seq-stop 8M --bisect 1M > "$W/oom_model.txt" 2>&1 || fail "an OOM model run exited $?"
grep -q "^status: oom" "$W/oom_model.txt" || fail "the model run at 16M is not an OOM: $(grep status "$W/oom_model.txt")"
grep -q "scope model" "$W/oom_model.txt" || fail "the model run's header does not name its scope"
! grep -Eq "^  step |tokens/s/GPU|TFLOP/s/GPU|MFU of" "$W/oom_model.txt" ||
  fail "an OOM model run prints a step time or throughput: $(grep -E 'step|tokens' "$W/oom_model.txt")"

# 2. a run that fits: seconds, not milliseconds
"$CPB" run --backend sim --method ring --model llama3-8b --gpus 8 --seq 128K > "$W/ok.txt" 2>&1 || fail "run exited $?"
grep -Eq "^  step +[0-9.]+ s$" "$W/ok.txt" || fail "no step time in seconds: $(grep step "$W/ok.txt")"
! grep -Eq "[0-9] ms\b| ms$" "$W/ok.txt" || fail "run prints milliseconds: $(grep ' ms' "$W/ok.txt")"

# 3. sweep: step column in seconds, OOM rows without time or throughput, scope in the banner
"$CPB" sweep --backend sim --method ring,ulysses --model llama3-8b --gpus 8 --seq-list 128K,16M --mem-cap 20G \
  > "$W/sweep.txt" 2>&1 || fail "sweep exited $?"
grep -q "^# cpbench sweep .* scope layer" "$W/sweep.txt" || fail "the sweep banner does not name its scope"
grep -Eq "^# .*\(s\)" "$W/sweep.txt" || fail "the sweep's step column is not in seconds: $(grep '^#' "$W/sweep.txt")"
! grep -q "(ms)" "$W/sweep.txt" || fail "the sweep still prints milliseconds"
awk '$3 == "oom" || $3 == "refused" { if ($7 != "-" || $8 != "-" || $9 != "-") { print; bad = 1 } } END { exit bad }' \
  "$W/sweep.txt" || fail "an OOM/refused sweep row has a time or throughput"
grep -Eq "^ +ring +131072 +ok .* 0\.[0-9]+ " "$W/sweep.txt" || fail "no ok row with a step in seconds: $(cat "$W/sweep.txt")"
grep -Eq "^ +ring +16777216 +oom " "$W/sweep.txt" || fail "no OOM row at 16M: $(cat "$W/sweep.txt")"

# 4. plan: the scope in its banner
"$CPB" plan --model llama3-8b --gpus 8 --seq 128K > "$W/plan.txt" 2> /dev/null || fail "plan exited $?"
grep -q "^# cpbench plan: .*scope model" "$W/plan.txt" || fail "the plan banner does not name its scope"

# 5. per-command help: that command's options only, its default scope
"$CPB" plan --help > "$W/h_plan.txt" || fail "plan --help exited $?"
grep -q "^Usage: cpbench plan" "$W/h_plan.txt" || fail "plan --help is not plan's help"
grep -q "^Scope: the whole model by default" "$W/h_plan.txt" || fail "plan --help does not state its default scope"
grep -q -- "--max-context" "$W/h_plan.txt" || fail "plan --help lacks --max-context"
! grep -Eq -- "^  --(cases|dump|isolate|seq-list|results|format) " "$W/h_plan.txt" || fail "plan --help lists other commands' options"
for c in run sweep; do
  "$CPB" $c --help > "$W/h_$c.txt" || fail "$c --help exited $?"
  grep -q "^Scope: one attention layer by default" "$W/h_$c.txt" || fail "$c --help does not state its default scope"
  ! grep -Eq -- "^  --(cases|dump|max-context|results|format) " "$W/h_$c.txt" || fail "$c --help lists other commands' options"
done
grep -q -- "--seq-list" "$W/h_sweep.txt" || fail "sweep --help lacks --seq-list"
! grep -q -- "^  --seq-list" "$W/h_run.txt" || fail "run --help lists --seq-list"
"$CPB" list --help > "$W/h_list.txt"
grep -q -- "--format" "$W/h_list.txt" && ! grep -q -- "^  --method" "$W/h_list.txt" || fail "list --help: $(cat "$W/h_list.txt")"
"$CPB" --help > "$W/h.txt"
grep -q "^Commands:" "$W/h.txt" && grep -q -- "--cases" "$W/h.txt" || fail "the global help lost its commands or options"
echo "output_test: ok"
