#!/bin/sh
# expect_exit.sh CODE FILE PATTERN -- CMD...: run CMD; pass only if it exits with exactly
# CODE, prints PATTERN (a grep -E pattern, on stdout or stderr), and FILE does not exist
# afterwards (use "-" for no file).  For the refusal tests of tests/mpi/cli.cmake and
# sim.cmake (ctest's WILL_FAIL cannot tell exit 2, "bad input", from a crash).
code=$1 file=$2 pattern=$3
shift 3
[ "$1" = "--" ] && shift
[ "$file" != "-" ] && rm -f "$file"
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
    echo "expect_exit: exit code $rc, expected $code" >&2
    exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    echo "expect_exit: output does not match '$pattern'" >&2
    exit 1
fi
if [ "$file" != "-" ] && [ -e "$file" ]; then
    echo "expect_exit: '$file' was written by a command that refused its arguments" >&2
    exit 1
fi
exit 0
