#!/usr/bin/env python3
"""Figures and tables of the paper from cpbench results files (HDF5, results/README.md).

    python3 paper/make_figures.py results/*.h5 --out paper/out [--length 1M]
    python3 paper/make_figures.py --plan plan.h5 --out paper/out    (`cpbench plan --out`)

For every group of rows sharing (model, backend, gpu, world size, scope) it writes, as PNG
and PDF:
  <group>_peak_memory      peak device memory vs context length, one line per method
  <group>_throughput       tokens/s per GPU vs context length (model scope: with the
                           published numbers of arXiv 2602.21196 beside ours)
  <group>_max_context      the longest context that fit, per method (bar)
  <group>_memory_breakdown device memory by allocation tag at the peak, at one length
and tables.md / tables.tex: our tokens/s per GPU beside the published ones
(paper/published.csv), peak memory per method and length, and the maximum context.

With --plan, the files are `cpbench plan --out` results and each plan (model, GPUs, profile,
scope, framework) gets <group>_plan_frontier: every candidate that fits, peak memory against
tokens/s per GPU (for a --max-context plan: its longest context against tokens/s there), the
Pareto frontier drawn through them and the recommendation marked: the fastest that fits
(ties: the smaller peak), or with --max-context the longest context (ties: the faster), the
rule of `cpbench plan` (driver/plan.h).

Every figure and table says which backend produced its numbers: `sim` rows are predictions
of the simulator (exact tracked memory, modelled time), `cpu` and `cuda` rows measurements.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

try:
    import h5py
except ImportError:  # pragma: no cover - set-up problem, reported clearly
    sys.exit("make_figures.py: h5py is missing; run scripts/setup.sh (installs python3-h5py)")

GIB = float(1 << 30)
HERE = os.path.dirname(os.path.abspath(__file__))
METHOD_ORDER = ["ulysses", "ring", "upipe", "hupipe", "fpdt", "offload", "metp", "tp", "usp", "native"]
BACKEND_WORDS = {
    "sim": "simulator prediction (not a measurement)",
    "cuda": "measured on GPUs",
    "cpu": "measured on CPUs (correctness scale)",
}


class InputError(Exception):
    """A file given to the script that it cannot use: reported as one line naming the file and
    the problem, exit 2 (bad input, as cpbench's), never a traceback."""


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def check_input(path, what="results file"):
    """path names a regular, non-empty file, checked before it is opened (a directory, a FIFO,
    a device or an empty file is no results file)"""
    if not os.path.exists(path):
        raise InputError("%s: no such %s (run `make reproduce` or `cpbench sweep --out %s`)" % (path, what, path))
    if not os.path.isfile(path):
        raise InputError("%s: not a regular file (%s): give a %s" % (
            path, "a directory" if os.path.isdir(path) else "a FIFO, device or socket", what))
    if os.path.getsize(path) == 0:
        raise InputError("%s: an empty file, not a %s" % (path, what))


def first_line(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


# columns drawn on a logarithmic axis: a value there must be a positive number (zero only
# where the figure leaves such rows out); a row of a cpbench file never holds another
LOG_COLUMNS = ("seq_len", "tokens_per_s_per_gpu")


def check_row(path, i, d):
    for c in LOG_COLUMNS:
        if c not in d:
            continue
        try:
            v = float(d[c])
        except (TypeError, ValueError):
            raise InputError("%s: row %d: column %s is not a number" % (path, i, c))
        if not np.isfinite(v) or v < 0 or (c == "seq_len" and v == 0):
            raise InputError("%s: row %d: column %s holds %r, which a logarithmic axis cannot show: the file is "
                             "damaged or was not written by cpbench" % (path, i, c, d[c]))


def size_label(n):
    """131072 -> 128K, 3145728 -> 3M, 3407872 -> 3.25M"""
    n = int(n)
    for div, suf in ((1 << 20, "M"), (1 << 10, "K")):
        if n >= div:
            v = n / div
            return ("%d%s" % (v, suf)) if v == int(v) else ("%.3g%s" % (v, suf))
    return str(n)


def parse_size(s):
    s = s.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def base_method(label):
    """'fpdt/pipelined @deepspeed' -> 'fpdt' (the published tables name the base method)"""
    return label.split(" [")[0].split(" @")[0].split("/")[0]


def variant(r):
    """a method's label with the options that change its schedule or setup: fpdt's
    --fpdt-impl when not DeepSpeed's (the default), the model scope's --framework when not
    torchtitan (the default), --attn when not auto"""
    label = r["method"]
    impl = r.get("fpdt_impl", "") or ""
    if label == "fpdt" and impl not in ("", "deepspeed"):
        label += "/" + impl
    fw = r.get("framework", "") or ""
    if fw not in ("", "torchtitan"):
        label += " @" + fw
    # --attn when not the default (auto: cuDNN wherever it serves a call)
    attn = str(r.get("attn", "") or "")
    if attn not in ("", "auto"):
        label += " [attn %s]" % attn
    return label


def method_key(m):
    b = base_method(m)
    return (METHOD_ORDER.index(b) if b in METHOD_ORDER else len(METHOD_ORDER), m)


# ---------------------------------------------------------------- reading


def read_runs(paths):
    """All rows of all files as dicts (str columns decoded); later files win on duplicates.
    A file that is not a readable cpbench results file raises InputError naming it."""
    rows, tags = [], None
    for path in paths:
        check_input(path)
        try:
            f = h5py.File(path, "r")
        except (OSError, ValueError) as e:
            raise InputError("%s: not an HDF5 file, or a damaged one (truncated?): %s" % (path, first_line(e)))
        with f:
            try:
                if text(f.attrs.get("cpbench_schema", b"")) != "cpbench-results" or "runs" not in f:
                    raise InputError("%s is not a cpbench results file (no cpbench_schema attribute or no /runs "
                                     "table)" % path)
                runs = f["runs"][:]
                if runs.dtype.names is None or runs.ndim != 1:
                    raise InputError("%s: /runs is not a table of rows" % path)
                if "at_peak_tags" in f["runs"].attrs:
                    tags = text(f["runs"].attrs["at_peak_tags"]).split(",")
            except UnicodeDecodeError:
                raise InputError("%s: an attribute holds bytes that are not UTF-8 text: the file is damaged" % path)
            except (OSError, KeyError, ValueError, TypeError) as e:
                raise InputError("%s: damaged, HDF5 cannot read it: %s" % (path, first_line(e)))
            for i, r in enumerate(runs):
                d = {}
                for name in runs.dtype.names:
                    v = r[name]
                    try:
                        d[name] = text(v) if isinstance(v, bytes) else v
                    except UnicodeDecodeError:
                        raise InputError("%s: row %d: column %s holds bytes that are not UTF-8 text: the file is "
                                         "damaged or was not written by cpbench" % (path, i, name))
                if not d.get("status"):
                    continue  # the trace of an append that failed part-way: not a row (results/README.md)
                if d["status"] == "skipped":
                    d["status"] = "refused"  # the name before schema 4
                check_row(path, i, d)
                d["file"] = path
                rows.append(d)
    return rows, tags


def check_out_dir(out):
    """--out names a directory, or nothing yet (it is made)"""
    if os.path.exists(out) and not os.path.isdir(out):
        raise InputError("--out %s: exists and is not a directory (the figures are written into a directory): "
                         "give a directory" % out)
    parent = os.path.dirname(os.path.abspath(out))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise InputError("--out %s: %s is a file, not a directory" % (out, parent))


# the knob columns follow the fixed ones, the last of which is dw_norm (results/README.md)
LAST_FIXED_COLUMN = "dw_norm"
# knobs that describe the setup, not a choice of the run (cpb_knob.setup)
SETUP_KNOBS = ("framework", "host_ram_bytes",
               # the training setup's parts (driver/model_scope_setup.c)
               "zero", "optimizer", "param_offload", "master_dtype", "grad_dtype", "ckpt", "ckpt_offload",
               "tiled_mlp", "fused_loss", "linear_dtype", "micro_batch", "grad_accum", "dp", "shard_group")


def knob_columns(r):
    names = list(r.keys())
    if LAST_FIXED_COLUMN not in names:
        return []
    i = names.index(LAST_FIXED_COLUMN) + 1
    return [n for n in names[i:] if n != "file"]


def point_key(r):
    return (r["method"], r["model"], r["backend"], r["gpu"], r["scope"], int(r["world_size"]),
            int(r["seq_len"]), r.get("dtype", ""), r.get("options", "")) + tuple(str(r[k]) for k in knob_columns(r))


def latest(rows):
    """One row per trial point: the last one written (a rerun supersedes)."""
    last = {}
    for r in rows:
        last[point_key(r)] = r
    return list(last.values())


def groups_of(rows):
    """rows by (model, backend, gpu, world size, scope, device capacity in GiB); rows without a
    capacity (refused, error) join every group of their kind"""
    g = defaultdict(list)
    loose = []
    for r in rows:
        base = (r["model"], r["backend"], r["gpu"], int(r["world_size"]), r["scope"])
        if r["capacity_bytes"] > 0:
            g[base + (round(r["capacity_bytes"] / GIB, 1),)].append(r)
        else:
            loose.append((base, r))
    for base, r in loose:
        keys = [k for k in g if k[:5] == base] or [base + (0.0,)]
        for k in keys:
            g[k].append(r)
    return g


def group_name(key):
    model, backend, gpu, C, scope, cap = key
    return "%s_%s_%s_C%d_%s_%gG" % (model, backend, gpu.replace(" ", "-"), C, scope, cap)


def group_title(key):
    model, backend, gpu, C, scope, cap = key
    return "%s, %d x %s (%g GiB usable), %s scope — %s: %s" % (
        model, C, gpu, cap, scope, backend, BACKEND_WORDS.get(backend, backend))


def by_method(rows):
    m = defaultdict(list)
    for r in rows:
        m[variant(r)].append(r)
    for v in m.values():
        v.sort(key=lambda r: int(r["seq_len"]))
    return dict(sorted(m.items(), key=lambda kv: method_key(kv[0])))


def read_published(path):
    pub = []
    if not path or not os.path.exists(path):
        return pub
    check_input(path, "published-numbers CSV")
    try:
        with open(path, encoding="utf-8") as f:
            lines = [l for l in f if not l.startswith("#")]
        for r in csv.DictReader(lines):
            pub.append(r)
    except (UnicodeDecodeError, csv.Error) as e:
        raise InputError("%s: not a CSV of published numbers: %s" % (path, first_line(e)))
    return pub


# ---------------------------------------------------------------- figures


def save(fig, out, name):
    paths = []
    for ext in ("png", "pdf"):
        p = os.path.join(out, "%s.%s" % (name, ext))
        fig.savefig(p, dpi=130, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def log2_axis(ax, lengths):
    ax.set_xscale("log", base=2)
    ticks = sorted(set(lengths))
    if len(ticks) > 12:  # keep the powers of two and the paper's 3M, 5M
        ticks = [t for t in ticks if (t & (t - 1)) == 0 or t in (3 << 20, 5 << 20)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45)
    ax.set_xlabel("context length (tokens)")
    ax.grid(True, which="major", alpha=0.3)


def fig_peak_memory(key, rows, out):
    ms = by_method(rows)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    lengths, caps = [], set()
    for m, rs in ms.items():
        ok = [r for r in rs if r["status"] == "ok"]
        oom = [r for r in rs if r["status"] == "oom"]
        if not ok and not oom:
            continue
        x = [int(r["seq_len"]) for r in ok]
        lengths += x + [int(r["seq_len"]) for r in oom]
        line, = ax.plot(x, [r["reserved_bytes"] / GIB for r in ok], marker="o", ms=3, label=m)
        if oom:  # the first length that did not fit
            first = oom[0]
            ax.plot([int(first["seq_len"])], [first["capacity_bytes"] / GIB or first["peak_bytes"] / GIB],
                    marker="x", ms=8, color=line.get_color(), linestyle="none")
        caps.update(int(r["capacity_bytes"]) for r in rs if r["capacity_bytes"] > 0)
    if not lengths:
        plt.close(fig)
        return []
    for c in caps:
        ax.axhline(c / GIB, color="gray", linestyle="--", linewidth=1)
        ax.text(min(lengths), c / GIB, " capacity %.1f GiB" % (c / GIB), va="bottom", fontsize=8,
                color="gray")
    log2_axis(ax, lengths)
    ax.set_ylabel("peak device memory (GiB, reserved)")
    ax.set_title("Peak memory per GPU (x: first OOM)\n" + group_title(key), fontsize=9)
    ax.legend(fontsize=8)
    return save(fig, out, group_name(key) + "_peak_memory")


def fig_throughput(key, rows, pub, out):
    ms = by_method(rows)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    lengths = []
    colors = {}
    for m, rs in ms.items():
        # a zero rate has no place on the log axis
        ok = [r for r in rs if r["status"] == "ok" and r["step_s"] > 0 and r["tokens_per_s_per_gpu"] > 0]
        if not ok:
            continue
        x = [int(r["seq_len"]) for r in ok]
        lengths += x
        line, = ax.plot(x, [r["tokens_per_s_per_gpu"] for r in ok], marker="o", ms=3,
                        label="%s (%s)" % (m, key[1]))
        colors[m] = line.get_color()
    model, backend, gpu, C, scope, cap = key
    shown_pub = False
    if scope == "model":  # the paper's numbers are whole-model steps: comparable to this scope
        for m in sorted({p["method"] for p in pub}, key=method_key):
            ps = [p for p in pub if p["method"] == base_method(m) and p["model"] == model and p["status"] == "ok"
                  and p["metric"] == "tokens_per_s_per_gpu" and int(p["gpus"]) == C]
            if not ps:
                continue
            x = [int(p["seq_len"]) for p in ps]
            lengths += x
            ax.plot(x, [float(p["value"]) for p in ps], linestyle="--", marker="s", ms=3,
                    color=colors.get(m, "gray"), alpha=0.6,
                    label="%s (published, %s GPUs)" % (m, ps[0]["gpus"]))
            shown_pub = True
    if not lengths:
        plt.close(fig)
        return []
    log2_axis(ax, lengths)
    ax.set_yscale("log")
    ax.set_ylabel("tokens/s per GPU")
    extra = "\ndashed: arXiv 2602.21196 (paper/published.csv)" if shown_pub else ""
    ax.set_title("Throughput\n" + group_title(key) + extra, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, out, group_name(key) + "_throughput")


def max_context(rs):
    """(largest ok length, first oom length or None) of one method's rows"""
    ok = [int(r["seq_len"]) for r in rs if r["status"] == "ok"]
    oom = [int(r["seq_len"]) for r in rs if r["status"] == "oom"]
    return (max(ok) if ok else 0), (min(oom) if oom else None)


def fig_max_context(key, rows, out):
    ms = by_method(rows)
    names, vals, bounded = [], [], []
    for m, rs in ms.items():
        best, oom = max_context(rs)
        names.append(m)
        vals.append(best)
        bounded.append(oom is not None)
    if not any(vals):
        return []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    bars = ax.bar(names, [v / float(1 << 20) for v in vals], color="tab:blue")
    for b, v, bd in zip(bars, vals, bounded):
        label = size_label(v) if v else "none"
        if v and not bd:
            label = ">= " + label  # never ran out of memory: the sweep's stop bounds it
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), label, ha="center", va="bottom",
                fontsize=8)
    ax.set_ylabel("longest context that fit (M tokens)")
    ax.set_title("Maximum context per method\n" + group_title(key), fontsize=9)
    return save(fig, out, group_name(key) + "_max_context")


def choose_length(rows, want):
    """`want` if given, else the longest length at which the most methods fit"""
    if want:
        return want
    count = defaultdict(set)
    for r in rows:
        if r["status"] == "ok":
            count[int(r["seq_len"])].add(r["method"])
    if not count:
        return None
    most = max(len(v) for v in count.values())
    return max(s for s, v in count.items() if len(v) == most)


def fig_breakdown(key, rows, tags, length, out):
    S = choose_length(rows, length)
    if S is None:
        return [], None
    at = [r for r in by_method([r for r in rows if int(r["seq_len"]) == S and r["status"] == "ok"]).values()]
    at = [rs[-1] for rs in at]
    if not at:
        return [], S
    ntag = len(at[0]["at_peak_bytes"])
    names = tags if tags and len(tags) == ntag else ["tag%d" % i for i in range(ntag)]
    data = np.array([np.asarray(r["at_peak_bytes"], dtype=float) / GIB for r in at])
    used = [i for i in range(ntag) if data[:, i].sum() > 0]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    bottom = np.zeros(len(at))
    cmap = plt.get_cmap("tab20")
    for k, i in enumerate(used):
        ax.bar([r["method"] for r in at], data[:, i], bottom=bottom, label=names[i], color=cmap(k % 20))
        bottom += data[:, i]
    ax.set_ylabel("device memory at the peak (GiB)")
    ax.set_title("Memory by allocation tag at the peak, S = %s\n%s" % (size_label(S), group_title(key)),
                 fontsize=9)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, out, group_name(key) + "_memory_breakdown"), S


