#!/usr/bin/env python3
"""cpbench's predictions against published measurements it was never tuned on.

    python3 paper/external.py [--csv paper/external.csv] [--cpbench build/cpbench]
                              [--out paper/out/external.md] [--rows ID,ID,...]
                              [--history paper/external_history.csv [--record LABEL]]

Each row of external.csv (docs/external.md) is a published number (longest context, peak
memory per GPU, throughput, model TFLOP/s or MFU) with the cpbench command that states its
setup.  The command is run as written, with `cpbench` replaced by the binary and `--out`
added, and its prediction is read from the results file (HDF5, via h5py: never from the
text cpbench prints).  A `sweep`'s prediction is its largest length whose status is ok.  A
peak_memory row's `basis` column says what its published number measures (allocated,
reserved: max_memory_reserved, nvidia-smi) and so which results column it is compared with
(BASES below).

The report, external.md, has one row per measurement (prediction, ratio = predicted /
published, verdict), the median and spread of the ratios per quantity, a figure of
predicted against published (external.png beside it), and the rows cpbench cannot express
yet with the error its command gave.  Verdicts: within +-15% for longest context and peak
memory, +-25% for throughput, TFLOP/s and MFU; else "off", with the missing mechanism where
the row's `gap` column names one (found by reading the framework's code; never fitted).

--record LABEL appends this run's prediction and ratio of every row to the history file
(with the label, the git commit of the tree and the date), and the report shows every
recorded label's ratio beside the current one: the before/after of each modelled mechanism
is generated from recorded runs, never typed.

Exit status: 0 when every row ran or was found not expressible, 1 when a command failed
otherwise (an error row: a bug to look at), 2 for bad input (one line on stderr naming the
file, the line and what to fix).
"""
import argparse
import csv
import datetime
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

COLUMNS = ["id", "source", "locator", "model", "gpu", "gpus", "cp", "setup", "quantity",
           "flop_convention", "published", "unit", "reading", "command"]
OPTIONAL = ["bound", "gap", "basis"]  # bound: "lower" when the source ran the value without seeking its limit;
# gap: the mechanism a row that stays off is missing (docs/external.md); basis: what a peak_memory
# row's published number measures, which names the results column it is compared with:
#   allocated   torch.cuda.max_memory_allocated, or the tensors a setup holds (the default): peak_bytes,
#               the model's peak with its fixed per-GPU memory (the limit on fit)
#   reserved    torch.cuda.max_memory_reserved: peak_reserved_bytes (the caching allocator's segments:
#               the peak less the CUDA context and NCCL's buffers, plus the allocator's reserve)
#   nvidia-smi  the driver's used memory: peak_device_bytes (everything: the peak plus the reserve)
BASES = {"allocated": "peak_bytes", "reserved": "peak_reserved_bytes", "nvidia-smi": "peak_device_bytes"}
# quantity -> (units it may be published in, tolerance, what the prediction is read from)
QUANTITIES = {
    "max_context": ({"tokens"}, 0.15),
    "peak_memory": ({"GiB", "GB"}, 0.15),
    "throughput": ({"tokens/s/GPU"}, 0.25),
    "tflops": ({"TFLOP/s/GPU"}, 0.25),
    "mfu": ({"%"}, 0.25),
}
# flop_convention -> the results columns (TFLOP/s per GPU, MFU) that count FLOPs its way
# (results/README.md "Model FLOPs and MFU")
CONVENTIONS = {"causal": ("tflops_per_gpu", "mfu_causal"),
               "megatron": ("tflops_per_gpu_megatron", "mfu_megatron"),
               "nemo": ("tflops_per_gpu_nemo", "mfu_nemo")}
ROW_TIMEOUT_S = 300
HISTORY_COLUMNS = ["label", "commit", "date", "id", "predicted", "ratio", "state"]


class BadInput(Exception):
    pass


