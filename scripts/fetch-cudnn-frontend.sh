#!/usr/bin/env bash
# fetch-cudnn-frontend.sh — cudnn-frontend's headers (header-only C++, NVIDIA's PyPI package
# nvidia-cudnn-frontend, pinned below) into .deps/cudnn-frontend/include, for the cuda
# plugin's cuDNN attention (backends/cuda/CMakeLists.txt looks there).
#
# The wheel is built per Python version and Debian's python refuses system-wide installs, so
# it is downloaded (pip download --no-deps, for one pinned Python and platform: the headers
# are the same in every wheel), checked against its sha256 and only its include/ is unpacked
# (Python's zipfile: no unzip needed).  Nothing is installed.  Skipped when the headers are
# there, or when there is no CUDA toolkit with cuDNN's headers (nothing would use them); a
# failed download is a warning: the plugin then builds without cuDNN attention and says so
# (`cpbench list`).  Run from `scripts/setup.sh` (so by `make`).
set -euo pipefail
VERSION=1.32.0
WHEEL=nvidia_cudnn_frontend-$VERSION-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
SHA256=c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.deps/cudnn-frontend"
[ -f "$dest/include/cudnn_frontend.h" ] && [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$VERSION" ] && exit 0
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/cudnn.h" ] && [ ! -f /usr/include/cudnn.h ]; then
  exit 0 # no cuDNN headers: the plugin would not use the frontend
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "cpbench setup: cudnn-frontend is pinned for x86_64; fetch nvidia-cudnn-frontend==$VERSION for $(uname -m)" \
       "and unpack its include/ into $dest (the plugin builds without cuDNN attention meanwhile)" >&2
  exit 0
fi
py=/usr/bin/python3
[ -x "$py" ] || py="$(command -v python3 || true)"
warn() { echo "cpbench setup: warning: $* — the cuda plugin builds without cuDNN attention" >&2; exit 0; }
[ -n "$py" ] || warn "no python3 to run pip"
"$py" -m pip --version >/dev/null 2>&1 || warn "$py has no pip (apt-get install python3-pip)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "cpbench setup: fetching cudnn-frontend $VERSION headers (PyPI nvidia-cudnn-frontend)"
"$py" -m pip download --no-deps --no-cache-dir --disable-pip-version-check -q --only-binary=:all: \
  --python-version 3.11 --platform manylinux_2_28_x86_64 -d "$tmp" "nvidia-cudnn-frontend==$VERSION" \
  || warn "pip download nvidia-cudnn-frontend==$VERSION failed (no network?)"
[ -f "$tmp/$WHEEL" ] || warn "pip did not produce $WHEEL"
echo "$SHA256  $tmp/$WHEEL" | sha256sum -c --quiet - || warn "$WHEEL does not match its pinned sha256"
rm -rf "$dest.new"
mkdir -p "$dest.new"
"$py" - "$tmp/$WHEEL" "$dest.new" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith("include/") and not n.endswith("/"):
        z.extract(n, sys.argv[2])
PY
[ -f "$dest.new/include/cudnn_frontend.h" ] || warn "the wheel has no include/cudnn_frontend.h"
echo "$VERSION" > "$dest.new/VERSION"
rm -rf "$dest"
mv "$dest.new" "$dest"
