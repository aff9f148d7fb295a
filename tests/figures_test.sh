#!/usr/bin/env bash
# figures_test.sh CPBENCH WORKDIR SRCDIR — every figure kind of paper/make_figures.py from a
# small results file written here by cpbench on the simulator (issue 25 §3): peak memory (with
# OOMs), throughput (with the published series), throughput relative to Ulysses, longest
# context, the memory breakdown at layer scope (tags) and at model scope (the peak's buckets,
# adding up to the peak; a bucket column a later schema adds slots in), and the --plan
# frontier once per plan invocation (two lengths and a --max-context plan appended to one
# file).  Each must exist as a non-empty PNG and PDF, with no warning from matplotlib or
# numpy; tables.md has a throughput, an MFU and a longest-context table for a --model-config
# model too.  Run by ctest (tests/mpi/harness.cmake).
set -euo pipefail
CPB=$1
W=$2
SRC=$3
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "figures_test: FAIL: $*" >&2; exit 1; }
export MPLBACKEND=Agg
run() { "$@" > "$W/cmd.txt" 2>&1 || fail "$* exited $? ($(tail -3 "$W/cmd.txt"))"; }

# one attention layer, every method, out of memory past 1M at 12 GiB
run "$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method all --seq-list 256K,512K,1M,2M --mem-cap 12G \
    --out "$W/r.h5"
# the whole model, where the published numbers are drawn beside ours
run "$CPB" sweep --backend sim --gpus 8 --model llama3-8b --method ulysses,ring,upipe,fpdt --scope model \
    --seq-list 128K,256K --out "$W/r.h5"
# a model read from a config.json (no published numbers, its own tables)
run "$CPB" sweep --backend sim --gpus 8 --model-config "$SRC/tests/data/hf/Llama-3.2-1B.json" \
    --method ulysses,ring,upipe --scope model --seq-list 256K,512K,2M --mem-cap 20G --out "$W/r.h5"
# three plans appended to one file: 256K, 512K and the longest context
run "$CPB" plan --model llama3-8b --gpus 8 --scope layer --seq 256K --out "$W/plan.h5"
run "$CPB" plan --model llama3-8b --gpus 8 --scope layer --seq 512K --out "$W/plan.h5"
run "$CPB" plan --model llama3-8b --gpus 8 --scope layer --max-context --seq-stop 1M --mem-cap 8G --out "$W/plan.h5"

# make_figures.py with every warning shown once (-W always), and none may come
$PY -W always "$SRC/paper/make_figures.py" "$W/r.h5" --out "$W/out" > "$W/figs.txt" 2> "$W/figs.err" \
  || fail "make_figures.py exited $? ($(tail -3 "$W/figs.err"))"
$PY -W always "$SRC/paper/make_figures.py" --plan "$W/plan.h5" --out "$W/plan" > "$W/plan.txt" 2> "$W/plan.err" \
  || fail "make_figures.py --plan exited $? ($(tail -3 "$W/plan.err"))"
for e in figs plan; do
  ! grep -qi "warning" "$W/$e.err" || fail "warnings from make_figures.py: $(grep -i warning "$W/$e.err" | head -3)"
done
nonempty() {  # PATTERN COUNT: COUNT or more files match, as PNG and PDF, each non-empty
  local pat=$1 want=$2 ext n f
  for ext in png pdf; do
    n=0
    for f in $pat.$ext; do
      [ -s "$f" ] || continue
      n=$((n + 1))
    done
    [ $n -ge "$want" ] || fail "$n of $want $(basename "$pat").$ext"
  done
}
L="$W/out/llama3-8b_sim_h100-sxm_C8_layer_12G"
M="$W/out/llama3-8b_sim_h100-sxm_C8_model_*"
for kind in peak_memory throughput throughput_ratio max_context memory_breakdown; do
  nonempty "${L}_$kind" 1
  nonempty "${M}_$kind" 1
  nonempty "$W/out/Llama-3.2-1B*_$kind" 1