# ---------------------------------------------------------------- tables


def cell_ours(rs, S):
    for r in rs:
        if int(r["seq_len"]) == S:
            if r["status"] == "ok":
                return "%.1f" % r["tokens_per_s_per_gpu"] if r["step_s"] > 0 else "ok"
            return r["status"].upper() if r["status"] == "oom" else r["status"]
    return "-"


def table_rows_vs_published(key, rows, pub):
    """[(method, [cells...])] with 'ours / paper' per published length; header labels"""
    model, C = key[0], key[3]
    # the same model on the same number of GPUs only: other world sizes are not comparable
    pp = [p for p in pub if p["model"] == model and p["metric"] == "tokens_per_s_per_gpu"
          and int(p["gpus"]) == C]
    if not pp:
        return None, None
    lengths = sorted({int(p["seq_len"]) for p in pp})
    labels = [size_label(s) for s in lengths]
    ms = by_method(rows)
    out = []
    for m in sorted(set(ms) | {p["method"] for p in pp}, key=method_key):
        cells = []
        for S in lengths:
            paper = [p for p in pp if p["method"] == base_method(m) and int(p["seq_len"]) == S]
            ptxt = "-" if not paper else ("OOM" if paper[0]["status"] == "oom" else paper[0]["value"])
            cells.append("%s / %s" % (cell_ours(ms.get(m, []), S), ptxt))
        out.append((m, cells))
    return labels, out


