#!/usr/bin/env bash
# external_test.sh CPBENCH WORKDIR SRCDIR — paper/external.py end to end on three rows of
# paper/external.csv (issue 24 §3): a longest-context sweep, a peak-memory run on a
# --model-config model, a throughput run.  The report must have every column, each row
# (predicted, or listed as not expressible with the command's own error), the summary per
# quantity and the section of rows not expressible; no row may be an error.  Once with the
# commands as written (rows whose parts this build lacks are listed, never dropped), once with
# the documented stand-in for FlashAttention 2 so that the numeric path (prediction, ratio,
# verdict, figure) is taken whether or not --attn fa2 exists yet.  A few seconds.
set -u
CPB=$1 W=$2 SRC=$3 PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W" || exit 1
export MPLBACKEND=Agg
ROWS=alst-8b-8,hf-q4b-sp4-64k-mem,tt-8b-cp8
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

check_report() { # REPORT: the columns, the three rows, the summary and the not-expressible section
    local md=$1 col id
    [ -s "$md" ] || { fail "$md was not written"; return; }
    for col in id source quantity published bound basis unit predicted ratio verdict note command; do
        head -n 12 "$md" | grep -E "^\| id \|" | grep -qE "\| $col \|" || fail "$md: no column '$col' in the table's header"
    done
    for id in ${ROWS//,/ }; do
        grep -qE "^\| $id \|" "$md" || fail "$md: row $id missing"
    done
    grep -q "^## Ratios per quantity" "$md" || fail "$md: no summary per quantity"
    for q in max_context peak_memory throughput tflops mfu; do
        grep -qE "^\| $q \|" "$md" || fail "$md: the summary has no line for $q"
    done
    grep -q "^## Not expressible here" "$md" || fail "$md: no section of rows not expressible"
    grep -qE "\| error: " "$md" && fail "$md: a row is an error: $(grep -E '\| error: ' "$md" | head -1)"
    # a row not predicted is listed with cpbench's own message, never silently
    if grep -qE "not expressible here: *\|" "$md"; then fail "$md: a not-expressible row without its reason"; fi
}

# 1. as written
$PY "$SRC/paper/external.py" --cpbench "$CPB" --rows $ROWS --out "$W/plain/external.md" > "$W/plain.out" 2>&1 \
    || fail "external.py exited $? (plain); $(tail -n 3 "$W/plain.out")"
check_report "$W/plain/external.md"

# 2. with the stand-in: at least the sweep and the memory row predict, with numeric ratios
$PY "$SRC/paper/external.py" --cpbench "$CPB" --rows $ROWS --out "$W/stand-in/external.md" \
    --stand-in '--attn fa2=>--attn cudnn' > "$W/stand-in.out" 2>&1 \
    || fail "external.py exited $? (stand-in); $(tail -n 3 "$W/stand-in.out")"
check_report "$W/stand-in/external.md"
for id in alst-8b-8 hf-q4b-sp4-64k-mem; do
    line=$(grep -E "^\| $id \|" "$W/stand-in/external.md")
    # columns: id source quantity published bound basis unit predicted ratio verdict
    ratio=$(echo "$line" | awk -F'|' '{gsub(/ /, "", $10); print $10}')
    echo "$ratio" | grep -qE '^[0-9]+\.[0-9]+$' || fail "$id: ratio '$ratio' is not a number"
    echo "$line" | grep -q "\[stand-in\]" || fail "$id: the stand-in is not marked"
done
[ -s "$W/stand-in/external.png" ] || fail "no figure external.png beside the report"
# the history: --record appends every row under its label, and the next report shows it
$PY "$SRC/paper/external.py" --cpbench "$CPB" --rows $ROWS --out "$W/hist/external.md" --history "$W/h.csv" \
    --record "test label" --stand-in '--attn fa2=>--attn cudnn' > "$W/hist.out" 2>&1 || fail "--record exited $?"
[ "$(grep -c '^test label,' "$W/h.csv")" = 3 ] || fail "the history has not 3 rows under the label"
grep -q "ratio at 'test label'" "$W/hist/external.md" || fail "the report has no column of the recorded label"

echo "external_test: $failed failed"
[ $failed -eq 0 ]