# ------------------------------------------------------------------ reading the table
def read_table(path):
    """rows of external.csv as dicts, each checked; '#' lines are comments"""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            lines = [(n, l) for n, l in enumerate(f, 1) if l.strip() and not l.startswith("#")]
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput("%s: cannot read the table (%s); give a UTF-8 CSV file" % (path, e))
    if not lines:
        raise BadInput("%s: no header and no rows; the header is: %s" % (path, ",".join(COLUMNS)))
    reader = csv.reader([l for _, l in lines], strict=True)
    try:
        parsed = list(reader)
    except csv.Error as e:
        raise BadInput("%s: not valid CSV near line %d (%s); quote fields that hold commas" %
                       (path, lines[min(reader.line_num, len(lines)) - 1][0], e))
    header = parsed[0]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise BadInput("%s line %d: the header lacks %s; the header is: %s" %
                       (path, lines[0][0], ", ".join(missing), ",".join(COLUMNS + OPTIONAL)))
    rows, seen = [], set()
    for (lineno, _), fields in zip(lines[1:], parsed[1:]):
        where = "%s line %d" % (path, lineno)
        if len(fields) != len(header):
            raise BadInput("%s: %d fields, the header has %d; quote fields that hold commas" %
                           (where, len(fields), len(header)))
        r = dict(zip(header, fields))
        r["line"] = lineno
        check_row(r, where, seen)
        rows.append(r)
    return rows


def check_row(r, where, seen):
    rid = r["id"].strip()
    if not rid:
        raise BadInput("%s: empty id; give every row a unique id" % where)
    where = "%s (id %s)" % (where, rid)
    if rid in seen:
        raise BadInput("%s: the id is used twice; ids must be unique" % where)
    seen.add(rid)
    q = r["quantity"]
    if q not in QUANTITIES:
        raise BadInput("%s: quantity '%s' is not one of %s" % (where, q, ", ".join(QUANTITIES)))
    units, _ = QUANTITIES[q]
    if r["unit"] not in units:
        raise BadInput("%s: unit '%s' does not fit quantity %s; use %s" % (where, r["unit"], q, " or ".join(sorted(units))))
    try:
        v = float(r["published"])
    except ValueError:
        raise BadInput("%s: published '%s' is not a number; write the value as a plain number in its unit" %
                       (where, r["published"]))
    if not v > 0 or v != v or v == float("inf"):
        raise BadInput("%s: published %s is not a positive number" % (where, r["published"]))
    r["published_v"] = v
    r.setdefault("bound", "")
    r.setdefault("gap", "")
    r["basis"] = r.get("basis", "") or ("allocated" if q == "peak_memory" else "")
    if q == "peak_memory" and r["basis"] not in BASES:
        raise BadInput("%s: basis '%s' is not one of %s (what the published memory measures)" %
                       (where, r["basis"], ", ".join(BASES)))
    if q != "peak_memory" and r["basis"]:
        raise BadInput("%s: basis '%s' is for peak_memory rows only; leave it empty" % (where, r["basis"]))
    if r["bound"] not in ("", "lower"):
        raise BadInput("%s: bound '%s' is not empty or 'lower'" % (where, r["bound"]))
    if q in ("tflops", "mfu") and r["flop_convention"] not in CONVENTIONS:
        raise BadInput("%s: a %s row needs flop_convention %s, not '%s'" %
                       (where, q, ", ".join(sorted(CONVENTIONS)), r["flop_convention"]))
    try:
        argv = shlex.split(r["command"])
    except ValueError as e:
        raise BadInput("%s: the command cannot be split into words (%s)" % (where, e))
    if len(argv) < 2 or argv[0] != "cpbench" or argv[1] not in ("run", "sweep"):
        raise BadInput("%s: the command must start with 'cpbench run' or 'cpbench sweep', not '%s'" %
                       (where, " ".join(argv[:2])))
    if q == "max_context" and argv[1] != "sweep":
        raise BadInput("%s: a max_context row needs a 'cpbench sweep' command (its answer is the largest ok length)" % where)
    if q != "max_context" and argv[1] != "run":
        raise BadInput("%s: a %s row needs a 'cpbench run' command at the published length" % (where, q))
    if any(a == "--out" or a.startswith("--out=") for a in argv):
        raise BadInput("%s: the command gives --out; leave it out, the report adds its own" % where)
    r["argv"] = argv