def md_table(header, rows):
    s = "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n"
    for r in rows:
        s += "| " + " | ".join(r) + " |\n"
    return s


def tex_escape(s):
    return s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&").replace("#", r"\#")


def tex_table(caption, header, rows):
    s = "\\begin{table}[t]\n\\centering\\small\n\\begin{tabular}{l%s}\n\\hline\n" % ("r" * (len(header) - 1))
    s += " & ".join(tex_escape(h) for h in header) + " \\\\\n\\hline\n"
    for r in rows:
        s += " & ".join(tex_escape(c) for c in r) + " \\\\\n"
    s += "\\hline\n\\end{tabular}\n\\caption{%s}\n\\end{table}\n\n" % tex_escape(caption)
    return s


def tables(groups, pub, out):
    md = ["# cpbench results\n",
          "Generated by paper/make_figures.py. Backend of each table: `sim` = simulator prediction "
          "(exact tracked memory, modelled time; not a measurement), `cuda` = measured on GPUs, "
          "`cpu` = measured on CPUs at correctness scale. Published numbers: arXiv 2602.21196 "
          "(paper/published.csv), full-model training steps on H100s.\n"]
    tex = ["% cpbench tables, generated by paper/make_figures.py\n"]
    for key, rows in sorted(groups.items()):
        title = group_title(key)
        ms = by_method(rows)
        lengths = sorted({int(r["seq_len"]) for r in rows})
        # peak memory per method and length
        hdr = ["method"] + [size_label(s) for s in lengths]
        body = []
        for m, rs in ms.items():
            cells = []
            for S in lengths:
                r = [x for x in rs if int(x["seq_len"]) == S]
                if not r:
                    cells.append("-")
                elif r[-1]["status"] == "ok":
                    cells.append("%.1f" % (r[-1]["reserved_bytes"] / GIB))
                else:
                    cells.append(r[-1]["status"].upper() if r[-1]["status"] == "oom" else r[-1]["status"])
            body.append([m] + cells)
        md.append("## %s\n\n### Peak device memory (GiB)\n\n%s" % (title, md_table(hdr, body)))
        tex.append(tex_table("Peak device memory (GiB). " + title, hdr, body))
        # maximum context
        body = []
        for m, rs in ms.items():
            best, oom = max_context(rs)
            body.append([m, size_label(best) if best else "none",
                         size_label(oom) if oom else "not reached"])
        hdr = ["method", "longest fit", "first OOM"]
        md.append("\n### Maximum context\n\n%s" % md_table(hdr, body))
        tex.append(tex_table("Maximum context. " + title, hdr, body))
        # throughput beside the paper
        labels, prow = table_rows_vs_published(key, rows, pub)
        if labels:
            hdr = ["method"] + labels
            body = [[m] + cells for m, cells in prow]
            note = ("ours (%s, %s scope) / published (arXiv 2602.21196). Layer scope is one attention "
                    "layer's forward+backward, the paper a whole model's step: compare shapes, not "
                    "values." if key[4] == "layer" else "ours (%s, %s scope) / published (arXiv 2602.21196)")
            note = note % (key[1], key[4])
            md.append("\n### Tokens/s per GPU: %s\n\n%s" % (note, md_table(hdr, body)))
            tex.append(tex_table("Tokens/s per GPU, " + note + " " + title, hdr, body))
        md.append("\n")
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(out, "tables.tex"), "w") as f:
        f.write("".join(tex))
    return [os.path.join(out, "tables.md"), os.path.join(out, "tables.tex")]


