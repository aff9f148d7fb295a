#!/usr/bin/env bash
# paper_test.sh CPBENCH WORKDIR SRCDIR — paper/make_figures.py on a small results file
# written by a simulator sweep: every figure exists as PNG and PDF, the tables name the
# backend and carry the published numbers.  Run by ctest (tests/mpi/harness.cmake).
set -euo pipefail
CPB=$1
W=$2
SRC=$3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "paper_test: FAIL: $*" >&2; exit 1; }
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,upipe,ring \
    --seq-list 128K,256K,512K,1M --mem-cap 12G --out "$W/r.h5" > "$W/sweep.txt" \
    || fail "sweep exited $? ($(tail -3 "$W/sweep.txt"))"
MPLBACKEND=Agg /usr/bin/python3 "$SRC/paper/make_figures.py" "$W/r.h5" --out "$W/out" --length 256K \
    || fail "make_figures.py exited $?"
ls -l "$W/out"
for kind in peak_memory throughput max_context memory_breakdown; do
  for ext in png pdf; do
    f=$(ls "$W/out"/*_"$kind.$ext" 2>/dev/null | head -1)
    [ -n "$f" ] && [ -s "$f" ] || fail "no $kind.$ext"
  done
done
head -c 8 "$(ls "$W/out"/*_peak_memory.png | head -1)" | od -c | grep -q "P   N   G" || fail "not a PNG"
grep -q "sim: simulator prediction" "$W/out/tables.md" || fail "tables.md does not name the backend"
grep -q "2320.47" "$W/out/tables.md" || fail "tables.md lacks the published ulysses 128K number"
grep -q "begin{tabular}" "$W/out/tables.tex" || fail "tables.tex is not LaTeX"
# a file that is not a results file is refused with a message
echo x > "$W/bad.h5"
if /usr/bin/python3 "$SRC/paper/make_figures.py" "$W/bad.h5" --out "$W/out2" 2> "$W/err.txt"; then
  fail "make_figures.py accepted a foreign file"
fi
# claims.py: one line per claim with one of the verdicts, claims.md written; the UPipe/Ulysses
# ratio claims have data once model-scope rows exist, the others say "no data"
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,upipe --scope model \
    --seq-list 128K,256K --out "$W/r.h5" > "$W/sweep2.txt" || fail "model-scope sweep exited $?"
/usr/bin/python3 "$SRC/paper/claims.py" "$W/r.h5" --out "$W/out/claims.md" > "$W/claims.txt" \
  || fail "claims.py exited $? ($(tail -3 "$W/claims.txt"))"
[ -s "$W/out/claims.md" ] || fail "no claims.md"
grep -q "^| claim | ours | paper | difference | verdict | why |" "$W/out/claims.md" || fail "claims.md has no table"
n=$(grep -c "^claim: " "$W/claims.txt")
[ "$n" -ge 10 ] || fail "only $n claim lines"
bad=$(grep "^claim: " "$W/claims.txt" | grep -v -E "\| (reproduced|explained|not reproduced|no data)( —|$)" || true)
[ -z "$bad" ] || fail "claim lines without a verdict: $bad"
grep -q "^claim: UPipe/Ulysses tokens/s, llama3-8b 8 GPUs at 128K | ours [0-9.]* (sim) | paper 0.983" "$W/claims.txt" \
  || fail "the 128K ratio claim has no number ($(grep 'at 128K' "$W/claims.txt" | head -2))"
grep -q "^claim: METP.*| no data" "$W/claims.txt" || fail "a claim without rows does not say no data"
echo "paper_test: ok"
