#!/bin/sh
# standin_reserved.sh MPIRUN CPBENCH DIR: two trials in one process, the smaller after the
# larger (a sweep without --isolate), on the cuda backend on the CPU stand-in: each row's
# reserved bytes are its own.  The pool keeps freed memory within a trial; between trials
# it must be trimmed, or the second row reports the first one's pool.  The reference is the
# same trial alone in its own process.
set -e
mpirun=$1 cpbench=$2 dir=$3
mkdir -p "$dir"
rm -f "$dir/both.h5" "$dir/alone.h5"
run() {
  "$mpirun" -np 2 --oversubscribe --allow-run-as-root --bind-to none "$cpbench" sweep --backend cuda --model tiny \
      --seq-list 64 --warmup 1 --iters 1 "$@"
}
# offload reserves more than ulysses at this shape (checked below), so ulysses after offload
# would read offload's pool without the trim
run --method offload,ulysses --out "$dir/both.h5"
run --method ulysses --out "$dir/alone.h5"
/usr/bin/python3 - "$dir/both.h5" "$dir/alone.h5" <<'PY'
import sys, h5py
both = h5py.File(sys.argv[1])['runs'][:]
alone = h5py.File(sys.argv[2])['runs'][:]
assert list(both['method']) == [b'offload', b'ulysses'], both['method']
assert (both['status'] == b'ok').all() and (alone['status'] == b'ok').all()
big, small, ref = int(both['reserved_bytes'][0]), int(both['reserved_bytes'][1]), int(alone['reserved_bytes'][0])
print('reserved bytes: offload %d, then ulysses %d; ulysses alone %d' % (big, small, ref))
assert big > ref, 'the first trial must reserve more than the second for this test to mean anything'
assert small == ref, 'ulysses after offload reports %d reserved bytes, alone %d: the pool kept the earlier trial' % (small, ref)
# the tracked peak is the backend-independent figure: the same in both processes too
assert both['peak_bytes'][1] == alone['peak_bytes'][0]
print('each trial reports its own reserved bytes')
PY
