#!/usr/bin/env bash
# full_disk.sh CPBENCH WORKDIR — a results file on a disk that fills up: the append that
# finds no room stops the sweep (exit 1, the reason), every row in the file is whole (no
# blank row, the table's extent is its rows), and the sweep resumes once there is room.
# The disk is a file-size limit (ulimit -f: any machine) and, where this process may mount
# one, a 1 MiB tmpfs (the free-space check).  Run by ctest (tests/mpi/cli.cmake).
set -u
CPB=$(realpath "$1") W=$2
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "full_disk: FAIL: $*"; exit 1; }
SWEEP=(sweep --backend sim --gpus 8 --model llama3-8b --method all --seq-start 16K --seq-stop 4M --factor 1.25)

# every row whole: the extent is the number of rows, none has an empty status, no point twice
check_file() { # FILE
  $PY - "$1" <<'PYEOF' || fail "the rows of $1"
import sys, h5py
r = h5py.File(sys.argv[1], "r")["runs"][:]
assert len(r) > 0, "no rows"
assert all(s for s in r["status"]), "a blank row: %s" % list(r["status"])
assert all(m for m in r["method"]), "a row without its method"
k = [(m, s) for m, s in zip(r["method"], r["seq_len"])]
assert len(k) == len(set(k)), "a point twice"
print(len(r), "rows, all whole")
PYEOF
}

# 1. a file-size limit
out=$(cd "$W" && bash -c "trap '' XFSZ; ulimit -f 512; exec \"$CPB\" ${SWEEP[*]} --out limited.h5" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 5
[ $rc -eq 1 ] || fail "exit $rc under a file-size limit, expected 1"
printf '%s\n' "$out" | grep -q "cannot append a row to limited.h5" || fail "no reason given"
printf '%s\n' "$out" | grep -q "the table is as it was" || fail "the message does not say the table is as it was"
printf '%s\n' "$out" | grep -q "stopping the sweep" || fail "the sweep did not stop"
check_file "$W/limited.h5"
written=$(printf '%s\n' "$out" | grep -cE "^ +[a-z]+ +[0-9]+ +(ok|oom|refused|error) ")
rows=$($PY -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['runs']))" "$W/limited.h5")
[ "$rows" -eq $((written - 1)) ] || fail "$rows rows in the file, $written printed (the last not written)"
# room again: the sweep resumes where it stopped
(cd "$W" && "$CPB" "${SWEEP[@]}" --out limited.h5 > resumed.txt 2>&1) || fail "the resumed sweep failed: $(tail -3 "$W/resumed.txt")"
grep -q "$rows from --out" "$W/resumed.txt" || fail "the resumed sweep did not take the $rows rows: $(tail -1 "$W/resumed.txt")"
check_file "$W/limited.h5"

# 2. a small file system: the free-space check refuses the append before it starts
mkdir -p "$W/small"
if mount -t tmpfs -o size=1m cpbench-full-disk "$W/small" 2>/dev/null; then
  out=$(cd "$W/small" && "$CPB" "${SWEEP[@]}" --out small.h5 2>&1)
  rc=$?
  printf '%s\n' "$out" | tail -n 3
  cp "$W/small/small.h5" "$W/small-copy.h5" 2>/dev/null
  umount "$W/small"
  [ $rc -eq 1 ] || fail "exit $rc on a full tmpfs, expected 1"
  printf '%s\n' "$out" | grep -q "bytes free, and an append may need" || fail "the free-space check did not speak"
  check_file "$W/small-copy.h5"
else
  echo "full_disk: no tmpfs can be mounted here (not root?): the file-size limit alone"
fi
echo "full_disk: ok"