# ---------------------------------------------------------------- plan frontier


def plan_label(r):
    """'upipe head_chunk=8': the method and the knobs the plan chose"""
    parts = [r["method"]]
    for k in knob_columns(r):
        if k in SETUP_KNOBS:
            continue
        v = r[k]
        if isinstance(v, str):
            if v:
                parts.append("%s=%s" % (k, v))
        elif int(v) != 0:
            parts.append("%s=%s" % (k, size_label(v) if k == "seq_chunk" else int(v)))
    return " ".join(parts)


def plan_groups(rows):
    g = defaultdict(list)
    for r in rows:
        g[(r["model"], r["backend"], r["gpu"], int(r["world_size"]), r["scope"], r.get("framework", ""))].append(r)
    return g


def plan_choice(rows):
    """(recommended row or None, frontier rows, max_context): the row cpbench plan marked
    recommended, or by the fastest-that-fits rule in files before schema 8"""
    ok = [r for r in rows if r["status"] == "ok" and r["tokens_per_s_per_gpu"] > 0]
    max_context = len({int(r["seq_len"]) for r in rows}) > 1
    if not ok:
        return None, [], max_context
    x = (lambda r: int(r["seq_len"])) if max_context else (lambda r: -int(r["peak_bytes"]))
    tps = lambda r: float(r["tokens_per_s_per_gpu"])
    # the plan's own recommendation (schema 8: the plan column; headroom floor, ties, the
    # uncalibrated rule: README "Planning"), else the fastest that fits (older files)
    marked = [r for r in ok if "recommended" in str(r.get("plan", "")).split()]
    best = marked[-1] if marked else ok[0]
    for r in ([] if marked else ok[1:]):
        if max_context:
            better = (x(r), tps(r), -int(r["peak_bytes"])) > (x(best), tps(best), -int(best["peak_bytes"]))
        else:
            better = (tps(r), -int(r["peak_bytes"])) > (tps(best), -int(best["peak_bytes"]))
        if better:
            best = r
    front = [r for r in ok if not any(x(o) >= x(r) and tps(o) >= tps(r) and (x(o) > x(r) or tps(o) > tps(r))
                                      for o in ok)]
    return best, front, max_context


