#!/usr/bin/env bash
# run_cases.sh CPBENCH MPIEXEC WORKDIR CASES [NAME-PATTERN] — the table-driven CLI test: every line of
# CASES (format in why_cases.txt) is a command with the exit code it must end with, a
# pattern its output (stdout and stderr) must match, one it must not, and the files it must
# leave as they were (by checksum) or must not create.  Fixtures in WORKDIR: results.h5 (a
# results file), notes.txt (a text file), fifo (a FIFO), before every case.
set -u
CPB=$(realpath "$1") MPIEXEC=$2 W=$3 CASES=$(realpath "$4")
DATA=$(realpath "$(dirname "$0")/../data") ONLY=${5:-}
MPIRUN="$MPIEXEC --oversubscribe --allow-run-as-root --bind-to none"
PY=/usr/bin/python3
export CPB MPIRUN W PY DATA
rm -rf "$W" && mkdir -p "$W"
fixtures() {
    rm -f "$W/fifo" "$W/notes.txt"
    [ -f "$W/results.orig.h5" ] || "$CPB" run --backend sim --method ulysses --model tiny --seq 256 --gpus 2 \
        --out "$W/results.orig.h5" > /dev/null || { echo "run_cases: cannot make the fixture results file"; exit 1; }
    cp "$W/results.orig.h5" "$W/results.h5"
    echo "my precious notes" > "$W/notes.txt"
    mkfifo "$W/fifo"
}
failed=0 n=0
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    IFS='|' read -r name code want avoid files cmd <<< "$line"
    name=$(echo $name) code=$(echo $code) want=$(echo "$want" | sed 's/^ *//; s/ *$//')
    # NAME-PATTERN: the cases whose name matches it (grep -E), or with a leading '!' the others
    case "$ONLY" in
        '') ;;
        '!'*) printf '%s\n' "$name" | grep -Eq -- "${ONLY#!}" && continue ;;
        *) ! printf '%s\n' "$name" | grep -Eq -- "$ONLY" && continue ;;
    esac
    avoid=$(echo "$avoid" | sed 's/^ *//; s/ *$//') files=$(echo $files)
    n=$((n + 1))
    fixtures
    declare -A sum=()
    for f in ${files//,/ }; do
        case "$f" in -) ;; absent:*) rm -f "$W/${f#absent:}" ;; *) sum[$f]=$(cksum < "$W/$f") ;; esac
    done
    t0=$SECONDS
    out=$(cd "$W" && timeout 120 bash -c "$cmd" 2>&1 < /dev/null)
    rc=$?
    dt=$((SECONDS - t0))
    bad=""
    [ "$rc" -eq "$code" ] || bad="exit $rc, expected $code"
    [ -z "$bad" ] && ! printf '%s\n' "$out" | grep -Eq -- "$want" && bad="output does not match '$want'"
    [ -z "$bad" ] && [ "$avoid" != "-" ] && printf '%s\n' "$out" | grep -Eq -- "$avoid" && bad="output matches '$avoid'"
    for f in ${files//,/ }; do
        case "$f" in
            -) ;;
            absent:*) [ -e "$W/${f#absent:}" ] && bad="${bad:+$bad; }${f#absent:} was written" ;;
            *) [ "$(cksum < "$W/$f")" = "${sum[$f]}" ] || bad="${bad:+$bad; }$f was changed" ;;
        esac
    done
    unset sum
    if [ -n "$bad" ]; then
        echo "FAIL $name: $bad"
        printf '%s\n' "$out" | tail -n 15 | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "ok   $name (${dt} s)"
    fi
done < "$CASES"
echo "run_cases: $n cases, $failed failed"
[ "$failed" -eq 0 ] && [ "$n" -gt 0 ]
