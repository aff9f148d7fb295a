#!/usr/bin/env bash
# plan_test.sh CPBENCH WORKDIR SRCDIR — `cpbench plan` end to end: the output says it is a
# prediction (profile, framework), a progress line goes to stderr, --out holds one row per
# candidate and the recommendation is, in that table, the one row marked recommended, with
# the headroom floor, calibrated, and no eligible row faster by more than the tie; `cpbench run` with the printed details gives the same throughput;
# paper/make_figures.py --plan draws the frontier and recommends the same candidate; nothing
# fitting exits 3 naming the closest candidate, and a second plan with the same --out
# writes nothing again; a --max-context layer plan of a config.json.  Run by ctest
# (tests/mpi/harness.cmake; the whole-model 4M plan is the costly part: a minute under the
# sanitizers on a loaded machine).
set -euo pipefail
CPB=$1
W=$2
SRC=$3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "plan_test: FAIL: $*" >&2; exit 1; }
PY=/usr/bin/python3

# --tp 0: the whole search without tensor parallelism (each tp value multiplies the
# candidates; plan_searches_tp in tests/cli/plan_cases.txt covers the tp search)
"$CPB" plan --model llama3-8b --gpus 8 --seq 4M --tp 0 --out "$W/plan.h5" > "$W/out.txt" 2> "$W/err.txt" ||
  fail "plan exited $? ($(tail -3 "$W/err.txt"))"
cat "$W/out.txt"
grep -q "^# cpbench plan: PREDICTIONS of the simulator, not measurements" "$W/out.txt" || fail "no prediction banner"
grep -q "GPU profile h100-sxm" "$W/out.txt" || fail "the profile is not named"
grep -q "framework torchtitan" "$W/out.txt" || fail "the framework is not named"
grep -q "^Recommendation (a prediction: h100-sxm, torchtitan): " "$W/out.txt" || fail "no recommendation line"
grep -q "^# plan: .*candidates" "$W/err.txt" || fail "no progress line on stderr"
rec=$(sed -n 's/^Recommendation (a prediction: [^)]*): //p' "$W/out.txt" | sed 's/ (no knobs)$//')
n=$(sed -n 's/^#   \([0-9]*\) candidates of.*/\1/p' "$W/out.txt")
marked=$(awk '/RECOMMENDED$/ {print $2}' "$W/out.txt")
[ "$marked" = "${rec%% *}" ] || fail "the table marks $marked RECOMMENDED, the recommendation is $rec"
grep -q "recommendation rules .*at least 10% of the usable memory free" "$W/out.txt" || fail "the headroom floor is not stated"
grep -q "within 2% of the best are a tie" "$W/out.txt" || fail "the uncertainty is not stated"
grep -q "^  in the frameworks" "$W/out.txt" || fail "no framework settings for the recommendation"

# the file: one row per candidate; the recommendation fits and is the fastest that fits
$PY - "$W/plan.h5" "$rec" "$n" "$SRC/paper" <<'PYEOF' || fail "the results file disagrees with the printed plan"
import sys
sys.path.insert(0, sys.argv[4])
import make_figures as mf
rows, _ = mf.read_runs([sys.argv[1]])
want, n = sys.argv[2], int(sys.argv[3])
assert len(rows) == n, "%d rows, %d candidates printed" % (len(rows), n)
assert all(r["backend"] == "sim" and r["scope"] == "model" for r in rows)
best, front, mc = mf.plan_choice(rows)
label = mf.plan_label(best)
assert label == want, "the file's rule recommends %r, the plan printed %r" % (label, want)
ok = [r for r in rows if r["status"] == "ok"]
assert best["status"] == "ok" and best["peak_bytes"] <= best["capacity_bytes"], "the recommendation does not fit"
assert sum("recommended" in r["plan"].split() for r in rows) == 1, "one row is marked recommended"
# the rules (plan.h): the floor's headroom; calibrated (cuDNN) when any eligible one is;
# no eligible one faster by more than the 2% tie
head = lambda r: 1 - r["peak_bytes"] / r["capacity_bytes"]
assert head(best) >= 0.10, "the recommendation leaves %.1f%% free" % (100 * head(best))
assert best["attn_impl"] == "cudnn", "the recommendation ran on %s" % best["attn_impl"]
el = [r for r in ok if head(r) >= 0.10 and r["attn_impl"] == "cudnn"]
assert all(r["tokens_per_s_per_gpu"] <= best["tokens_per_s_per_gpu"] / 0.98 for r in el), "an eligible row is faster by more than the tie"
for r in ok:
    assert ("under-floor" in r["plan"].split()) == (head(r) < 0.10), r["plan"]
    assert ("uncalibrated" in r["plan"].split()) == (r["attn_impl"] in ("own", "mixed")), r["plan"]
