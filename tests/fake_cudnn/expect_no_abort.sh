#!/bin/sh
# expect_no_abort.sh CODE PATTERN... -- CMD...: run CMD without core dumps; pass only if it
# exits with exactly CODE, prints every PATTERN (grep -E, on stdout or stderr), and shows no
# sign of an abort: no signal, no "terminate called" (an exception that crossed a C frame or
# a noexcept), no sanitizer report.  For the fake-cuDNN tests (fake_cudnn.cmake), where a
# cuDNN failure must be an error value, never an abort of the rank.
code=$1
shift
n=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    n=$((n + 1))
    eval "pat_$n=\$1"
    shift
done
[ "$1" = "--" ] && shift
ulimit -c 0
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
bad=0
if [ "$rc" -ne "$code" ]; then
    echo "expect_no_abort: exit code $rc, expected $code" >&2
    bad=1
fi
i=1
while [ $i -le $n ]; do
    eval "p=\$pat_$i"
    if ! printf '%s\n' "$out" | grep -Eq -- "$p"; then
        echo "expect_no_abort: output does not match '$p'" >&2
        bad=1
    fi
    i=$((i + 1))
done
abort='terminate called|Aborted|core dumped|exited on signal|signal [0-9]+ \(|ERROR: AddressSanitizer|runtime error:'
if printf '%s\n' "$out" | grep -Eq -- "$abort"; then
    echo "expect_no_abort: the output shows an abort:" >&2
    printf '%s\n' "$out" | grep -E -- "$abort" | head -5 >&2
    bad=1
fi
exit $bad