done
nonempty "$W/plan/*_256K_plan_frontier" 1
nonempty "$W/plan/*_512K_plan_frontier" 1
nonempty "$W/plan/*_maxctx_plan_frontier" 1
n=$(ls "$W/plan"/*_plan_frontier.png | wc -l)
[ "$n" -eq 3 ] || fail "$n plan figures for three plan invocations"
head -c 8 "${L}_peak_memory.png" | od -c | grep -q "P   N   G" || fail "not a PNG"

# tables.md: throughput, MFU and longest context for every group, the custom model's too
T="$W/out/tables.md"
$PY - "$T" <<'PYEOF' || fail "tables.md lacks a table"
import sys
md = open(sys.argv[1]).read()
parts = md.split("\n## ")[1:]
assert len(parts) == 3, "%d groups" % len(parts)
for p in parts:
    name = p.splitlines()[0]
    for t in ("### Peak device memory (GiB)", "### Tokens/s per GPU (sim)", "causal / megatron (%)",
              "### Longest context"):
        assert t in p, "%s: no %r" % (name, t)
    if "model scope" in name:
        assert "in its buckets" in p and "| model states | attention activations | other |" in p, name
custom = [p for p in parts if p.startswith("Llama-3.2-1B")]
assert custom and "| ring | 2M |" not in custom[0], "the custom model's longest-context table"
print("tables ok")
PYEOF

# the buckets: they add up to the peak (schema 9: the fixed per-GPU memory is the fourth); a
# fifth bucket column (a later schema's) is read as one without a change to the script
$PY - "$W/r.h5" "$W/x.h5" "$SRC/paper" "$W/x" <<'PYEOF' || fail "the buckets"
import sys, warnings
import h5py, numpy as np
sys.path.insert(0, sys.argv[3])
import make_figures as mf
rows, tags = mf.read_runs([sys.argv[1]])
model = [r for r in rows if r["scope"] == "model" and r["status"] == "ok"]
cols = mf.bucket_columns(model)
assert cols == ["model_state_bytes", "attn_act_bytes", "other_bytes", "fixed_bytes"], cols
assert all(sum(int(r[c]) for c in cols) == int(r["peak_bytes"]) for r in model)
# a copy with extra_gpu_bytes after fixed_bytes, taken out of other
with h5py.File(sys.argv[1], "r") as f:
    runs = f["runs"][:]
    attrs = dict(f.attrs)
names = list(runs.dtype.names)
i = names.index("fixed_bytes") + 1
fields = [(n, runs.dtype.fields[n][0]) for n in names]
dt = np.dtype(fields[:i] + [("extra_gpu_bytes", "<i8")] + fields[i:])
new = np.zeros(runs.shape, dtype=dt)
for n in names:
    new[n] = runs[n]
fixed = np.where(runs["scope"] == b"model", np.minimum(runs["other_bytes"], 1 << 30), 0)
new["extra_gpu_bytes"] = fixed
new["other_bytes"] = runs["other_bytes"] - fixed
with h5py.File(sys.argv[2], "w") as f:
    for k, v in attrs.items():
        f.attrs[k] = v
    f.create_dataset("runs", data=new)
rows, _ = mf.read_runs([sys.argv[2]])
model = [r for r in rows if r["scope"] == "model" and r["status"] == "ok"]
cols = mf.bucket_columns(model)
assert cols == ["model_state_bytes", "attn_act_bytes", "other_bytes", "fixed_bytes", "extra_gpu_bytes"], cols
with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert mf.main([sys.argv[2], "--out", sys.argv[4]]) == 0
md = open(sys.argv[4] + "/tables.md").read()
assert "| model states | attention activations | other | fixed | extra gpu |" in md, "no fifth bucket column: " + md
# plans: one group per invocation
rows, _ = mf.read_runs([sys.argv[1].replace("r.h5", "plan.h5")])
g = mf.plan_groups(mf.latest(rows))
assert sorted(k[-1][0] for k in g) == ["max", "seq", "seq"], [k[-1] for k in g]
print("buckets and plan groups ok")
PYEOF
nonempty "$W/x/llama3-8b_sim_h100-sxm_C8_model_*_memory_breakdown" 1
echo "figures_test: ok ($(ls "$W/out" "$W/plan" | grep -c '\.png$') PNGs)"