assert any(r["status"] == "oom" for r in rows), "some candidates do not fit at 4M (ring, tp)"
print("plan_test: file ok: %d rows, %d fit, recommended %s" % (len(rows), len(ok), label))
PYEOF

# the recommendation as `cpbench run` sees it
cmd=$(sed -n 's/^  details: cpbench //p' "$W/out.txt")
[ -n "$cmd" ] || fail "no details line"
# shellcheck disable=SC2086
"$CPB" $cmd --out "$W/run.h5" > "$W/run.txt" || fail "the details command failed: $cmd"
$PY - "$W/plan.h5" "$W/run.h5" "$SRC/paper" <<'PYEOF' || fail "run gives another row than the plan's"
import sys
sys.path.insert(0, sys.argv[3])
import make_figures as mf
plan, _ = mf.read_runs([sys.argv[1]])
run, _ = mf.read_runs([sys.argv[2]])
assert len(run) == 1
r = run[0]
same = [p for p in plan if mf.point_key(p) == mf.point_key(r)]
assert len(same) == 1, "the run's point is %d rows of the plan" % len(same)
p = same[0]
for col in ("status", "peak_bytes", "host_peak_bytes", "step_s", "tokens_per_s_per_gpu"):
    assert p[col] == r[col], "%s: plan %r, run %r" % (col, p[col], r[col])
best, _, _ = mf.plan_choice(plan)
assert mf.point_key(best) == mf.point_key(r), "the details are not the recommendation's"
print("plan_test: run of the recommendation: the same row")
PYEOF

# the frontier figure, and the same recommendation from the file
MPLBACKEND=Agg $PY "$SRC/paper/make_figures.py" --plan "$W/plan.h5" --out "$W/fig" > "$W/fig.txt" ||
  fail "make_figures.py --plan exited $?"
grep -q "recommended $rec\$" "$W/fig.txt" || fail "make_figures recommends otherwise: $(cat "$W/fig.txt")"
f=$(ls "$W/fig"/*_plan_frontier.png | head -1)
[ -s "$f" ] && head -c 8 "$f" | od -c | grep -q "P   N   G" || fail "no frontier PNG"

# nothing fits (1 GiB per GPU): exit 3, the closest candidate and by how much; its rows
# (oom) are results too, and a second plan with the same --out writes none of them again
for k in 1 2; do
  set +e
  "$CPB" plan --model llama3-8b --gpus 8 --seq 256K --mem-cap 1G --out "$W/none.h5" > "$W/none$k.txt" 2>/dev/null
  rc=$?
  set -e
  [ $rc -eq 3 ] || fail "nothing fits: exit $rc, expected 3"
done
grep -q "^Nothing fits (a prediction: h100-sxm, torchtitan)" "$W/none1.txt" || fail "no 'Nothing fits'"
grep -Eq "^Closest: .* needs [0-9.]+ GiB of (device|host) memory per GPU, [0-9.]+ GiB usable: [0-9.]+ GiB \([0-9.]+%\) too much" \
  "$W/none1.txt" || fail "the closest candidate is not named with its shortfall"
m=$(sed -n 's/^#   \([0-9]*\) candidates of.*/\1/p' "$W/none1.txt")
grep -q "$m candidate rows written, 0 already there" "$W/none1.txt" || fail "the first plan wrote: $(tail -1 "$W/none1.txt")"
grep -q "0 candidate rows written, $m already there" "$W/none2.txt" || fail "rows written twice: $(tail -1 "$W/none2.txt")"

# a layer plan of a model read from a config.json, longest context
"$CPB" plan --model-config "$SRC/tests/data/hf/Qwen3-32B.json" --gpus 8 --scope layer --max-context --seq-stop 2M \
  --mem-cap 12G > "$W/ctx.txt" 2>/dev/null || fail "max-context layer plan exited $?"
grep -q "framework: none (--scope layer" "$W/ctx.txt" || fail "the layer plan does not say it has no framework"
grep -q "it fits the longest context of those" "$W/ctx.txt" || fail "no longest-context reason"
grep -q "12.00 GiB usable per GPU" "$W/ctx.txt" || fail "the plan does not say it planned for --mem-cap 12G"
echo "plan_test: ok"
