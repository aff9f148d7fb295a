#!/usr/bin/env python3
"""Figures and tables of the paper from cpbench results files (HDF5, results/README.md).

    python3 paper/make_figures.py results/*.h5 --out paper/out [--length 1M]
    python3 paper/make_figures.py --plan plan.h5 --out paper/out    (`cpbench plan --out`)

For every group of rows sharing (model, backend, gpu, world size, scope, usable memory) it
writes, as PNG and PDF:
  <group>_peak_memory      peak device memory vs context length, one line per method; each
                           method's first OOM an x above the usable-memory line (rows of x's
                           where lengths are close, so they do not pile up)
  <group>_throughput       tokens/s per GPU vs context length (model scope: with the
                           published numbers of arXiv 2602.21196 beside ours, dashed)
  <group>_throughput_ratio tokens/s per GPU over Ulysses's at each length (a variant over the
                           Ulysses with its attention implementation and framework; published
                           over published): the few per cent a log axis hides
  <group>_max_context      the longest context that fit per method: labelled horizontal bars
  <group>_memory_breakdown the peak at one length per method: at model scope in the paper's
                           buckets (model states, attention activations, other, and any bucket
                           column a later schema adds), which add up to the peak; at layer
                           scope by allocation tag
and tables.md / tables.tex per group: peak memory per method and length, the model-scope
peak in its buckets, tokens/s per GPU and MFU (causal / megatron) for any model, the longest
context (with tokens/s, MFU and peak there), and our tokens/s beside the published ones
(paper/published.csv).  Columns with no number are left out.

Every method has one colour and one marker in every figure (METHOD_STYLE); a variant (another
FPDT schedule, framework or attention implementation) keeps them with a dotted or dash-dot
line; published series are dashed with open markers in the method's colour.

With --plan, the files are `cpbench plan --out` results and each plan invocation gets
<group>_<length or maxctx>_plan_frontier: every candidate that fits, peak memory against
tokens/s per GPU (for a --max-context plan: its longest context against tokens/s there), the
Pareto frontier through them, numbered, with the numbers' candidates listed under the axes
(enlarged in an inset when the frontier sits in a corner), and the recommendation marked: the
fastest that fits (ties: the smaller peak), or with --max-context the longest context (ties:
the faster), the rule of `cpbench plan` (driver/plan.h).  An invocation is told apart by the
command line of the process that wrote its rows (/sessions): plans at one length are grouped
by that length (a second plan of the same question writes no row again), a --max-context plan
by its process; plans also differ by model, GPUs, profile, scope, framework, setup and options.

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
import matplotlib.ticker  # noqa: E402,F401  (matplotlib.ticker.FuncFormatter)
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
        # FlashAttention's published curves (schema 10's estimates column): an estimate
        est = "attn." in str(r.get("estimates", "") or "") or attn in ("fa2", "fa3")
        label += " [attn %s%s]" % (attn, ", estimate" if est else "")
    return label


def method_key(m):
    b = base_method(m)
    return (METHOD_ORDER.index(b) if b in METHOD_ORDER else len(METHOD_ORDER), m)


# ---------------------------------------------------------------- reading


def session_commands(f):
    """{session index: command line} of a file's /sessions ({} when it has none or HDF5 cannot
    read it: the command line only groups plans, a file without one still draws)"""
    try:
        s = f["sessions"][:]
        return {i: text(c) for i, c in enumerate(s["command_line"])}
    except (KeyError, ValueError, TypeError, OSError, UnicodeDecodeError, IndexError):
        return {}


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
                commands = session_commands(f)
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
                try:
                    d["session_command"] = commands.get(int(d.get("session", -1)), "")
                except (TypeError, ValueError):
                    d["session_command"] = ""
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
               "tiled_mlp", "fused_loss", "linear_dtype", "micro_batch", "grad_accum", "dp", "shard_group",
               "lora_rank")


# what read_runs adds to a row: the file it came from, the command line of its session
READER_KEYS = ("file", "session_command")


def knob_columns(r):
    names = list(r.keys())
    if LAST_FIXED_COLUMN not in names:
        return []
    i = names.index(LAST_FIXED_COLUMN) + 1
    return [n for n in names[i:] if n not in READER_KEYS]


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


# ---------------------------------------------------------------- style

# one colour and one marker per method, the same in every figure (a colour-blind-safe set for
# the first ones; a method the list does not name gets one of the spare pairs, by its name, so
# it too keeps its look from figure to figure)
METHOD_STYLE = {
    "ulysses": ("#0072B2", "o"),   # blue
    "ring":    ("#D55E00", "s"),   # vermillion
    "upipe":   ("#009E73", "^"),   # bluish green
    "hupipe":  ("#56B4E9", "v"),   # sky blue
    "fpdt":    ("#E69F00", "D"),   # orange
    "offload": ("#CC79A7", "P"),   # reddish purple
    "metp":    ("#882255", "X"),   # wine
    "tp":      ("#777777", "h"),   # grey
    "usp":     ("#332288", "<"),   # indigo
    "native":  ("#000000", ">"),   # black: native PyTorch, no context parallelism (published rows)
}
SPARE_STYLE = [("#999933", "p"), ("#44AA99", "*"), ("#AA4499", "d"), ("#117733", "8"), ("#661100", "H")]
# a variant of a method (another schedule, framework or attention implementation) keeps the
# method's colour and marker with another line style; dashed is the published numbers'
VARIANT_LINES = [":", (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (4, 1, 1, 1))]
PUBLISHED_LINE = "--"


def method_style(label):
    """(colour, marker) of a method label's base method"""
    b = base_method(label)
    if b in METHOD_STYLE:
        return METHOD_STYLE[b]
    return SPARE_STYLE[sum(b.encode()) % len(SPARE_STYLE)]


