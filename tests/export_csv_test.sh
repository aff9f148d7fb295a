#!/usr/bin/env bash
# export_csv_test.sh CPBENCH WORKDIR SRCDIR — paper/export_csv.py (results for pandas): every
# row of a sweep's file, its columns by name, no time or throughput in an OOM row, bad input
# exits 2 and writes nothing; results/README.md documents every column of the rows.  Run by ctest (tests/mpi/harness.cmake).
set -euo pipefail
CPB=$1
W=$2
SRC=$3
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "export_csv_test: FAIL: $*" >&2; exit 1; }
"$CPB" sweep --backend sim --method ring,ulysses --model llama3-8b --gpus 8 --seq-list 128K,16M --mem-cap 20G \
  --out "$W/s.h5" > "$W/sweep.txt" 2>&1 || fail "sweep exited $?"
"$PY" "$SRC/paper/export_csv.py" "$W/s.h5" --out "$W/out/s.csv" > "$W/export.txt" 2>&1 || fail "export: $(cat "$W/export.txt")"
"$PY" - "$W/out/s.csv" "$W/s.h5" <<'PYEOF' || fail "the CSV is not the file's rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4, rows
for c in ("method", "seq_len", "status", "peak_bytes", "step_s", "tokens_per_s_per_gpu", "fpdt_bwd", "upipe_bwd",
          "at_peak_bytes.x", "file"):
    assert c in rows[0], c
ok = [r for r in rows if r["status"] == "ok"]
oom = [r for r in rows if r["status"] == "oom"]
assert len(ok) == 2 and len(oom) == 2, [r["status"] for r in rows]
assert all(float(r["step_s"]) > 0 and float(r["tokens_per_s_per_gpu"]) > 0 for r in ok)
assert all(r["step_s"] == "" and r["tokens_per_s_per_gpu"] == "" for r in oom), "an OOM row has a time"
assert all(int(r["peak_bytes"]) > 0 for r in rows)
assert all(r["file"] == sys.argv[2] for r in rows)
PYEOF
# results/README.md documents every column the rows carry
"$PY" - "$W/s.h5" "$SRC/results/README.md" <<'PYEOF' || fail "results/README.md misses columns"
import h5py, sys
names = h5py.File(sys.argv[1], "r")["runs"].dtype.names
doc = open(sys.argv[2]).read()
missing = [n for n in names if "| `%s` |" % n not in doc]
assert not missing, "undocumented columns: %s" % missing
PYEOF
echo "not hdf5" > "$W/bad.h5"
rc=0; "$PY" "$SRC/paper/export_csv.py" "$W/bad.h5" --out "$W/bad.csv" 2> "$W/bad.txt" || rc=$?
[ "$rc" = 2 ] || fail "a file that is not a results file: exit $rc, not 2"
grep -q "bad.h5" "$W/bad.txt" || fail "the message does not name the file: $(cat "$W/bad.txt")"
[ ! -e "$W/bad.csv" ] || fail "a CSV was written for bad input"
echo "export_csv_test: ok"
