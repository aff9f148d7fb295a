#!/bin/sh
# standin_sweep.sh MPIRUN CPBENCH OUT: a short sweep of the cuda backend on the CPU stand-in
# with --out, then the rows as h5py reads them: every point ran (status ok), on cuda, with
# a measured step time and the pool's reserved high-water, which is all of device-used.
set -e
mpirun=$1 cpbench=$2 out=$3
rm -f "$out"
"$mpirun" -np 2 --oversubscribe --allow-run-as-root --bind-to none "$cpbench" sweep --backend cuda --model tiny \
    --method ulysses,ring,offload,fpdt --seq-list 64,128 --warmup 1 --iters 1 --out "$out"
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py
r = h5py.File(sys.argv[1])['runs'][:]
ok = r['status'] == b'ok'
assert len(r) == 8 and ok.all(), r[['method', 'seq_len', 'status', 'reason']]
assert set(r['backend']) == {b'cuda'}, set(r['backend'])
assert (r['step_s'] > 0).all() and (r['reserved_bytes'] > 0).all(), r[['method', 'step_s', 'reserved_bytes']]
# device-used minus the pool's reserved: nothing else, once the baseline is taken after the
# warm-up step (NCCL connects lazily, at the first use of each pattern, in that step)
extra = r['device_used_bytes'] - r['reserved_bytes']
assert (abs(extra) < (1 << 20)).all(), r[['method', 'seq_len', 'reserved_bytes', 'device_used_bytes']]
print(len(r), 'cuda rows from the stand-in, all ok; device used = reserved')
PY
