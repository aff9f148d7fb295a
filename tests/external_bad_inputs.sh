#!/usr/bin/env bash
# external_bad_inputs.sh CPBENCH WORKDIR SRCDIR — paper/external.py on malformed tables
# (issue 24 §3): a published value that is not a number, a row with a field too many, an
# unknown quantity, a unit that does not fit its quantity, a command that is not cpbench's, a
# max_context row with a run command, a basis on a row that is not peak_memory or not one of
# the bases, a header without a column, a duplicate id, a file that
# is not UTF-8, an unknown --rows id.  Each must exit 2 with one line on stderr naming the
# file (and the line where there is one), no traceback, and no report written.
set -u
CPB=$1 W=$2 SRC=$3 PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
GOOD="$SRC/paper/external.csv"
head_and() { # NAME SED: the good table's comments, header and first row, edited by SED
    grep -v '^#' "$GOOD" | head -n 2 | sed -e "$2" > "$1.csv"
}
head_and nonnumber '2s/,500000,lower,/,500K,lower,/'
head_and extrafield '2s/$/,surplus/'
head_and quantity '2s/,max_context,/,longest,/'
head_and unit '2s/,tokens,/,GiB,/'
head_and command '2s/cpbench sweep/python sweep/'
head_and runforsweep '2s/cpbench sweep/cpbench run/'
head_and header '1s/,reading,/,note,/'
{ grep -v '^#' "$GOOD" | head -n 2; grep -v '^#' "$GOOD" | sed -n 2p; } > duplicate.csv
{ grep -v '^#' "$GOOD" | head -n 1; printf 'x\xff\xfe,broken\n'; } > notutf8.csv
# basis: only on peak_memory rows, and one of allocated, reserved, nvidia-smi
head_and basisonmax '2s/,$/,reserved/'
{ grep -v '^#' "$GOOD" | head -n 1; grep '^alst-8b-1-hf-baseline-mem,' "$GOOD" | sed 's/,nvidia-smi$/,smi/'; } > basis.csv
failed=0 n=0
expect() { # NAME NAMED-IN-MESSAGE ARGS...
    local name=$1 named=$2
    shift 2
    n=$((n + 1))
    $PY "$SRC/paper/external.py" --cpbench "$CPB" --out "$name.md" "$@" > "$name.out" 2> "$name.err"
    local rc=$? bad=""
    [ $rc -eq 2 ] || bad="exit $rc, expected 2"
    [ -z "$bad" ] && [ "$(wc -l < "$name.err")" -ne 1 ] && bad="$(wc -l < "$name.err") lines on stderr, expected 1"
    [ -z "$bad" ] && ! grep -qF -- "$named" "$name.err" && bad="the message does not name $named"
    grep -q Traceback "$name.err" && bad="a traceback"
    [ -e "$name.md" ] && bad="a report was written"
    if [ -n "$bad" ]; then
        echo "FAIL $name: $bad"; sed 's/^/    /' "$name.err" | tail -n 4; failed=$((failed + 1))
    else
        echo "ok   $name: $(cat "$name.err")"
    fi
}
for c in nonnumber extrafield quantity unit command runforsweep basisonmax basis; do
    expect "$c" "$c.csv line 2" --csv "$c.csv"
done
expect header "header.csv line 1" --csv header.csv
expect duplicate "duplicate.csv line 3" --csv duplicate.csv
expect notutf8 notutf8.csv --csv notutf8.csv
expect rows "no-such-row" --rows alst-8b-8,no-such-row
echo "external_bad_inputs: $n cases, $failed failed"
[ $failed -eq 0 ]
