#!/usr/bin/env bash
# failed_digest.sh BUILD: after a failed `make test`, the machine's vital numbers and, for
# the first failed tests, the lines of their output that look like the reason.  CI shows
# only the start and the end of its log, and a failing test's full output (hundreds of
# passed checks) lies in the middle; .ci/run prints this last, where it stays in view.  The
# first failure comes last, with the end of its output (where mpirun and the sanitizers
# report), because the later failures often follow from it.
b=${1:?usage: failed_digest.sh BUILD}
log=$b/Testing/Temporary/LastTest.log
failed=$b/Testing/Temporary/LastTestsFailed.log
echo "ci digest: $(nproc) cores, memory $(free -m | awk '/^Mem:/{print $2 " MiB, " $7 " MiB available"}'), /dev/shm $(df -m /dev/shm | awk 'NR==2{print $4 " MiB free"}'), $(df -m . | awk 'NR==2{print $4 " MiB free here"}')"
[ -f "$failed" ] && [ -f "$log" ] || { echo "ci digest: no ctest failure list in $b (the build or the set-up failed)"; exit 0; }
. "$(dirname "$0")/../tests/mpi/reason_patterns.sh"
# the output of test $1: from its "Testing: NAME" header to the first "<end of output>"
output() { awk -v n="$1" '$0 ~ ("Testing: " n "$") {p = 1} p && /<end of output>/ {exit} p' "$log" | grep -Ev -- "$pass"; }
reasons() { output "$1" | grep -v '^Command: ' | grep -Ei -- "$bad" | head -n "$2" | cut -c1-400 | sed 's/^/    /'; }
names=$(sed -n 's/^[0-9]*://p' "$failed")
echo "ci digest: $(printf '%s\n' "$names" | grep -c .) test(s) failed: $(printf '%s ' $names)"
for name in $(printf '%s\n' "$names" | sed -n 2,3p); do
    echo "ci digest: $name, the lines that look like the reason:"
    reasons "$name" 5
done
first=$(printf '%s\n' "$names" | head -n 1)
echo "ci digest: $first (the first failure), the lines that look like the reason:"
reasons "$first" 10
echo "ci digest: $first, the end of its output:"
output "$first" | tail -n 8 | cut -c1-400 | sed 's/^/    /'
