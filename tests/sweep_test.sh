#!/usr/bin/env bash
# sweep_test.sh CPBENCH WORKDIR — `cpbench sweep` end to end on the simulator (and a small
# cpu sweep under mpirun): doubling then bisection to the step, fpdt's chunk granule, a list
# with a refused shape (refused rows), resuming from --out, refusal of a foreign --out file,
# and the rows as h5py reads them.  Run by ctest (tests/mpi/harness.cmake).
set -euo pipefail
CPB=$1
W=$2
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "sweep_test: FAIL: $*" >&2; exit 1; }

# 1. growth then bisection under a 4 GiB cap (each method hits OOM below 1M tokens)
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,upipe,fpdt \
    --seq-start 16K --seq-stop 1M --bisect 16K --mem-cap 4G --out "$W/s.h5" > "$W/s1.txt" \
    || fail "sim sweep exited $? (output in $W/s1.txt)"
cat "$W/s1.txt"
grep -q "^# cpbench sweep  backend sim (predictions" "$W/s1.txt" || fail "banner does not say sim predicts"
grep -Eq "^ +upipe +16384 +ok " "$W/s1.txt" || fail "no aligned row for upipe at 16384"

$PY - "$W/s.h5" <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["cpbench_schema"] == b"cpbench-results", dict(f.attrs)
r = f["runs"][:]
assert set(r["backend"]) == {b"sim"}, set(r["backend"])
for m in (b"ulysses", b"upipe", b"fpdt"):
    x = r[r["method"] == m]
    ok = sorted(x[x["status"] == b"ok"]["seq_len"])
    oom = sorted(x[x["status"] == b"oom"]["seq_len"])
    assert ok and oom, (m, ok, oom)
    assert ok[:3] == ([65536, 131072, 262144] if m == b"fpdt" else [16384, 32768, 65536]), (m, ok)  # doubling
    assert max(ok) < min(oom), (m, ok, oom)               # memory grows with S
    g = 65536 if m == b"fpdt" else 16384
    assert min(oom) - max(ok) <= g, (m, max(ok), min(oom))  # bisected to the step / chunk
    assert all(s % g == 0 for s in x["seq_len"]) if m == b"fpdt" else True, x["seq_len"]
    assert all(p > 0 for p in x[x["status"] == b"ok"]["peak_bytes"])
    assert all(x[x["status"] == b"ok"]["peak_bytes"] <= 4 << 30)
    assert all(x[x["status"] == b"oom"]["reason"] != b""), "an OOM row says why"
    print(m.decode(), "fits", max(ok), "first OOM", min(oom), "points", len(x))
PYEOF

# 2. resume: the same sweep again runs nothing and appends nothing
n1=$($PY -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['runs']))" "$W/s.h5")
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,upipe,fpdt \
    --seq-start 16K --seq-stop 1M --bisect 16K --mem-cap 4G --out "$W/s.h5" > "$W/s2.txt" \
    || fail "resumed sweep exited $?"
n2=$($PY -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['runs']))" "$W/s.h5")
[ "$n1" = "$n2" ] || fail "resume appended rows ($n1 -> $n2)"
grep -q "0 run, $n1 from --out" "$W/s2.txt" || fail "resume reran points: $(tail -1 "$W/s2.txt")"

# 3. a list, with a shape the method refuses: refused rows with the reason, the sweep goes on
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method upipe,ulysses --head-chunk 4 \
    --seq-list 256K,128K --out "$W/list.h5" > "$W/s3.txt" || fail "list sweep exited $?"
cat "$W/s3.txt"
$PY - "$W/list.h5" <<'PYEOF'
import sys, h5py
r = h5py.File(sys.argv[1], "r")["runs"][:]
up = r[r["method"] == b"upipe"]
assert list(up["status"]) == [b"refused", b"refused"], up["status"]
assert list(up["seq_len"]) == [131072, 262144], up["seq_len"]   # ascending
assert all(len(x) > 0 for x in up["reason"]), up["reason"]
ul = r[r["method"] == b"ulysses"]
assert list(ul["status"]) == [b"ok", b"ok"], ul["status"]
print("refused:", up["reason"][0].decode())
PYEOF

# 4. a file that is not a cpbench results file is refused and left as it was
echo "not results" > "$W/notes.h5"
cp "$W/notes.h5" "$W/notes.orig"
set +e
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses --seq-list 16K \
    --out "$W/notes.h5" > "$W/s4.txt" 2>&1
rc=$?
set -e
cat "$W/s4.txt"
[ $rc -ne 0 ] || fail "a foreign --out file was accepted"
grep -q "not an HDF5 file" "$W/s4.txt" || fail "refusal does not say why"
cmp -s "$W/notes.h5" "$W/notes.orig" || fail "refused file was modified"

# 5. bad options are refused with the option's name
set +e
"$CPB" sweep --backend sim --model llama3-8b --method ulysses --seq-start 1M --seq-stop 128K > "$W/s5.txt" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "--seq-stop" "$W/s5.txt" || fail "bad range not refused: $(cat "$W/s5.txt")"
# 6. --isolate: each trial a child `cpbench run`; its rows equal the in-process ones
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,fpdt --seq-list 64K,128K \
    --mem-cap 4G --isolate --out "$W/iso.h5" > "$W/s6.txt" || fail "isolated sweep exited $?"
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,fpdt --seq-list 64K,128K \
    --mem-cap 4G --out "$W/inproc.h5" > "$W/s7.txt" || fail "in-process sweep exited $?"
$PY - "$W/iso.h5" "$W/inproc.h5" <<'PYEOF'
import sys, h5py
a = h5py.File(sys.argv[1], "r")["runs"][:]
b = h5py.File(sys.argv[2], "r")["runs"][:]
assert len(a) == len(b) == 4, (len(a), len(b))
for c in ("method", "seq_len", "status", "peak_bytes", "intermediate_bytes", "host_peak_bytes", "step_s"):
    assert (a[c] == b[c]).all(), (c, a[c], b[c])
print("isolated rows equal in-process rows")
PYEOF

# 7. model scope (whole-model estimate) rows carry scope "model"
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --scope model --method upipe \
    --seq-list 128K,1M --out "$W/model.h5" > "$W/s8.txt" || fail "model-scope sweep exited $?"
$PY -c "import h5py,sys; r=h5py.File(sys.argv[1])['runs'][:]; assert list(r['scope'])==[b'model']*2 and (r['status']==b'ok').all(), r[['scope','status','reason']]" "$W/model.h5" \
    || fail "model-scope rows"
echo "sweep_test: ok"
