#!/bin/sh
# failures_first.sh CMD...: run CMD and print its output without the lines that report a
# passed check ("[r] ok ..." of selftest, "... PASS" of verify); when CMD failed, first the
# lines that look like the reason (an error, a FAIL, a sanitizer report, a broken rule, a
# signal).  The stand-in tests print hundreds of passed checks before such a reason, and CI
# shows only the start and the end of a failing test's output; this puts the reason in
# view.  The exit code is CMD's; ctest's FAIL_REGULAR_EXPRESSION still sees every line that
# is not a passed check.
out=$(mktemp "${TMPDIR:-/tmp}/cpb_failures_first.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
trap 'exit 143' TERM INT
"$@" >"$out" 2>&1
rc=$?
. "$(dirname "$0")/reason_patterns.sh"
if [ "$rc" -ne 0 ]; then
    echo "failures_first: exit code $rc; the lines that look like the reason:"
    grep -Eiv -- "$pass" "$out" | grep -Ei -- "$bad" | head -n 60
    echo "failures_first: the whole output, passed checks left out:"
fi
grep -Ev -- "$pass" "$out"
echo "failures_first: $(grep -Ec -- "$pass" "$out") passed-check lines not shown; exit code $rc"
exit $rc
