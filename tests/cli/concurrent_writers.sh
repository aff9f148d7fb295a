#!/usr/bin/env bash
# concurrent_writers.sh CPBENCH WORKDIR — writers at once on one results file (issue 26 §2,
# §10).  (1) Two identical sweeps started together on an existing file: a sweep takes the
# file's write lock before it reads which points are done (and reads again before each
# point), so the second finds the first one's points and runs none; every point is in the
# file once, and both exit 0.  Before the fix both read "nothing done" before the lock and
# every point was written twice about half the time; the pair runs ROUNDS times.  (2) A
# short stress: three overlapping sweeps and two runs of other points at once; the file
# then holds every point of the sweeps once and both run rows, every row whole.
set -u
CPB=$(realpath "$1") W=$2 PY=/usr/bin/python3 ROUNDS=${ROUNDS:-4}
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail() { echo "concurrent_writers: FAIL: $*"; exit 1; }
SW="$CPB sweep --backend sim --gpus 2 --model tiny"
# the rows of FILE: every (method, seq_len, scope, world, options) once, COUNT rows, and
# every status a known one
check() {
    $PY - "$@" <<'PY' || exit 1
import collections, sys, h5py
path, want = sys.argv[1], int(sys.argv[2])
r = h5py.File(path, 'r')['runs'][:]
keys = collections.Counter((m, s, sc, w, o) for m, s, sc, w, o in
                           zip(r['method'], r['seq_len'], r['scope'], r['world_size'], r['options']))
twice = [k for k, n in keys.items() if n > 1]
bad = [s for s in r['status'] if s not in (b'ok', b'oom', b'refused', b'error')]
if twice or bad or len(r) != want:
    print('concurrent_writers: FAIL: %s: %d rows (want %d), %d points twice %s, statuses %s'
          % (path, len(r), want, len(twice), twice[:3], bad[:3]))
    sys.exit(1)
print('%s: %d rows, every point once' % (path, len(r)))
PY
}
# (1) pairs of identical sweeps
for i in $(seq "$ROUNDS"); do
    f=pair$i.h5
    $CPB run --backend sim --gpus 2 --model tiny --method ring --seq 128 --out $f > /dev/null || fail "cannot make $f"
    $SW --method all --seq-list 256,512,1K,2K --out $f > a$i.log 2>&1 & a=$!
    $SW --method all --seq-list 256,512,1K,2K --out $f > b$i.log 2>&1 & b=$!
    wait $a; ra=$?; wait $b; rb=$?
    [ $ra -eq 0 ] && [ $rb -eq 0 ] || { tail -3 a$i.log b$i.log; fail "round $i: the sweeps exited $ra and $rb"; }
    n=$(grep -h "^# done" a$i.log | sed 's/# done: \([0-9]*\) trials.*/\1/')
    check $f $((n + 1))
    grep -q "(0 run, $n from --out)" a$i.log b$i.log || fail "round $i: neither sweep found the other's points"
done
# (2) stress: three overlapping sweeps and two runs of other points, at once
f=stress.h5
pids=()
$SW --method ring,ulysses --seq-list 256,512,1K --out $f > s1.log 2>&1 & pids+=($!)
$SW --method ulysses,usp --seq-list 512,1K,2K --out $f > s2.log 2>&1 & pids+=($!)
$SW --method ring,usp --seq-list 256,2K --out $f > s3.log 2>&1 & pids+=($!)
$CPB run --backend sim --gpus 2 --model tiny --method tp --seq 4K --out $f > r1.log 2>&1 & pids+=($!)
$CPB run --backend sim --gpus 2 --model tiny --method tp --seq 8K --out $f > r2.log 2>&1 & pids+=($!)
for p in "${pids[@]}"; do wait $p || { tail -3 s?.log r?.log; fail "a writer exited $?"; }; done
# ring, ulysses, usp at 256..2K (3 x 4 = 12 points) and the two tp runs
check $f 14
echo "concurrent_writers: ok"
