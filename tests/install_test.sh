#!/usr/bin/env bash
# install_test.sh BUILD_DIR WORKDIR SRCDIR — `make install` (README.md, "Install"): installed
# into a temporary PREFIX, cpbench runs from PATH (`cpbench list`), with the cuda plugin in
# PREFIX/lib (where cpbench looks: docs/cuda.md) when the build has one; the Makefile's
# install target uses PREFIX (default /usr/local).  Run by ctest (tests/mpi/harness.cmake).
set -euo pipefail
B=$1
W=$2
SRC=$3
rm -rf "$W" && mkdir -p "$W"
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
cmake --install "$B" --prefix "$W/prefix" > "$W/install.txt" 2>&1 || fail "cmake --install: $(tail -5 "$W/install.txt")"
[ -x "$W/prefix/bin/cpbench" ] || fail "no $W/prefix/bin/cpbench"
( cd "$W" && PATH="$W/prefix/bin:$PATH" cpbench list > list.txt 2>&1 ) || fail "cpbench list from PATH: $(tail -3 "$W/list.txt")"
grep -q "^Methods:" "$W/list.txt" || fail "cpbench list printed: $(head -3 "$W/list.txt")"
[ "$(PATH="$W/prefix/bin:$PATH" command -v cpbench)" = "$W/prefix/bin/cpbench" ] || fail "cpbench on PATH is not the installed one"
if [ -f "$B/libcpb_cuda.so" ]; then
  [ -f "$W/prefix/lib/libcpb_cuda.so" ] || fail "the cuda plugin was built but not installed in PREFIX/lib"
fi
# the Makefile: PREFIX defaults to /usr/local and is passed to cmake --install
make -s -n -C "$SRC" install BUILD="$B" PREFIX="$W/p2" 2>/dev/null | grep -q -- "cmake --install $B --prefix $W/p2" ||
  fail "make install does not pass PREFIX to cmake --install"
make -s -n -C "$SRC" install BUILD="$B" 2>/dev/null | grep -q -- "--prefix /usr/local" || fail "PREFIX's default is not /usr/local"
echo "install_test: ok"
