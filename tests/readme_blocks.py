#!/usr/bin/env python3
"""readme_blocks.py README CPBENCH WORKDIR SRCDIR — run every command block of README.md.

Every fenced block of the README carries an info string:
  ```sh                 commands, run here in order (bash -e -o pipefail) in a fresh folder
                        with `cpbench` on PATH (the built one) and paper/ beside it;
  ```sh skip: REASON    commands that cannot run in CI (GPUs, the whole grid, an install
                        as root): the reason is required, and the number of such blocks is
                        fixed below, so that skipped blocks cannot silently grow;
  ```text               output or a listing, never a command (checked: no line of it
                        starts with a command).
A bare ``` opening, another info string, or a command in an indented (4-space) block is an
error: every command a reader may copy is either run here or skipped with its reason.
Run by ctest (tests/mpi/harness.cmake)."""
import os
import re
import shutil
import subprocess
import sys

# the skipped blocks: make test/reproduce, make install, the synopsis, nsys on 8 GPUs.
# Adding one means changing this number, in review.
EXPECTED_SKIPS = 4
COMMAND = re.compile(r"^(\$ )?(cpbench|mpirun|make|python3|build/cpbench|\./build/cpbench)\b")


def blocks(path):
    out, cur, info, start = [], None, None, 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if cur is None:
            m = re.match(r"^```(.*)$", line)
            if m:
                cur, info, start = [], m.group(1).strip(), n
            elif line.startswith("    ") and COMMAND.match(line.strip()):
                out.append(("indented", None, n, [line]))
        elif line.startswith("```"):
            out.append(("fence", info, start, cur))
            cur = None
        else:
            cur.append(line)
    if cur is not None:
        out.append(("open", info, start, cur))
    return out


def main():
    readme, cpbench, work, src = sys.argv[1:5]
    errors, skips, runs = [], [], []
    for kind, info, line, body in blocks(readme):
        where = "%s:%d" % (os.path.basename(readme), line)
        if kind == "indented":
            errors.append("%s: a command in an indented block (fence it as ```sh or ```sh skip: REASON): %s"
                          % (where, body[0].strip()))
        elif kind == "open":
            errors.append("%s: a fence that is never closed" % where)
        elif info == "sh":
            runs.append((where, body))
        elif info.startswith("sh skip:"):
            if not info[len("sh skip:"):].strip():
                errors.append("%s: ```sh skip: needs a reason" % where)
            skips.append((where, info))
        elif info == "text":
            for b in body:
                if COMMAND.match(b.strip()) and not b.startswith(" "):
                    errors.append("%s: a command in a ```text block (run it as ```sh, or skip it with a reason): %s"
                                  % (where, b))
        else:
            errors.append("%s: a fenced block tagged %r: use ```sh, ```sh skip: REASON or ```text" % (where, info))
    if len(skips) != EXPECTED_SKIPS:
        errors.append("%d skipped blocks, expected %d (tests/readme_blocks.py EXPECTED_SKIPS): %s"
                      % (len(skips), EXPECTED_SKIPS, "; ".join("%s %s" % s for s in skips)))
    if not runs:
        errors.append("no ```sh block to run")
    if errors:
        print("readme_blocks: FAIL:\n  " + "\n  ".join(errors), file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "bin"))
    os.symlink(os.path.abspath(cpbench), os.path.join(work, "bin", "cpbench"))
    if os.path.exists("/usr/bin/python3"):  # the system python has h5py (scripts/setup.sh)
        os.symlink("/usr/bin/python3", os.path.join(work, "bin", "python3"))
    os.symlink(os.path.join(os.path.abspath(src), "paper"), os.path.join(work, "paper"))
    env = dict(os.environ, PATH=os.path.join(work, "bin") + os.pathsep + os.environ.get("PATH", ""))
    if os.geteuid() == 0:  # as the README says: root adds --allow-run-as-root, or these
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    for where, body in runs:
        script = "set -e -o pipefail -x\n" + "\n".join(body) + "\n"
        p = subprocess.run(["bash", "-c", script], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=240)
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0:
            print("readme_blocks: FAIL: the block at %s exited %d; its output's end:\n%s"
                  % (where, p.returncode, out[-4000:]), file=sys.stderr)
            return 1
        print("readme_blocks: %s ran (%d lines)" % (where, len(body)))
    print("readme_blocks: ok: %d block(s) run, %d skipped with a reason" % (len(runs), len(skips)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
