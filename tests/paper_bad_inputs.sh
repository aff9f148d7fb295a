#!/usr/bin/env bash
# paper_bad_inputs.sh CPBENCH WORKDIR SRCDIR — paper/make_figures.py and paper/claims.py on
# hostile files (issue 26 §9): a truncated, empty or text file, a directory, bytes that are
# not UTF-8 in a string column, all-negative lengths on the log axis, --out at a file.  Each
# must exit 2 with one line on stderr that names the file, and no traceback.
set -u
CPB=$1 W=$2 SRC=$3 PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export MPLBACKEND=Agg
"$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,ring --seq-list 128K,256K --out good.h5 \
    > sweep.txt || { echo "paper_bad_inputs: FAIL: the sweep exited $?"; exit 1; }
head -c 2000 good.h5 > truncated.h5
: > empty.h5
echo "my precious notes" > notes.txt
mkdir -p adir
cp good.h5 nonutf8.h5
$PY -c "import h5py; d=h5py.File('nonutf8.h5','r+')['runs']; r=d[0]; r['method']=b'\xff\xfering'; d[0]=r"
cp good.h5 negative.h5
$PY -c "import h5py; d=h5py.File('negative.h5','r+')['runs']; r=d[:]; r['seq_len']=-r['seq_len']; d[:]=r"
failed=0 n=0
# expect NAME NAMED-IN-MESSAGE COMMAND...: exit 2, one stderr line naming it, no traceback
expect() {
    local name=$1 named=$2
    shift 2
    n=$((n + 1))
    "$@" > "$name.out" 2> "$name.err"
    local rc=$? lines bad=""
    lines=$(wc -l < "$name.err")
    [ $rc -eq 2 ] || bad="exit $rc, expected 2"
    [ -z "$bad" ] && [ "$lines" -ne 1 ] && bad="$lines lines on stderr, expected 1"
    [ -z "$bad" ] && ! grep -qF -- "$named" "$name.err" && bad="the message does not name $named"
    grep -q "Traceback" "$name.err" && bad="a traceback"
    if [ -n "$bad" ]; then
        echo "FAIL $name: $bad"
        tail -n 4 "$name.err" | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "ok   $name: $(cat "$name.err")"
    fi
}
for s in make_figures claims; do
    out=figs
    [ $s = claims ] && out=figs/claims.md
    for f in truncated.h5 empty.h5 notes.txt adir nonutf8.h5 negative.h5; do
        expect "${s}_${f%.*}" "$f" $PY "$SRC/paper/$s.py" "$f" --out "$out"
    done
done
# --out at an existing file: the figures' directory is a file; claims.md's directory is a file
expect make_figures_out_file notes.txt $PY "$SRC/paper/make_figures.py" good.h5 --out notes.txt
expect claims_out_under_file notes.txt $PY "$SRC/paper/claims.py" good.h5 --out notes.txt/claims.md
expect claims_out_dir adir $PY "$SRC/paper/claims.py" good.h5 --out adir
cmp -s notes.txt <(echo "my precious notes") || { echo "FAIL notes.txt was changed"; failed=$((failed + 1)); }
# and the good file still draws
$PY "$SRC/paper/make_figures.py" good.h5 --out figs > ok.out 2>&1 || { echo "FAIL good.h5: $(tail -2 ok.out)"; failed=$((failed + 1)); }
echo "paper_bad_inputs: $n cases, $failed failed"
[ $failed -eq 0 ]