def line_style(label, labels):
    """'-' for the method itself, a dotted or dash-dotted line for each of its variants in
    `labels` (the order of method_key, so a variant keeps its line within a figure)"""
    if label == base_method(label):
        return "-"
    same = sorted((l for l in labels if base_method(l) == base_method(label) and l != base_method(l)),
                  key=method_key)
    return VARIANT_LINES[same.index(label) % len(VARIANT_LINES)] if label in same else ":"


def human_number(v, _pos=None):
    """an axis label: 250, 1.5K, 20K, 1.2M"""
    if v <= 0:
        return ""
    for div, suf in ((1e6, "M"), (1e3, "K")):
        if v >= div:
            return ("%g" % float("%.4g" % (v / div))) + suf
    return "%g" % float("%.4g" % v)


def log_y_axis(ax, values):
    """a log y axis whose ticks are labelled with numbers: 1-2-5 steps within a decade when the
    values span less than two decades, powers of ten beyond"""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    v = [x for x in values if x > 0]
    span = max(v) / min(v) if v else 10
    if span < 2:  # within a factor of two a log axis has one or two ticks: a linear one
        ax.yaxis.set_major_formatter(FuncFormatter(human_number))
        return
    ax.set_yscale("log")
    subs = (1.0, 2.0, 5.0) if span < 100 else (1.0,)
    if span < 4:
        subs = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(human_number))
    ax.yaxis.set_minor_formatter(NullFormatter())
    if v:  # a little room above and below, so the extreme labels show
        ax.set_ylim(min(v) / 1.15, max(v) * 1.15)


# ---------------------------------------------------------------- figures


def save(fig, out, name):
    paths = []
    for ext in ("png", "pdf"):
        p = os.path.join(out, "%s.%s" % (name, ext))
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def log2_axis(ax, lengths):
    """context length on a log2 axis, every tick labelled 128K, 1M, 3M (no unlabelled minors)"""
    from matplotlib.ticker import NullLocator
    ax.set_xscale("log", base=2)
    ticks = sorted(set(lengths))
    # no two labels closer than ~1/20 of the axis (a bisection's 4M, 4.25M, 4.31M would print
    # over each other): the powers of two first, then the paper's 3M and 5M, then the rest
    span = ticks[-1] / float(ticks[0])
    near = max(1.15, span ** (1.0 / 20))
    first = sorted(ticks, key=lambda t: (0 if (t & (t - 1)) == 0 else 1 if t in (3 << 20, 5 << 20) else 2, t))
    keep = []
    for t in first:
        if all(max(t, k) / float(min(t, k)) >= near for k in keep):
            keep.append(t)
    ticks = sorted(keep)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45 if len(ticks) > 6 else 0)
    ax.xaxis.set_minor_locator(NullLocator())
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 1.5, ticks[0] * 1.5)
    ax.set_xlabel("context length (tokens)")
    ax.grid(True, which="major", alpha=0.3)


def legend_outside(ax, **kw):
    """the legend right of the axes, where it covers no curve"""
    h, l = ax.get_legend_handles_labels()
    if h:
        ax.legend(h, l, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, **kw)


def fig_peak_memory(key, rows, out):
    ms = by_method(rows)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    lengths, caps, ooms = [], set(), []
    for m, rs in ms.items():
        ok = [r for r in rs if r["status"] == "ok"]
        oom = [r for r in rs if r["status"] == "oom"]
        if not ok and not oom:
            continue
        color, marker = method_style(m)
        x = [int(r["seq_len"]) for r in ok]
        lengths += x + [int(r["seq_len"]) for r in oom]
        ax.plot(x, [r["reserved_bytes"] / GIB for r in ok], marker=marker, ms=4, color=color,
                linestyle=line_style(m, ms), label=m)
        if oom:
            ooms.append((m, oom[0]))  # the first length that did not fit
        caps.update(int(r["capacity_bytes"]) for r in rs if r["capacity_bytes"] > 0)
    if not lengths:
        plt.close(fig)
        return []
    top = max(caps) / GIB if caps else max([0.0] + [l.get_ydata().max() for l in ax.get_lines() if len(l.get_ydata())])
    for c in sorted(caps):
        ax.axhline(c / GIB, color="gray", linestyle="--", linewidth=1, label="usable %.1f GiB" % (c / GIB))
    # the first OOM of each method above the capacity line, one row per method at a length, so
    # methods that ran out at the same length stand apart instead of on one point
    if ooms:
        step = 0.06 * top
        rows_x = []  # the lengths placed in each row above the line
        span = max(lengths) / float(min(lengths))
        near = span ** 0.035 if span > 1 else 1.0  # closer than ~3.5% of the axis: another row
        for m, r in sorted(ooms, key=lambda mr: int(mr[1]["seq_len"])):
            S = int(r["seq_len"])
            color, marker = method_style(m)
            k = 0
            while k < len(rows_x) and any(max(S, x) / float(min(S, x)) < near for x in rows_x[k]):
                k += 1
            if k == len(rows_x):
                rows_x.append([])
            rows_x[k].append(S)
            y = top + step * (1 + k)
            ax.plot([S], [y], marker="x", ms=8, mew=2, color=color, linestyle="none")
            last = [r2 for r2 in ms[m] if r2["status"] == "ok" and int(r2["seq_len"]) < S]
            if last:  # a thin line from the longest fit to the OOM
                ax.plot([int(last[-1]["seq_len"]), S], [last[-1]["reserved_bytes"] / GIB, y], color=color, lw=0.7,
                        linestyle=":")
        ax.set_ylim(0, top + step * (0.8 + len(rows_x)))
        ax.plot([], [], marker="x", ms=8, mew=2, color="gray", linestyle="none",
                label="first OOM (drawn above\nthe usable line)")
    else:
        ax.set_ylim(0, None)
    log2_axis(ax, lengths)
    ax.set_ylabel("peak device memory per GPU (GiB)")
    ax.set_title("Peak memory per GPU\n" + group_title(key), fontsize=9)
    legend_outside(ax)
    return save(fig, out, group_name(key) + "_peak_memory")


