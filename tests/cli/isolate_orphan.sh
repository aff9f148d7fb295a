#!/usr/bin/env bash
# isolate_orphan.sh CPBENCH WORKDIR — `sweep --isolate` killed with SIGKILL while a trial
# runs: the trial (a child `mpirun -np 2 cpbench run`) dies with it, its temporary folder is
# removed, and the results file is free for the next writer at once (no orphan holds its
# lock).  Run by ctest (tests/mpi/cli.cmake).
set -u
CPB=$(realpath "$1") W=$2
rm -rf "$W" && mkdir -p "$W/tmp"
export TMPDIR=$W/tmp
# on failure, end what this test started: the sweep and the trials running in its own TMPDIR
fail() { echo "isolate_orphan: FAIL: $*"; for p in $(pgrep -f "$W/tmp/cpbench-isolate-"); do kill -9 "$p"; done 2>/dev/null; exit 1; }
"$CPB" sweep --backend cpu --isolate --gpus 2 --model tiny --method all --seq-list 1K,2K,4K,8K \
  --out "$W/iso.h5" > "$W/log" 2>&1 &
sweep=$!
# a trial running in its folder
for i in $(seq 1 600); do
  pgrep -f "$W/tmp/cpbench-isolate-" > /dev/null && ls "$W"/tmp/cpbench-isolate-* > /dev/null 2>&1 && break
  sleep 0.1
done
pgrep -f "$W/tmp/cpbench-isolate-" > /dev/null || fail "no isolated trial started: $(tail -3 "$W/log")"
kill -9 "$sweep"
wait "$sweep" 2>/dev/null
# the trial and its folder go within a few seconds
for i in $(seq 1 600); do
  ! pgrep -f "$W/tmp/cpbench-isolate-" > /dev/null && ! ls -d "$W"/tmp/cpbench-isolate-* > /dev/null 2>&1 && break
  sleep 0.1
done
pgrep -af "$W/tmp/cpbench-isolate-" && fail "the isolated trial outlived its sweep by 60 s"
ls -d "$W"/tmp/cpbench-isolate-* > /dev/null 2>&1 && fail "left behind in TMPDIR: $(ls -R "$W/tmp" | head)"
# no orphan holds the results file: the next writer appends at once
"$CPB" sweep --backend sim --gpus 2 --model tiny --method ring --seq-list 256 --out "$W/iso.h5" > "$W/log2" 2>&1 \
  || fail "the results file is not free after the kill: $(tail -3 "$W/log2")"
echo "isolate_orphan: ok"
