#!/usr/bin/env bash
# stopped_rank.sh CPBENCH MPIEXEC WORKDIR — a rank stopped (SIGSTOP) in the middle of a cpu
# sweep: the watchdog (--timeout) of the other rank ends every rank with a clear message
# instead of waiting forever.  Run by ctest (tests/mpi/cli.cmake); the job gets a minute.
set -u
CPB=$(realpath "$1") MPIEXEC=$2 W=$3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "stopped_rank: FAIL: $*"; cat "$W/log" 2>/dev/null | tail -20; [ -n "${job:-}" ] && kill -9 -- -"$job" 2>/dev/null; exit 1; }
# a job of its own process group, so that the test can end all of it if it hangs
set -m
$MPIEXEC -np 2 --oversubscribe --allow-run-as-root --bind-to none "$CPB" sweep --backend cpu --model tiny \
  --method all --seq-list 1K,2K,4K,8K,16K --timeout 4 --out "$W/s.h5" > "$W/log" 2>&1 &
job=$!
set +m
# rank 1, once the sweep has begun
rank1=""
for i in $(seq 1 600); do
  if grep -q "^# cpbench sweep" "$W/log" 2>/dev/null; then
    for p in $(pgrep -f "cpbench sweep --backend cpu --model tiny"); do
      tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
    done
  fi
  [ -n "$rank1" ] && break
  sleep 0.1
done
[ -n "$rank1" ] || fail "rank 1 of the sweep not found"
kill -STOP "$rank1"
echo "stopped_rank: rank 1 (pid $rank1) stopped"
# the job must end by itself: the watchdog's 4 s and the launcher's clean-up
for i in $(seq 1 600); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  kill -CONT "$rank1"
  fail "the job still waits 60 s after a rank was stopped"
fi
wait "$job"
rc=$?
for i in $(seq 1 50); do [ -d /proc/$rank1 ] && ! grep -q "^[0-9]* ([^)]*) Z" /proc/$rank1/stat 2>/dev/null || break; sleep 0.1; done
if [ -d /proc/$rank1 ] && ! grep -q "^[0-9]* ([^)]*) Z" /proc/$rank1/stat 2>/dev/null; then echo "state: $(cat /proc/$rank1/stat)"; kill -9 "$rank1"; fail "the stopped rank outlived the job by 5 s"; fi
tail -n 8 "$W/log"
[ $rc -ne 0 ] || fail "exit 0 although a rank was stopped"
grep -q "no progress for [0-9]* s (--timeout 4) while .*ending every rank" "$W/log" || fail "no watchdog message"
echo "stopped_rank: ok (exit $rc)"