def published_rows(pub, m, model, C):
    return sorted([p for p in pub if p["method"] == base_method(m) and p["model"] == model and p["status"] == "ok"
                   and p["metric"] == "tokens_per_s_per_gpu" and int(p["gpus"]) == C],
                  key=lambda p: int(p["seq_len"]))


def published_methods(pub, key):
    """the published methods to draw beside a group: the paper's numbers are whole-model
    steps, comparable to the model scope only"""
    model, backend, gpu, C, scope, cap = key
    if scope != "model":
        return []
    return sorted({p["method"] for p in pub if published_rows(pub, p["method"], model, C)}, key=method_key)


def published_name(m):
    return "native PyTorch, no CP" if m == "native" else m


def ok_rate(rs):
    # a zero rate has no place on the log axis
    return [r for r in rs if r["status"] == "ok" and r["step_s"] > 0 and r["tokens_per_s_per_gpu"] > 0]


def fig_throughput(key, rows, pub, out):
    ms = by_method(rows)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    lengths, values = [], []
    for m, rs in ms.items():
        ok = ok_rate(rs)
        if not ok:
            continue
        color, marker = method_style(m)
        x = [int(r["seq_len"]) for r in ok]
        y = [r["tokens_per_s_per_gpu"] for r in ok]
        lengths += x
        values += y
        ax.plot(x, y, marker=marker, ms=4, color=color, linestyle=line_style(m, ms), label="%s (%s)" % (m, key[1]))
    pubm = published_methods(pub, key)
    for m in pubm:
        ps = published_rows(pub, m, key[0], key[3])
        color, marker = method_style(m)
        x = [int(p["seq_len"]) for p in ps]
        y = [float(p["value"]) for p in ps]
        lengths += x
        values += y
        ax.plot(x, y, linestyle=PUBLISHED_LINE, marker=marker, ms=4, mfc="none", color=color,
                label="%s (published)" % published_name(m))
    if not lengths:
        plt.close(fig)
        return []
    log2_axis(ax, lengths)
    log_y_axis(ax, values)
    ax.set_ylabel("tokens/s per GPU")
    extra = "\nsolid: ours; dashed, open markers: published, arXiv 2602.21196 (paper/published.csv)" if pubm else ""
    ax.set_title("Throughput\n" + group_title(key) + extra, fontsize=9)
    legend_outside(ax)
    return save(fig, out, group_name(key) + "_throughput")


BASELINE = "ulysses"


def baseline_of(label):
    """the Ulysses a variant is measured against: the one with its framework and attention
    implementation ('ring [attn own]' -> 'ulysses [attn own]'; fpdt's schedule has no Ulysses
    counterpart: 'fpdt/pipelined @deepspeed' -> 'ulysses @deepspeed')"""
    rest = label[len(base_method(label)):]
    if rest.startswith("/"):
        rest = rest[len(rest.split(" ")[0]):]
    return BASELINE + rest


