#!/usr/bin/env bash
# failed_digest.sh BUILD: after a failed `make test`, the machine's vital numbers and, for
# each failed test, the lines of its output that look like the reason.  CI shows only the
# start and the end of its log, and a failing test's full output (hundreds of passed
# checks) lies in the middle; .ci/run prints this last, where it stays in view.
b=${1:?usage: failed_digest.sh BUILD}
log=$b/Testing/Temporary/LastTest.log
failed=$b/Testing/Temporary/LastTestsFailed.log
echo "ci digest: $(nproc) cores, memory $(free -m | awk '/^Mem:/{print $2 " MiB, " $7 " MiB available"}'), /dev/shm $(df -m /dev/shm | awk 'NR==2{print $4 " MiB free"}'), $(df -m . | awk 'NR==2{print $4 " MiB free here"}')"
[ -f "$failed" ] && [ -f "$log" ] || { echo "ci digest: no ctest failure list in $b (the build or the set-up failed)"; exit 0; }
bad='fail|error|broken|sanitizer|leak|abort|signal|killed|expect_exit|exit code|timed out|timeout|no progress|wrong'
pass='^\[[0-9]+\] ok |[[:space:]]PASS$'
n=$(grep -c . "$failed")
echo "ci digest: $n test(s) failed; the reasons of the first three (their output's lines that look like one):"
head -n 3 "$failed" | while IFS=: read -r _ name; do
    [ -n "$name" ] || continue
    echo "ci digest: $name:"
    # the test's output: from its "Testing: NAME" header to the first "<end of output>"
    awk -v n="$name" '$0 ~ ("Testing: " n "$") {p = 1} p && /<end of output>/ {exit} p' "$log" |
        grep -Ev -- "$pass" | grep -Ei -- "$bad" | grep -v '^Command: ' | head -n 10 | sed 's/^/    /'
done < "$failed"
