#!/bin/sh
# verify_dump.sh MPIEXEC CPBENCH CHECKER DIR: `verify --dump` writes a complete file that
# agrees with the reference (checked by verify_dump_check); a dump that cannot be written
# is refused before any work (exit 2) and leaves no file behind; a file that is not a dump
# is never replaced without --force.
set -u
mpiexec=$1 cpbench=$2 checker=$3 dir=$4
mpi="$mpiexec -np 2 --oversubscribe --allow-run-as-root --bind-to none"
mkdir -p "$dir"
fail=0
for dtype in fp32 bf16; do
    f="$dir/dump_tp_$dtype.h5"
    rm -f "$f"
    $mpi "$cpbench" verify --method tp --model tiny --seq 64 --kv-heads 1 --hidden 48 --dtype $dtype --dump "$f" \
        || { echo "verify_dump: verify --dump failed ($dtype)"; fail=1; }
    "$checker" "$f" tp 2 $dtype || fail=1
done
# a directory that does not exist: refused before any work (exit 2), a message, no file
bad="$dir/no-such-dir/x.h5"
out=$($mpi "$cpbench" verify --method ulysses --model tiny --seq 64 --dump "$bad" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || { echo "verify_dump: exit $rc for an unwritable dump, expected 2"; fail=1; }
echo "$out" | grep -q -- "--dump: cannot create" || { echo "verify_dump: no message for the unwritable dump"; fail=1; }
[ ! -e "$bad" ] && ! ls "$dir"/no-such-dir* >/dev/null 2>&1 || { echo "verify_dump: a file was left behind"; fail=1; }
# a file that is not a dump (here a copy of the first dump's neighbour, a text file) is
# refused and left as it was; --force replaces it; an earlier dump is replaced without it
other="$dir/precious.h5"
echo "my results" > "$other"
sum=$(cksum < "$other")
out=$($mpi "$cpbench" verify --method tp --model tiny --seq 64 --kv-heads 1 --hidden 48 --dump "$other" 2>&1)
rc=$?
[ $rc -eq 2 ] || { echo "verify_dump: exit $rc for a dump over a foreign file, expected 2"; fail=1; }
echo "$out" | grep -q "is not a cpbench verify dump; it was left untouched" || { echo "verify_dump: $out"; fail=1; }
[ "$(cksum < "$other")" = "$sum" ] || { echo "verify_dump: the foreign file was changed"; fail=1; }
$mpi "$cpbench" verify --method tp --model tiny --seq 64 --kv-heads 1 --hidden 48 --dump "$other" --force >/dev/null \
    || { echo "verify_dump: --force did not replace the foreign file"; fail=1; }
"$checker" "$other" tp 2 bf16 || fail=1
$mpi "$cpbench" verify --method tp --model tiny --seq 64 --kv-heads 1 --hidden 48 --dump "$other" >/dev/null \
    || { echo "verify_dump: an earlier dump was not replaced"; fail=1; }
ls "$dir"/*.tmp-* >/dev/null 2>&1 && { echo "verify_dump: temporary files left: $(ls "$dir")"; fail=1; }
exit $fail