def fig_throughput_ratio(key, rows, pub, out):
    """tokens/s per GPU over Ulysses's at the same length: the few per cent that a log axis hides"""
    ms = by_method(rows)
    rates = {m: {int(r["seq_len"]): r["tokens_per_s_per_gpu"] for r in ok_rate(rs)} for m, rs in ms.items()}
    base = rates.get(BASELINE, {})
    pbase = {}
    for p in (published_rows(pub, BASELINE, key[0], key[3]) if published_methods(pub, key) else []):
        pbase[int(p["seq_len"])] = float(p["value"])
    if not base and not pbase:
        return []
    fig, ax = plt.subplots(figsize=(8, 4.8))
    lengths, drawn = [], 0
    for m, rs in ms.items():
        b = rates.get(baseline_of(m)) or base
        ok = [r for r in ok_rate(rs) if int(r["seq_len"]) in b]
        if not ok:
            continue
        color, marker = method_style(m)
        x = [int(r["seq_len"]) for r in ok]
        lengths += x
        ax.plot(x, [r["tokens_per_s_per_gpu"] / b[int(r["seq_len"])] for r in ok], marker=marker, ms=4,
                color=color, linestyle=line_style(m, ms), label="%s (%s)" % (m, key[1]))
        drawn += 1
    for m in published_methods(pub, key):
        ps = [p for p in published_rows(pub, m, key[0], key[3]) if int(p["seq_len"]) in pbase]
        if not ps:
            continue
        color, marker = method_style(m)
        x = [int(p["seq_len"]) for p in ps]
        lengths += x
        ax.plot(x, [float(p["value"]) / pbase[int(p["seq_len"])] for p in ps], linestyle=PUBLISHED_LINE,
                marker=marker, ms=4, mfc="none", color=color, label="%s (published)" % published_name(m))
        drawn += 1
    if not lengths or drawn < 2:  # Ulysses against itself alone says nothing
        plt.close(fig)
        return []
    ax.axhline(1.0, color="gray", linewidth=1)
    log2_axis(ax, lengths)
    from matplotlib.ticker import PercentFormatter
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
    ax.set_ylabel("tokens/s per GPU relative to Ulysses")
    ax.set_title("Throughput relative to Ulysses at each length (100%% = Ulysses with the same attention "
                 "implementation and framework%s)\n%s" % (
                     ";\ndashed: published, over the published Ulysses" if pbase else "", group_title(key)), fontsize=9)
    legend_outside(ax)
    return save(fig, out, group_name(key) + "_throughput_ratio")


def max_context(rs):
    """(largest ok length, first oom length or None) of one method's rows"""
    ok = [int(r["seq_len"]) for r in rs if r["status"] == "ok"]
    oom = [int(r["seq_len"]) for r in rs if r["status"] == "oom"]
    return (max(ok) if ok else 0), (min(oom) if oom else None)


def fig_max_context(key, rows, out):
    """one horizontal bar per method, the longest first, each labelled at its end"""
    ms = by_method(rows)
    bars = []
    for m, rs in ms.items():
        best, oom = max_context(rs)
        bars.append((m, best, oom))
    if not any(b[1] for b in bars):
        return []
    # barh draws bottom up: the longest on top, ties in the methods' order from the top
    bars = sorted(reversed(bars), key=lambda b: b[1])
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.42 * len(bars)))
    vals = [b[1] / float(1 << 20) for b in bars]
    hbar = ax.barh(range(len(bars)), vals, color=[method_style(b[0])[0] for b in bars], height=0.65)
    for i, (b, (m, v, oom)) in enumerate(zip(hbar, bars)):
        if base_method(m) != m:
            b.set_hatch("//")
            b.set_edgecolor("white")
        label = size_label(v) if v else "none fit"
        if v and oom is None:
            label = ">= " + label + " (no OOM up to the sweep's end)"
        elif v:
            label += " (OOM at %s)" % size_label(oom)
        ax.text(b.get_width(), i, "  " + label, va="center", ha="left", fontsize=8)
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars], fontsize=9)
    ax.set_xlim(0, max(vals) * 1.6)  # room for the labels right of the longest bar
    ax.set_xlabel("longest context that fit (M tokens)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Longest context per method\n" + group_title(key), fontsize=9)
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


# the model-scope buckets of the peak (results/README.md): named here in the paper's words;
# another *_bytes column of the fixed ones (a bucket a later schema adds, such as a fixed
# per-GPU one) is a bucket too when the buckets then still add up to the peak
BUCKET_NAMES = {"model_state_bytes": "model states", "attn_act_bytes": "attention activations",
                "other_bytes": "other"}
NOT_BUCKETS = {"capacity_bytes", "peak_bytes", "reserved_bytes", "device_used_bytes", "intermediate_bytes",
               "host_peak_bytes", "fwd_peak_bytes", "bwd_peak_bytes", "at_peak_bytes", "comm_bytes",
               "pcie_bytes", "alloc_reserve_bytes", "peak_reserved_bytes", "peak_device_bytes"}
BUCKET_COLORS = ["#4477AA", "#EE6677", "#BBBBBB", "#CCBB44", "#66CCEE", "#AA3377", "#228833"]


def fixed_columns(r):
    names = [n for n in r.keys() if n not in READER_KEYS]
    return names[:names.index(LAST_FIXED_COLUMN) + 1] if LAST_FIXED_COLUMN in names else names


def bucket_columns(rows):
    """the columns of the peak's buckets in these rows, in the file's order: the known three
    and any other int *_bytes column that belongs with them (the sum stays the peak)"""
    if not rows:
        return []
    cols = fixed_columns(rows[0])
    known = [c for c in cols if c in BUCKET_NAMES]
    extra = [c for c in cols if c.endswith("_bytes") and c not in BUCKET_NAMES and c not in NOT_BUCKETS
             and np.ndim(rows[0][c]) == 0 and np.issubdtype(np.asarray(rows[0][c]).dtype, np.integer)]
    def adds_up(cs):
        return all(sum(int(r[c]) for c in cs) == int(r["peak_bytes"]) for r in rows)
    if extra and adds_up(known + extra):
        return [c for c in cols if c in known or c in extra]
    return known


