#!/usr/bin/env python3
"""Results files as one CSV, for pandas (and spreadsheets).

    python3 paper/export_csv.py results/reproduce-sim.h5 [more.h5 ...] --out paper/out/results.csv
    python3 -c "import pandas as pd; print(pd.read_csv('paper/out/results.csv').head())"

One line per row of each file's /runs table, every column of results/README.md in the
table's order, then `file` (the results file it came from).  Text columns are decoded; the
per-tag bytes at the peak (`at_peak_bytes`, an array) become one column per tag,
`at_peak_bytes.<tag>` (the tags of the table's `at_peak_tags` attribute).  A row that did not
run to the end (status oom, refused, error) has no time or throughput: those cells are
empty, never 0.  Exit 0 with the CSV written, 2 for a file that is not a cpbench results
file (one line naming it; nothing written)."""
import argparse
import csv
import os
import sys

TIME_COLUMNS = ("step_s", "fwd_s", "bwd_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu",
                "tflops_per_gpu_megatron", "mfu_causal", "mfu_megatron", "tflops_per_gpu_nemo", "mfu_nemo")


def text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def read(path, h5py):
    if not os.path.isfile(path):
        raise ValueError("%s: no such file" % path)
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as e:
        raise ValueError("%s: not an HDF5 file, or a damaged one: %s" % (path, str(e).splitlines()[0]))
    with f:
        if text(f.attrs.get("cpbench_schema", b"")) != "cpbench-results" or "runs" not in f:
            raise ValueError("%s is not a cpbench results file (no cpbench_schema attribute or no /runs table)" % path)
        runs = f["runs"][:]
        tags = text(f["runs"].attrs.get("at_peak_tags", b"")).split(",")
    header, rows = [], []
    for name in runs.dtype.names:
        shape = runs.dtype[name].shape
        if shape:
            header += ["%s.%s" % (name, tags[i] if i < len(tags) and tags[i] else i) for i in range(shape[0])]
        else:
            header.append(name)
    for r in runs:
        status = text(r["status"])
        if not status:
            continue  # the trace of an append that failed part-way: not a row (results/README.md)
        out = []
        for name in runs.dtype.names:
            v = r[name]
            if runs.dtype[name].shape:
                out += [int(x) for x in v]
            elif name in TIME_COLUMNS and status != "ok":
                out.append("")
            else:
                v = text(v)
                out.append(v.item() if hasattr(v, "item") else v)
        rows.append(out + [path])
    return header + ["file"], rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="cpbench results files (HDF5)")
    ap.add_argument("--out", required=True, help="the CSV to write")
    a = ap.parse_args(argv)
    try:
        import h5py
    except ImportError:
        sys.exit("export_csv.py: h5py is missing; run scripts/setup.sh (installs python3-h5py)")
    header, rows = None, []
    try:
        for p in a.results:
            h, rs = read(p, h5py)
            if header is not None and h != header:
                raise ValueError("%s: its columns differ from %s's (another schema version): export them separately"
                                 % (p, a.results[0]))
            header = h
            rows += rs
    except ValueError as e:
        print("export_csv.py: %s" % e, file=sys.stderr)
        return 2
    d = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(d, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print("export_csv.py: %d rows of %d file%s -> %s" % (len(rows), len(a.results), "" if len(a.results) == 1 else "s",
                                                         a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
