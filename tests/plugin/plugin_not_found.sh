#!/bin/sh
# plugin_not_found.sh CPBENCH DIR: a copy of cpbench with no plugin beside it: --backend cuda
# must refuse with exit 2 and say where it looked (or that cuda was not built), and list
# must still work.
set -u
rm -rf "$2" && mkdir -p "$2" && cp "$1" "$2/cpbench" || exit 1
"$2/cpbench" list > "$2/list.txt" 2>&1 || { cat "$2/list.txt"; exit 1; }
grep -E '^  cuda ' "$2/list.txt"
out=$(env -u CPB_CUDA_PLUGIN "$2/cpbench" run --backend cuda --method ulysses --model tiny --seq 64 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 2 ] || { echo "plugin_not_found: exit $rc, expected 2" >&2; exit 1; }
echo "$out" | grep -Eq "neither beside the cpbench executable \($2\) nor in $2/../lib|not available in this build" ||
    { echo "plugin_not_found: the message does not say where the plugin was looked for" >&2; exit 1; }
