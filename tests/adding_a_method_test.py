#!/usr/bin/env python3
"""adding_a_method_test.py DOC SRCDIR WORKDIR — run the walk-through of docs/adding-a-method.md.

The page adds a method end to end (its folder, the registry line, verify cases, a memory
test, docs) with commands in ```sh blocks.  This copies the source tree to WORKDIR/src and
runs every block there, in order (bash -e -o pipefail), so that a change to the runtime API,
the registry, the test harness or the command line that breaks the walk-through fails
here.  The blocks follow tests/readme_blocks.py's rules (every fenced block is ```sh or
```text; no command hides in an indented block), and none may be skipped.

The copy builds from scratch.  When ccache is on PATH the build uses it with the copy laid
out as the source tree is (WORKDIR/src/build beside WORKDIR/src as SRCDIR/build beside
SRCDIR) and the directory left out of the hash, so the unchanged files are cache hits.
Run by ctest (tests/mpi/harness.cmake)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_blocks import COMMAND, blocks  # noqa: E402  (the same block rules as README.md)


def source_files(src):
    """the tree's files: git's (tracked and untracked-but-not-ignored) in a checkout, else
    everything but build folders"""
    if os.path.isdir(os.path.join(src, ".git")):
        out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             stdout=subprocess.PIPE, check=True).stdout.decode()
        return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(src, f))]
    files = []
    for root, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith("build") and d != ".git"]
        files += [os.path.relpath(os.path.join(root, n), src) for n in names]
    return files


def main():
    doc, src, work = (os.path.abspath(a) for a in sys.argv[1:4])
    errors, runs = [], []
    for kind, info, line, body in blocks(doc):
        where = "%s:%d" % (os.path.basename(doc), line)
        if kind == "indented":
            errors.append("%s: a command in an indented block (fence it as ```sh): %s" % (where, body[0].strip()))
        elif kind == "open":
            errors.append("%s: a fence that is never closed" % where)
        elif info == "sh":
            runs.append((where, body))
        elif info == "text":
            for b in body:
                if COMMAND.match(b.strip()) and not b.startswith(" "):
                    errors.append("%s: a command in a ```text block (make it ```sh): %s" % (where, b))
        elif info in ("c", "cmake"):
            pass  # code shown for reading; what the walk-through writes is in its ```sh blocks
        else:
            errors.append("%s: a fenced block tagged %r: the walk-through runs every command (```sh), so none "
                          "may be skipped" % (where, info))
    if not runs:
        errors.append("%s: no ```sh block to run" % doc)
    if errors:
        print("adding_a_method: FAIL:\n  " + "\n  ".join(errors), file=sys.stderr)
        return 1
    tree = os.path.join(work, "src")
    shutil.rmtree(work, ignore_errors=True)
    for f in source_files(src):
        os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
        shutil.copy2(os.path.join(src, f), os.path.join(tree, f), follow_symlinks=False)
    env = dict(os.environ)
    if os.geteuid() == 0:  # the page says so: root adds --allow-run-as-root, or these
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if shutil.which("ccache"):
        # CMake 3.17+ takes a compiler launcher from these; the copy's paths are made
        # relative to a common base and its directory is left out of the hash
        env.setdefault("CMAKE_C_COMPILER_LAUNCHER", "ccache")
        env.setdefault("CMAKE_CXX_COMPILER_LAUNCHER", "ccache")
        env.setdefault("CCACHE_BASEDIR", os.path.commonpath([src, work]))
        env.setdefault("CCACHE_NOHASHDIR", "1")
    for where, body in runs:
        script = "set -e -o pipefail -x\n" + "\n".join(body) + "\n"
        p = subprocess.run(["bash", "-c", script], cwd=tree, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=900)
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0:
            print("adding_a_method: FAIL: the block at %s exited %d; its output's end:\n%s"
                  % (where, p.returncode, out[-4000:]), file=sys.stderr)
            return 1
        print("adding_a_method: %s ran (%d lines)" % (where, len(body)))
    print("adding_a_method: ok: %d block(s) run in a copy of the tree" % len(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
