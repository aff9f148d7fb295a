#!/usr/bin/env bash
# gpu_check_dry_run.sh CPBENCH WORKDIR — scripts/gpu-check.sh --dry-run from the build tree:
#   1. it passes, and its per-method steps (step 6) run exactly the registry's methods, in
#      registry order: read from `cpbench list --format json` with Python's json, apart from
#      the script's own reading of the flat form;
#   2. it fails where a step would run a name the registry does not know: a copy of the
#      script whose step list takes `options:` as a method (what the awk over the text form
#      once did) must exit 1 naming it, and check 1 must reject its steps.
set -u
CPB=$1 W=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
fail() { echo "gpu_check_dry_run: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || fail "cannot make $W"
"$CPB" list --format json > "$W/list.json" || fail "cpbench list --format json failed"

# same_methods STEPS: the --method of each step-6 row of steps.tsv equals the registry's list
same_methods() {
  "$PY" - "$W/list.json" "$1" <<'PY'
import csv, json, shlex, sys
registry = [m["name"] for m in json.load(open(sys.argv[1]))["methods"]]
ran = []
with open(sys.argv[2], newline="") as f:
    for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
        argv = shlex.split(row["command"])
        if row["group"] != "6" or "run" not in argv or "--method" not in argv:
            continue
        ran.append(argv[argv.index("--method") + 1])
if ran != registry:
    sys.exit(f"step 6 runs {ran}; the registry's methods are {registry}")
print(f"step 6 runs the {len(ran)} methods of the registry, in its order")
PY
}

# 1. the real script
bash "$ROOT/scripts/gpu-check.sh" --dry-run --cpbench "$CPB" --log-dir "$W/dry" > "$W/dry.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { tail -40 "$W/dry.out"; fail "the dry run exited $rc, expected 0 (log: $W/dry.out)"; }
grep -q "^result: every step passed" "$W/dry/summary.txt" || fail "no 'every step passed' in $W/dry/summary.txt"
same_methods "$W/dry/steps.tsv" || fail "the dry run's per-method steps are not the registry's methods"
grep -q "total: [0-9]*s planned of the 330s budget" "$W/dry.out" || fail "the plan (each step's budget, the total) was not printed"

# 2. the same script, its step list taking `options:` too: the dry run must refuse it
mkdir -p "$W/copy/scripts" && cp "$ROOT/scripts/gpu-check.sh" "$ROOT/scripts/cuda-libs.sh" "$W/copy/scripts/" || fail "cannot copy the scripts"
grep -q '^METHODS=$(list_methods)' "$W/copy/scripts/gpu-check.sh" ||
  fail "scripts/gpu-check.sh no longer sets METHODS=\$(list_methods): move this test's mutation with it"
sed -i 's/^METHODS=$(list_methods)/METHODS="$(list_methods) options:"/' "$W/copy/scripts/gpu-check.sh"
bash "$W/copy/scripts/gpu-check.sh" --dry-run --cpbench "$CPB" --log-dir "$W/bad" > "$W/bad.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { tail -20 "$W/bad.out"; fail "with a step running 'options:' the dry run exited $rc, expected 1"; }
grep -q "would run --method options:, which \`cpbench list\` does not know" "$W/bad.out" ||
  fail "the refusal does not name the unknown method (see $W/bad.out)"
if same_methods "$W/bad/steps.tsv" > "$W/bad.compare" 2>&1; then
  fail "check 1 accepted step 6 with 'options:' in it: it cannot fail"
fi
echo "gpu_check_dry_run: passed ($(grep -c . "$W/dry/steps.tsv") rows; the mutant refused: $(cat "$W/bad.compare"))"
