#!/bin/sh
# verify_dump.sh MPIEXEC CPBENCH CHECKER DIR: `verify --dump` writes a complete file that
# agrees with the reference (checked by verify_dump_check), and a dump that cannot be
# written fails the run and leaves no file behind.
set -u
mpiexec=$1 cpbench=$2 checker=$3 dir=$4
mpi="$mpiexec -np 2 --oversubscribe --allow-run-as-root --bind-to none"
mkdir -p "$dir"
fail=0
for dtype in fp32 bf16; do
    f="$dir/dump_tp_$dtype.h5"
    rm -f "$f" "$f.tmp"
    $mpi "$cpbench" verify --method tp --model tiny --seq 64 --kv-heads 1 --hidden 48 --dtype $dtype --dump "$f" \
        || { echo "verify_dump: verify --dump failed ($dtype)"; fail=1; }
    "$checker" "$f" tp 2 $dtype || fail=1
done
# a directory that does not exist: exit 1, a message, no file
bad="$dir/no-such-dir/x.h5"
out=$($mpi "$cpbench" verify --method ulysses --model tiny --seq 64 --dump "$bad" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "verify_dump: exit $rc for an unwritable dump, expected 1"; fail=1; }
echo "$out" | grep -q -- "--dump: cannot create" || { echo "verify_dump: no message for the unwritable dump"; fail=1; }
[ ! -e "$bad" ] && [ ! -e "$bad.tmp" ] || { echo "verify_dump: a file was left behind"; fail=1; }
exit $fail
