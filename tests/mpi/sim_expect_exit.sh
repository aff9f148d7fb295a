#!/bin/sh
# sim_expect_exit.sh CODE COMMAND... — run COMMAND; succeed only if it exits with CODE
# (ctest's WILL_FAIL cannot tell exit 2, "bad input", from a crash).
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
    echo "expected exit code $want, got $got: $*" >&2
    exit 1
fi
exit 0