def fig_plan(key, rows, out):
    model, backend, gpu, C, scope, fw = key
    best, front, mc = plan_choice(rows)
    if best is None:
        print("make_figures.py: plan %s on %d x %s: no candidate fits, no frontier to draw" % (model, C, gpu))
        return []
    ok = [r for r in rows if r["status"] == "ok" and r["tokens_per_s_per_gpu"] > 0]
    xv = (lambda r: int(r["seq_len"]) / float(1 << 20)) if mc else (lambda r: r["peak_bytes"] / GIB)
    fig, ax = plt.subplots(figsize=(8, 5.2))
    ax.scatter([xv(r) for r in ok], [r["tokens_per_s_per_gpu"] for r in ok], s=14, color="0.65",
               label="fits (%d of %d candidates)" % (len(ok), len(rows)))
    front = sorted(front, key=xv)
    ax.plot([xv(r) for r in front], [r["tokens_per_s_per_gpu"] for r in front], "o-", color="C0", ms=5,
            label="Pareto frontier")
    for r in front:
        ax.annotate(plan_label(r), (xv(r), r["tokens_per_s_per_gpu"]), fontsize=6, xytext=(4, -8),
                    textcoords="offset points")
    ax.plot([xv(best)], [best["tokens_per_s_per_gpu"]], "*", color="C3", ms=16,
            label="recommended: " + plan_label(best))
    ax.set_xlabel("longest context that fits (M tokens)" if mc else "predicted peak memory per GPU (GiB)")
    ax.set_ylabel("tokens/s per GPU" + (" at that context" if mc else ""))
    S = "" if mc else ", S = %s" % size_label(best["seq_len"])
    ax.set_title("cpbench plan: %s on %d x %s, %s scope%s%s\n%s: %s" % (
        model, C, gpu, scope, ", framework " + fw if fw else "", S, backend, BACKEND_WORDS.get(backend, backend)),
        fontsize=9)
    if not mc and best["capacity_bytes"] > 0:
        ax.axvline(best["capacity_bytes"] / GIB, color="C3", ls=":", lw=1, label="usable memory")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    name = "%s_%s_%s_C%d_%s%s_plan_frontier" % (model, backend, gpu.replace(" ", "-"), C, scope,
                                                "_" + fw if fw else "")
    print("make_figures.py: plan %s on %d x %s (%s): recommended %s" % (model, C, gpu, scope, plan_label(best)))
    return save(fig, out, name)


