# reason_patterns.sh: sourced by tests/mpi/failures_first.sh and .ci/failed_digest.sh, so both
# agree on which output lines report a passed check and which look like a failure's reason.
# pass: "[r] ok ..." of selftest, "... PASS" of verify
pass='^\[[0-9]+\] ok |[[:space:]]PASS$'
# bad: an error, a FAIL, a sanitizer report, a broken rule, a signal, a timeout
bad='fail|error|broken|sanitizer|leak|abort|signal|killed|segmentation|core dumped|terminate|assert|expect_exit|exit code|timed out|timeout|no progress|wrong'