# ------------------------------------------------------------------ running a row
def apply_stand_ins(r, stand_ins):
    """the command with the stand-ins' text replaced (a study aid); '' when none applied"""
    cmd = r["command"]
    for a, b in stand_ins:
        cmd = cmd.replace(a, b)
    if cmd == r["command"]:
        return ""
    r["argv"] = shlex.split(cmd)
    return cmd


def read_runs(h5path):
    import h5py  # imported here so that bad input is reported without it
    with h5py.File(h5path, "r") as f:
        return f["runs"][:]


def s(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def predict(r, runs):
    """(value, note, state) from the results rows of one command"""
    q = r["quantity"]
    if q == "max_context":
        ok = [int(x["seq_len"]) for x in runs if s(x["status"]) == "ok"]
        oom = [int(x["seq_len"]) for x in runs if s(x["status"]) == "oom"]
        refused = [x for x in runs if s(x["status"]) == "refused"]
        if not ok:
            why = s(refused[0]["reason"]) if refused else (s(runs[0]["reason"]) if len(runs) else "no rows")
            return None, "nothing fits from the sweep's first length: " + why[:200], "none fits"
        best = max(ok)
        if not oom or min(oom) < best:
            return best, "every length up to --seq-stop fits: a lower bound", "lower bound"
        return best, "first OOM %d" % min(oom), "ok"
    x = runs[-1]
    st = s(x["status"])
    if st != "ok":
        return None, "%s: %s" % (st, s(x["reason"])[:200]), st
    if q == "peak_memory":
        div = float(1 << 30) if r["unit"] == "GiB" else 1e9
        col = BASES[r["basis"]]
        names = x.dtype.names or ()
        if col not in names or (col != "peak_bytes" and int(x[col]) <= 0):
            # a results file before schema 12 (or a row without the prediction): no reserved figure
            return None, "basis %s: the results have no %s (cpbench before schema 12?)" % (r["basis"], col), "error"
        note = "" if r["basis"] == "allocated" else "basis %s: %s (allocated peak %.2f)" % (
            r["basis"], col, float(x["peak_bytes"]) / div)
        return float(x[col]) / div, note, "ok"
    if q == "throughput":
        return float(x["tokens_per_s_per_gpu"]), "", "ok"
    tflops_col, mfu_col = CONVENTIONS[r["flop_convention"]]
    if q == "tflops":
        return float(x[tflops_col]), "", "ok"
    return 100.0 * float(x[mfu_col]), "", "ok"


def run_row(r, cpbench, tmp):
    """runs the row's command; fills r['pred'], r['note'], r['state']"""
    out = os.path.join(tmp, r["id"] + ".h5")
    argv = [cpbench] + r["argv"][1:] + ["--out", out]
    try:
        p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=ROW_TIMEOUT_S)
        err = [l for l in p.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
        rc = p.returncode
    except subprocess.TimeoutExpired:
        err, rc = ["no answer within %d s" % ROW_TIMEOUT_S], -1
    except OSError as e:
        raise BadInput("cannot run %s (%s); build cpbench first or pass --cpbench" % (cpbench, e))
    runs = []
    if os.path.exists(out):
        try:
            runs = read_runs(out)
        except (OSError, KeyError) as e:
            err.append("results file unreadable: %s" % e)
    if len(runs):
        r["pred"], r["note"], r["state"] = predict(r, runs)
        return
    r["pred"] = None
    last = err[-1] if err else "exit %d and no output" % rc
    # cpbench rejects what it cannot state before running anything, with exit 2: an option,
    # a method, a profile or a value it does not know.  Anything else is an error.
    r["state"] = "not expressible" if rc == 2 else "error"
    r["note"] = last


# ------------------------------------------------------------------ verdicts and summary
def verdict(r):
    return ("[stand-in] " if r.get("stand_in") else "") + verdict_of(r)


def verdict_of(r):
    tol = QUANTITIES[r["quantity"]][1]
    if r["pred"] is None:
        if r["state"] == "not expressible":
            return "not expressible here: " + r["note"]
        if r["state"] == "error":
            return "error: " + r["note"]
        return "off, predicted %s: %s" % (r["state"], gap_or_unknown(r))
    ratio = r["ratio"]
    if r["bound"] == "lower" and ratio >= 1 - tol and r["quantity"] == "max_context":
        # the source ran this length without looking for its limit: a longer predicted
        # limit agrees with it, and says nothing more
        return "agrees (published is a lower bound; predicted x%.2f)" % ratio
    if abs(ratio - 1) <= tol:
        v = "within +-%d%%" % round(tol * 100)
        return v + (" (a lower bound)" if r["state"] == "lower bound" else "")
    word = "off x%.2f" % ratio
    if r["state"] == "lower bound" and ratio < 1:
        return "off, predicted at least x%.2f (raise --seq-stop)" % ratio
    return "%s, missing mechanism: %s" % (word, gap_or_unknown(r))


def agrees(r):
    """within tolerance, or at or above a published lower bound"""
    tol = QUANTITIES[r["quantity"]][1]
    if r["bound"] == "lower" and r["quantity"] == "max_context":
        return r["ratio"] >= 1 - tol
    return abs(r["ratio"] - 1) <= tol


def gap_or_unknown(r):
    g = (r.get("gap") or "").strip()
    return g if g else "not identified yet (docs/external.md)"


def spread(ratios):
    xs = sorted(ratios)
    n = len(xs)
    if n == 0:
        return None
    q = statistics.quantiles(xs, n=4) if n >= 2 else [xs[0], xs[0], xs[0]]
    return {"n": n, "median": statistics.median(xs), "min": xs[0], "max": xs[-1], "q1": q[0], "q3": q[2]}


def fmt(v, q):
    if v is None:
        return "-"
    if q == "max_context":
        return "%.3gM" % (v / 1e6) if v >= 1e6 else "%.0fK" % (v / 1e3)
    if q in ("throughput", "tflops"):
        return "%.0f" % v
    return "%.2f" % v if q == "peak_memory" else "%.1f" % v


# ------------------------------------------------------------------ history
def git_commit():
    # a binary built from another commit than the tree's (a baseline rebuilt to record its
    # ratios) names it in CPB_EXTERNAL_COMMIT
    if os.environ.get("CPB_EXTERNAL_COMMIT"):
        return os.environ["CPB_EXTERNAL_COMMIT"]
    try:
        c = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, timeout=10)
        d = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, timeout=10)
        sha = c.stdout.decode().strip() or "unknown"
        return sha + ("+dirty" if d.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def read_history(path):
    if not path or not os.path.exists(path):
        return []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise BadInput("%s: cannot read the history (%s); it is written by --record" % (path, e))
    if rows and any(c not in rows[0] for c in HISTORY_COLUMNS):
        raise BadInput("%s: not a history file (columns %s expected)" % (path, ",".join(HISTORY_COLUMNS)))
    return rows


def append_history(path, label, rows):
    new = not os.path.exists(path)
    commit, date = git_commit(), datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ")
    with open(path, "a", newline="", encoding="utf-8") as f:
        if new:
            f.write("# written by paper/external.py --record LABEL: each row's prediction under a labelled build\n")
        w = csv.DictWriter(f, fieldnames=HISTORY_COLUMNS, lineterminator="\n")
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({"label": label, "commit": commit, "date": date, "id": r["id"],
                        "predicted": "" if r["pred"] is None else "%.6g" % r["pred"],
                        "ratio": "" if r.get("ratio") is None else "%.4f" % r["ratio"], "state": r["state"]})


# ------------------------------------------------------------------ the report
def figure(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    qs = [q for q in QUANTITIES if any(r["quantity"] == q and r["pred"] is not None for r in rows)]
    if not qs:
        return False
    fig, axes = plt.subplots(1, len(qs), figsize=(4.2 * len(qs), 4), squeeze=False)
    for ax, q in zip(axes[0], qs):
        pts = [(r["published_v"], r["pred"], r["id"]) for r in rows if r["quantity"] == q and r["pred"] is not None]
        tol = QUANTITIES[q][1]
        lo = min(min(a, b) for a, b, _ in pts) / 1.5
        hi = max(max(a, b) for a, b, _ in pts) * 1.5
        xs = [lo, hi]
        ax.plot(xs, xs, "k-", lw=0.8, label="predicted = published")
        ax.fill_between(xs, [x * (1 - tol) for x in xs], [x * (1 + tol) for x in xs], color="0.85",
                        label="+-%d%%" % round(tol * 100))
        ax.scatter([a for a, _, _ in pts], [b for _, b, _ in pts], s=18, zorder=3)
        for a, b, i in pts:
            ax.annotate(i, (a, b), fontsize=5, xytext=(2, 2), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        unit = next(r["unit"] for r in rows if r["quantity"] == q)
        ax.set_title("%s (%s)" % (q, unit), fontsize=9)
        ax.set_xlabel("published")
        ax.set_ylabel("cpbench prediction (simulator)")
        ax.legend(fontsize=6, loc="upper left")
    fig.suptitle("cpbench predictions vs published measurements (paper/external.csv)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def cell(t):
    return str(t).replace("|", "\\|").replace("\n", " ")


def report(rows, history, out, csv_path):
    labels = []
    for h in history:
        if h["label"] not in labels:
            labels.append(h["label"])
    hist = {(h["label"], h["id"]): h for h in history}
    commits = {h["label"]: h["commit"] for h in history}
    png = os.path.splitext(out)[0] + ".png"
    drew = figure(rows, png)
    L = []
    L.append("# cpbench against published measurements (external.csv)\n")
    L.append("Generated by `paper/external.py` from `%s` with the simulator (every number in the "
             "*predicted* column is a simulator PREDICTION, not a measurement) at commit %s. "
             "Ratio = predicted / published. Tolerances: longest context and peak memory +-15%%, "
             "throughput, TFLOP/s and MFU +-25%%. docs/external.md describes the method.\n" %
             (os.path.relpath(csv_path, ROOT), git_commit()))
    L.append("## Every measurement\n")
    head = ["id", "source", "quantity", "published", "bound", "basis", "unit", "predicted", "ratio", "verdict"]
    head += ["ratio at '%s' (%s)" % (l, commits[l]) for l in labels]
    head += ["note", "command"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for r in rows:
        q = r["quantity"]
        c = [r["id"], r["source"], q, fmt(r["published_v"], q), r["bound"] or "value", r["basis"] or "-", r["unit"],
             fmt(r["pred"], q),
             "-" if r.get("ratio") is None else "%.2f" % r["ratio"], verdict(r)]
        for l in labels:
            h = hist.get((l, r["id"]))
            c.append("-" if not h else (h["ratio"] or h["state"]))
        note = r["note"] + (" (ran the stand-in `%s`)" % r["stand_in"] if r.get("stand_in") else "")
        c += [note, "`%s`" % r["command"]]
        L.append("| " + " | ".join(cell(x) for x in c) + " |")
    L.append("\n## Ratios per quantity\n")
    L.append("| quantity | rows predicted | within tolerance (or at/above a lower bound) | median ratio | IQR | min | max |")
    L.append("|---|---|---|---|---|---|---|")
    for q, (_, tol) in QUANTITIES.items():
        rs = [r["ratio"] for r in rows if r["quantity"] == q and r.get("ratio") is not None]
        sp = spread(rs)
        if not sp:
            n = sum(1 for r in rows if r["quantity"] == q)
            L.append("| %s | 0 of %d | - | - | - | - | - |" % (q, n))
            continue
        within = sum(1 for r in rows if r["quantity"] == q and r.get("ratio") is not None and agrees(r))
        L.append("| %s | %d of %d | %d (+-%d%%) | %.2f | %.2f-%.2f | %.2f | %.2f |" %
                 (q, sp["n"], sum(1 for r in rows if r["quantity"] == q), within, round(tol * 100),
                  sp["median"], sp["q1"], sp["q3"], sp["min"], sp["max"]))
    for name, qs in (("memory and context", ("max_context", "peak_memory")),
                     ("throughput, TFLOP/s, MFU", ("throughput", "tflops", "mfu"))):
        rs = [r for r in rows if r["quantity"] in qs and r.get("ratio") is not None]
        within = sum(1 for r in rs if agrees(r))
        sp = spread([r["ratio"] for r in rs])
        L.append("\n%s: %d of %d predicted rows within tolerance%s." %
                 (name, within, len(rs), "; median ratio %.2f" % sp["median"] if sp else ""))
    if drew:
        L.append("\n![predicted vs published](%s)\n" % os.path.basename(png))
    else:
        L.append("\nNo figure: no row could be predicted with this build (every row is listed below).")
    L.append("\n## Not expressible here (never dropped)\n")
    ne = [r for r in rows if r["state"] == "not expressible"]
    if not ne:
        L.append("Every row's setup can be stated.")
    else:
        L.append("| id | published | what is missing (the command's error) |")
        L.append("|---|---|---|")
        for r in ne:
            L.append("| %s | %s %s | %s |" % (cell(r["id"]), fmt(r["published_v"], r["quantity"]), r["unit"], cell(r["note"])))
    L.append("\n## Readings and sources\n")
    for r in rows:
        L.append("- **%s** — %s. %s. Setup: %s. Reading: %s" %
                 (cell(r["id"]), cell(r["source"]), cell(r["locator"]), cell(r["setup"]), cell(r["reading"])))
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(L) + "\n")
    os.replace(tmp, out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=os.path.join(HERE, "external.csv"))
    ap.add_argument("--cpbench", default=os.path.join(ROOT, "build", "cpbench"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "external.md"))
    ap.add_argument("--rows", default="", help="comma-separated ids: run only these rows")
    ap.add_argument("--history", default="", help="a history CSV: its labelled ratios are shown beside today's")
    ap.add_argument("--record", default="", help="append this run to --history under this label")
    ap.add_argument("--stand-in", action="append", default=[], metavar="'FROM=>TO'",
                    help="a study aid: replace text FROM by TO in every command (e.g. '--attn fa2=>--attn cudnn' "
                         "before fa2 exists); every row it changes is marked [stand-in]; make reproduce never uses it")
    a = ap.parse_args(argv)
    try:
        if a.record and not a.history:
            raise BadInput("--record needs --history FILE (where the run is appended)")
        rows = read_table(a.csv)
        stand_ins = []
        for si in a.stand_in:
            if "=>" not in si:
                raise BadInput("--stand-in '%s': expected FROM=>TO" % si)
            stand_ins.append(tuple(si.split("=>", 1)))
        for r in rows:
            r["stand_in"] = apply_stand_ins(r, stand_ins)
        if a.rows:
            want = [x for x in a.rows.split(",") if x]
            known = {r["id"] for r in rows}
            unknown = [x for x in want if x not in known]
            if unknown:
                raise BadInput("--rows: %s not in %s; ids are the csv's first column" % (", ".join(unknown), a.csv))
            rows = [r for r in rows if r["id"] in want]
        outdir = os.path.dirname(os.path.abspath(a.out))
        if os.path.isdir(a.out) or (os.path.exists(outdir) and not os.path.isdir(outdir)):
            raise BadInput("--out %s: not a writable file path (a directory is in the way)" % a.out)
        history = read_history(a.history)
        if not os.access(a.cpbench, os.X_OK):
            raise BadInput("--cpbench %s: not an executable; build first (make build)" % a.cpbench)
        os.makedirs(outdir, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="cpb-external-") as tmp:
            for r in rows:
                run_row(r, os.path.abspath(a.cpbench), tmp)
                r["ratio"] = None if r["pred"] is None else r["pred"] / r["published_v"]
                print("%-28s %-12s published %-10s predicted %-10s %s" %
                      (r["id"], r["quantity"], fmt(r["published_v"], r["quantity"]), fmt(r["pred"], r["quantity"]),
                       verdict(r)))
        if a.record:
            append_history(a.history, a.record, rows)
            history = read_history(a.history)
        report(rows, history, a.out, a.csv)
    except BadInput as e:
        print("external.py: %s" % e, file=sys.stderr)
        return 2
    errors = [r["id"] for r in rows if r["state"] == "error"]
    print("wrote %s (%d rows; %d predicted, %d not expressible, %d errors)" %
          (a.out, len(rows), sum(1 for r in rows if r["pred"] is not None),
           sum(1 for r in rows if r["state"] == "not expressible"), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