# ---------------------------------------------------------------- main


def main(argv=None):
    """exit 0, or 2 with one line naming the file and the problem (InputError)"""
    try:
        return run(argv)
    except InputError as e:
        print("make_figures.py: %s" % e, file=sys.stderr)
        return 2


def run(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="cpbench results files (HDF5)")
    ap.add_argument("--plan", action="store_true",
                    help="the files are `cpbench plan --out` results: draw each plan's frontier")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output directory (default paper/out)")
    ap.add_argument("--length", default=None,
                    help="context length of the memory breakdown (e.g. 1M; default: the longest "
                         "length at which the most methods fit)")
    ap.add_argument("--published", default=os.path.join(HERE, "published.csv"),
                    help="published numbers (default paper/published.csv)")
    a = ap.parse_args(argv)
    for p in a.files:
        check_input(p)
    check_out_dir(a.out)
    rows, tags = read_runs(a.files)
    rows = latest(rows)
    if not rows:
        raise InputError("no rows in %s" % ", ".join(a.files))
    os.makedirs(a.out, exist_ok=True)
    if a.plan:
        written = []
        for key, rs in sorted(plan_groups(rows).items()):
            written += fig_plan(key, rs, a.out)
        for p in written:
            print(p)
        print("make_figures.py: %d plan files from %d rows" % (len(written), len(rows)))
        return 0
    pub = read_published(a.published)
    length = parse_size(a.length) if a.length else None
    groups = groups_of(rows)
    written = []
    for key, rs in sorted(groups.items()):
        written += fig_peak_memory(key, rs, a.out)
        written += fig_throughput(key, rs, pub, a.out)
        written += fig_max_context(key, rs, a.out)
        files, S = fig_breakdown(key, rs, tags, length, a.out)
        written += files
    written += tables(groups, pub, a.out)
    for p in written:
        print(p)
    print("make_figures.py: %d files from %d rows in %d groups" % (len(written), len(rows), len(groups)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