def bucket_label(c):
    return BUCKET_NAMES.get(c, c[:-len("_bytes")].replace("_", " "))


def fig_breakdown(key, rows, tags, length, out):
    """device memory at the peak per method at one length: at model scope in the buckets of
    the peak (model states, attention activations, other, ...), which add up to the peak; at
    layer scope by allocation tag"""
    S = choose_length(rows, length)
    if S is None:
        return [], None
    at = [rs[-1] for rs in by_method([r for r in rows if int(r["seq_len"]) == S and r["status"] == "ok"]).values()]
    if not at:
        return [], S
    labels = [variant(r) for r in at]
    model_scope = key[4] == "model"
    buckets = bucket_columns(at) if model_scope else []
    if buckets:
        names = [bucket_label(c) for c in buckets]
        data = np.array([[int(r[c]) / GIB for c in buckets] for r in at])
        rest = np.array([r["peak_bytes"] / GIB for r in at]) - data.sum(axis=1)
        if np.any(np.abs(rest) > 1.0 / 1024):  # buckets short of the peak: the rest shown, not hidden
            names.append("not in a bucket")
            data = np.column_stack([data, rest])
        colors = [BUCKET_COLORS[k % len(BUCKET_COLORS)] for k in range(len(names))]
        what = "peak memory per GPU in the paper's buckets"
    else:
        ntag = len(at[0]["at_peak_bytes"])
        tn = tags if tags and len(tags) == ntag else ["tag%d" % i for i in range(ntag)]
        full = np.array([np.asarray(r["at_peak_bytes"], dtype=float) / GIB for r in at])
        used = [i for i in range(ntag) if full[:, i].sum() > 0]
        names = [tn[i] for i in used]
        data = full[:, used]
        cmap = plt.get_cmap("tab20")
        colors = [cmap(i % 20) for i in used]  # a tag's colour by its index: the same in every figure
        what = "device memory by allocation tag at the peak" + (" (the attention layer's)" if model_scope else "")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 0.8 * len(at)), 4.8))
    x = np.arange(len(at))
    bottom = np.zeros(len(at))
    for k, n in enumerate(names):
        ax.bar(x, data[:, k], bottom=bottom, label=n, color=colors[k], width=0.65)
        bottom += data[:, k]
    peaks = [r["peak_bytes"] / GIB for r in at]
    for i, p in enumerate(peaks):
        ax.text(i, max(p, bottom[i]), "%.1f" % p, ha="center", va="bottom", fontsize=8)
    caps = {int(r["capacity_bytes"]) for r in at if r["capacity_bytes"] > 0}
    for c in sorted(caps):
        ax.axhline(c / GIB, color="gray", linestyle="--", linewidth=1, label="usable %.1f GiB" % (c / GIB))
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=30 if len(at) > 5 or max(len(l) for l in labels) > 10 else 0,
                       ha="right" if len(at) > 5 or max(len(l) for l in labels) > 10 else "center", fontsize=9)
    pad = (max(len(at), 3) - len(at)) / 2.0  # one or two bars: not the axes' whole width
    ax.set_xlim(-0.5 - pad, len(at) - 0.5 + pad)
    top = max([max(peaks), bottom.max()] + [c / GIB for c in caps])
    ax.set_ylim(0, top * 1.1)
    ax.set_ylabel("device memory per GPU at the peak (GiB)")
    ax.set_title("%s, S = %s (numbers: the peak)\n%s" % (what[0].upper() + what[1:], size_label(S),
                                                        group_title(key)), fontsize=9)
    h, l = ax.get_legend_handles_labels()
    ax.legend(h[::-1], l[::-1], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
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
    s = s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&").replace("#", r"\#")
    return s.replace(">=", r"$\geq$").replace("~", r"\textasciitilde{}")


def tex_table(caption, header, rows):
    s = "\\begin{table}[t]\n\\centering\\small\n\\begin{tabular}{l%s}\n\\hline\n" % ("r" * (len(header) - 1))
    s += " & ".join(tex_escape(h) for h in header) + " \\\\\n\\hline\n"
    for r in rows:
        s += " & ".join(tex_escape(c) for c in r) + " \\\\\n"
    s += "\\hline\n\\end{tabular}\n\\caption{%s}\n\\end{table}\n\n" % tex_escape(caption)
    return s


def status_cell(r):
    return r["status"].upper() if r["status"] == "oom" else r["status"]


def per_length_table(ms, lengths, cell):
    """[method, cell(row) per length] with the length columns no method has a number in left out
    (and, past twelve, those fewer than half the methods have: a bisection's lengths, which the
    longest-context table covers); header"""
    grid = []
    for m, rs in ms.items():
        at = {}
        for r in rs:
            at[int(r["seq_len"])] = r
        grid.append((m, [cell(at[S]) if S in at else "-" for S in lengths]))
    def filled(j):
        return sum(1 for _, cells in grid if cells[j] not in ("-", "refused", "error"))
    keep = [j for j in range(len(lengths)) if filled(j) > 0]
    if len(keep) > 12 and len(grid) > 1:  # the sweep's grid: lengths half the methods or more have
        need = max(2, (len(grid) + 1) // 2)
        keep = [j for j in keep if filled(j) >= need] or keep
    body = [[m] + [cells[j] for j in keep] for m, cells in grid if any(cells[j] != "-" for j in keep)]
    return ["method"] + [size_label(lengths[j]) for j in keep], body


def cell_peak(r):
    return "%.1f" % (r["reserved_bytes"] / GIB) if r["status"] == "ok" else status_cell(r)


def cell_rate(r):
    if r["status"] != "ok":
        return status_cell(r)
    return "%.1f" % r["tokens_per_s_per_gpu"] if r["step_s"] > 0 else "ok"


def cell_mfu(r):
    if r["status"] != "ok":
        return status_cell(r)
    c, m = float(r.get("mfu_causal", 0) or 0), float(r.get("mfu_megatron", 0) or 0)
    if r["step_s"] <= 0 or (c <= 0 and m <= 0):
        return "-" if r["step_s"] <= 0 else "n/a"
    return "%.1f / %.1f" % (100 * c, 100 * m)


def bucket_table(rows, S):
    """the model-scope peak in its buckets at length S: method, peak, one column per bucket
    that holds bytes in some row (an empty bucket is left out)"""
    at = [rs[-1] for rs in by_method([r for r in rows if int(r["seq_len"]) == S and r["status"] == "ok"]).values()]
    cols = bucket_columns(at)
    if not at or not cols:
        return None, None
    cols = [c for c in cols if any(int(r[c]) != 0 for r in at)]
    hdr = ["method", "peak"] + [bucket_label(c) for c in cols]
    body = [[variant(r), "%.2f" % (r["peak_bytes"] / GIB)] + ["%.2f" % (int(r[c]) / GIB) for c in cols] for r in at]
    return hdr, body


def tables(groups, pub, out, length=None):
    md = ["# cpbench results\n",
          "Generated by paper/make_figures.py. Backend of each table: `sim` = simulator prediction "
          "(exact tracked memory, modelled time; not a measurement), `cuda` = measured on GPUs, "
          "`cpu` = measured on CPUs at correctness scale. Published numbers: arXiv 2602.21196 "
          "(paper/published.csv), full-model training steps on H100s. MFU: model FLOPs utilisation "
          "against the GPU profile's dense bf16 peak, in the `causal` and the `megatron` FLOP "
          "conventions (results/README.md, \"Model FLOPs and MFU\"); at layer scope that of the "
          "attention layer alone. A length column no method has a number in is left out, and where a "
          "bisection added more than twelve lengths, those fewer than half the methods ran (the "
          "longest-context table has each method's).\n"]
    tex = ["% cpbench tables, generated by paper/make_figures.py\n"]
    for key, rows in sorted(groups.items()):
        title = group_title(key)
        ms = by_method(rows)
        lengths = sorted({int(r["seq_len"]) for r in rows})
        md.append("## %s\n" % title)
        # peak memory per method and length
        hdr, body = per_length_table(ms, lengths, cell_peak)
        if body:
            md.append("### Peak device memory (GiB)\n\n%s" % md_table(hdr, body))
            tex.append(tex_table("Peak device memory (GiB). " + title, hdr, body))
        # the model-scope peak in its buckets
        if key[4] == "model":
            S = choose_length(rows, length)
            if S is not None and not any(int(r["seq_len"]) == S and r["status"] == "ok" for r in rows):
                S = choose_length(rows, None)
            hdr, body = bucket_table(rows, S) if S is not None else (None, None)
            if body:
                md.append("\n### Peak device memory in its buckets at S = %s (GiB)\n\n%s" % (size_label(S),
                                                                                          md_table(hdr, body)))
                tex.append(tex_table("Peak device memory in its buckets at S = %s (GiB). %s" % (size_label(S), title),
                                     hdr, body))
        # throughput and MFU, any model
        hdr, body = per_length_table(ms, lengths, cell_rate)
        if any(c not in ("-", "ok") and c[0].isdigit() for r in body for c in r[1:]):
            md.append("\n### Tokens/s per GPU (%s)\n\n%s" % (key[1], md_table(hdr, body)))
            tex.append(tex_table("Tokens/s per GPU (%s). %s" % (key[1], title), hdr, body))
            hdr, body = per_length_table(ms, lengths, cell_mfu)
            if any(c[0].isdigit() for r in body for c in r[1:]):
                what = "MFU of the attention layer" if key[4] == "layer" else "MFU"
                md.append("\n### %s, causal / megatron (%%)\n\n%s" % (what, md_table(hdr, body)))
                tex.append(tex_table("%s, causal / megatron (%%). %s" % (what, title), hdr, body))
        # longest context
        body = []
        for m, rs in ms.items():
            best, oom = max_context(rs)
            at = [r for r in rs if int(r["seq_len"]) == best and r["status"] == "ok"]
            r = at[-1] if at else None
            body.append([m, (size_label(best) if oom else ">= " + size_label(best)) if best else "none",
                         size_label(oom) if oom else "not reached",
                         cell_rate(r) if r else "-", cell_mfu(r) if r else "-",
                         cell_peak(r) if r else "-"])
        hdr = ["method", "longest fit", "first OOM", "tokens/s per GPU there", "MFU c / m % there",
               "peak GiB there"]
        md.append("\n### Longest context\n\n%s" % md_table(hdr, body))
        tex.append(tex_table("Longest context. " + title, hdr, body))
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


def plan_invocation(r):
    """what one `cpbench plan` asked, from the row and the command line of the process that
    wrote it (/sessions): ("seq", S) for a plan at one length (plans of the same length and
    setup are one question: a second one writes only the rows the first did not), ("max", file,
    session) for a --max-context plan (its rows are at each candidate's longest context), and
    ("file", file, session) when the file names no command line"""
    cmd = r.get("session_command", "")
    if "--max-context" in cmd.split():
        return ("max", r["file"], int(r.get("session", 0)))
    if cmd:
        return ("seq", int(r["seq_len"]))
    return ("file", r["file"], int(r.get("session", 0)))


def plan_groups(rows):
    """rows by plan: model, backend, profile, GPUs, scope, framework, the setup's parts and
    options, and the invocation (its length, or the --max-context run)"""
    g = defaultdict(list)
    for r in rows:
        setup = tuple(str(r.get(k, "")) for k in SETUP_KNOBS if k != "framework") + (r.get("options", ""),)
        g[(r["model"], r["backend"], r["gpu"], int(r["world_size"]), r["scope"], r.get("framework", ""), setup,
           plan_invocation(r))].append(r)
    return g


def plan_choice(rows, max_context=None):
    """(recommended row or None, frontier rows, max_context): the row cpbench plan marked
    recommended, or by the fastest-that-fits rule in files before schema 8; max_context
    None: a --max-context plan when its rows are at more than one length"""
    ok = [r for r in rows if r["status"] == "ok" and r["tokens_per_s_per_gpu"] > 0]
    if max_context is None:
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


def place_numbers(ax, pts, fontsize=8):
    """number the points 1..n beside them, each where its number overlaps neither another
    number nor a point (greedy, in pixels, nearest free spot first)"""
    fig = ax.figure
    fig.canvas.draw()
    pix = ax.transData.transform(np.array(pts, dtype=float))
    scale = fig.dpi / 72.0
    h = fontsize * 1.2 * scale
    offsets = [(5, 4), (5, -4 - fontsize), (-5, 4), (-5, -4 - fontsize), (0, 8), (0, -10 - fontsize),
               (9, -fontsize / 2.0), (-9, -fontsize / 2.0)]
    offsets += [(dx * 2.2, dy * 2.2) for dx, dy in offsets]
    taken = [(x - 3 * scale, y - 3 * scale, x + 3 * scale, y + 3 * scale) for x, y in pix]
    for i, (x, y) in enumerate(pix):
        w = len(str(i + 1)) * fontsize * 0.65 * scale
        best = None
        for dx, dy in offsets:
            left = x + dx * scale - (w if dx < 0 else 0) - (w / 2 if dx == 0 else 0)
            box = (left, y + dy * scale, left + w, y + dy * scale + h)
            hits = sum(1 for t in taken if box[0] < t[2] and t[0] < box[2] and box[1] < t[3] and t[1] < box[3])
            if best is None or hits < best[0]:
                best = (hits, box)
            if hits == 0:
                break
        box = best[1]
        taken.append(box)
        xd, yd = ax.transData.inverted().transform((box[0], box[1]))
        ax.annotate(str(i + 1), pts[i], xytext=(xd, yd), textcoords="data", fontsize=fontsize, ha="left",
                    va="bottom", fontweight="bold",
                    arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5, shrinkA=0, shrinkB=2))


def fig_plan(key, rows, out, names_used=None):
    model, backend, gpu, C, scope, fw, setup, inv = key
    best, front, mc = plan_choice(rows, {"max": True, "seq": False}.get(inv[0]))
    what = "longest context" if mc else "S = %s" % size_label(rows[0]["seq_len"])
    if best is None:
        print("make_figures.py: plan %s on %d x %s (%s): no candidate fits, no frontier to draw" % (model, C, gpu, what))
        return []
    ok = [r for r in rows if r["status"] == "ok" and r["tokens_per_s_per_gpu"] > 0]
    xv = (lambda r: int(r["seq_len"]) / float(1 << 20)) if mc else (lambda r: r["peak_bytes"] / GIB)
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    front = sorted(front, key=xv)
    per_method = defaultdict(list)  # one colour per method: its knobs and variants are the points
    for r in ok:
        per_method[r["method"]].append(r)

    def draw(a, labels):
        for m, rs in sorted(per_method.items(), key=lambda kv: method_key(kv[0])):
            color, marker = method_style(m)
            a.scatter([xv(r) for r in rs], [r["tokens_per_s_per_gpu"] for r in rs], s=16, color=color, marker=marker,
                      alpha=0.45, linewidths=0, label=m if labels else None)
        a.plot([xv(r) for r in front], [r["tokens_per_s_per_gpu"] for r in front], "-o", color="black", lw=1.2, ms=4,
               mfc="none", label="Pareto frontier (numbered)" if labels else None)
        a.plot([xv(best)], [best["tokens_per_s_per_gpu"]], "*", color="#D55E00", mec="black", mew=0.6, ms=16,
               linestyle="none", label="recommended" if labels else None)
        a.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(human_number))
        a.grid(True, alpha=0.3)

    draw(ax, True)
    cap_note = ""
    if not mc and best["capacity_bytes"] > 0:
        cap = best["capacity_bytes"] / GIB
        if cap <= 1.5 * max(xv(r) for r in ok):
            ax.axvline(cap, color="gray", ls="--", lw=1, label="usable memory")
        else:  # far right of every candidate: the line would squeeze them into a corner
            cap_note = "; usable %.1f GiB per GPU" % cap
    if mc:  # ticks a power of two of tokens apart (768K, 800K, ...: no 819K), labelled 128K, 1M, 3.5M
        lo, hi = ax.get_xlim()
        step = 2.0 ** np.ceil(np.log2(max((hi - lo) / 8.0, 1.0 / 1024)))
        ax.set_xticks(np.arange(np.ceil(lo / step) * step, hi + 1e-9, step))
        ax.set_xlim(lo, hi)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _p: size_label(round(v * (1 << 20))) if v > 0 else ""))
    ax.set_xlabel("longest context that fits (tokens)" if mc else "predicted peak memory per GPU (GiB)")
    ax.set_ylabel("tokens/s per GPU" + (" at that context" if mc else ""))
    pts = [(xv(r), r["tokens_per_s_per_gpu"]) for r in front]
    # a frontier in a corner of the cloud (a fixed-length plan: the fast candidates within a
    # few GiB of each other) is drawn again, enlarged, in an inset where its numbers fit
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    fx = [p[0] for p in pts] + [xv(best)]
    fy = [p[1] for p in pts] + [best["tokens_per_s_per_gpu"]]
    wx, wy = (max(fx) - min(fx)) / (x1 - x0), (max(fy) - min(fy)) / (y1 - y0)
    if len(pts) > 2 and wx < 0.3 and wy < 0.3:
        # the corner of the axes with the fewest points
        allx = np.array([xv(r) for r in ok])
        ally = np.array([r["tokens_per_s_per_gpu"] for r in ok])
        corners = [(0.52, 0.05), (0.05, 0.05), (0.52, 0.5), (0.05, 0.5)]
        def crowd(c):
            lx, ly = x0 + c[0] * (x1 - x0), y0 + c[1] * (y1 - y0)
            hx, hy = lx + 0.45 * (x1 - x0), ly + 0.45 * (y1 - y0)
            inside = ((allx >= lx) & (allx <= hx) & (ally >= ly) & (ally <= hy)).sum()
            cover = (min(fx) <= hx and max(fx) >= lx and min(fy) <= hy and max(fy) >= ly)
            return (inside + (1000 if cover else 0), c)
        corner = min(corners, key=lambda c: crowd(c)[0])
        ins = ax.inset_axes([corner[0], corner[1], 0.45, 0.45])
        draw(ins, False)
        px, py = max(max(fx) - min(fx), 1e-9), max(max(fy) - min(fy), 1e-9)
        ins.set_xlim(min(fx) - 0.15 * px, max(fx) + 0.2 * px)
        ins.set_ylim(min(fy) - 0.25 * py, max(fy) + 0.3 * py)
        ins.tick_params(labelsize=7)
        ins.set_title("the frontier, enlarged", fontsize=7)
        ax.indicate_inset_zoom(ins, edgecolor="0.4")
        place_numbers(ins, pts)
    else:
        place_numbers(ax, pts)
    ax.set_title("cpbench plan: %s on %d x %s, %s scope%s, %s%s\n%s: %s" % (
        model, C, gpu, scope, ", framework " + fw if fw else "", what,
        (", " + setup[-1]) if setup and setup[-1] else "", backend, BACKEND_WORDS.get(backend, backend)), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="%d of %d candidates fit%s" % (len(ok), len(rows), cap_note.replace("; ", "\n")), title_fontsize=7)
    # the frontier's candidates, by number, under the axes: full labels that cannot overlap
    keytxt = "Pareto frontier:\n" + "\n".join(
        "%2d  %s%s" % (i + 1, plan_label(r), "   <- recommended" if r is best else "") for i, r in enumerate(front))
    if best not in front:
        keytxt += "\nrecommended: " + plan_label(best)
    ax.text(0.0, -0.13, keytxt, transform=ax.transAxes, fontsize=7, va="top", ha="left", family="monospace")
    name = "%s_%s_%s_C%d_%s%s_%s_plan_frontier" % (model, backend, gpu.replace(" ", "-"), C, scope,
                                                  "_" + fw if fw else "", "maxctx" if mc else size_label(rows[0]["seq_len"]))
    if names_used is not None:
        base, k = name, 2
        while name in names_used:
            name = "%s_%d" % (base, k)
            k += 1
        names_used.add(name)
    print("make_figures.py: plan %s on %d x %s (%s, %s): recommended %s" % (model, C, gpu, scope, what, plan_label(best)))
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
        written, names = [], set()
        for key, rs in sorted(plan_groups(rows).items(), key=lambda kv: repr(kv[0])):
            written += fig_plan(key, rs, a.out, names)
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
        written += fig_throughput_ratio(key, rs, pub, a.out)
        written += fig_max_context(key, rs, a.out)
        files, S = fig_breakdown(key, rs, tags, length, a.out)
        written += files
    written += tables(groups, pub, a.out, length)
    for p in written:
        print(p)
    print("make_figures.py: %d files from %d rows in %d groups" % (len(written), len(rows), len(groups)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
