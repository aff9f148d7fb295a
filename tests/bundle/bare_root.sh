#!/usr/bin/env bash
# bare_root.sh — proves gpu-bundle/ complete: from the bundle alone, in a minimal Debian root
# (debootstrap --variant=minbase bookworm: none of the project's packages), as root, with no
# network and a clean environment:
#   A. no CUDA library at all: `bin/cpbench list` (for people, and --format flat: the
#      fields the scripts read); `bin/mpirun -np 4 bin/cpbench verify
#      --backend cpu --method all --model tiny --seq 192`; `gpu-check.sh --dry-run`; the cuda
#      backend refuses (exit 2), naming the library it lacks and where it looked;
#   B. this machine's CUDA toolkit libraries at /usr/local/cuda/lib64 (a GPU machine's
#      layout, still no GPU): the plugin loads with them, the cuda backend refuses with "no
#      GPU present" (exit 2), gpu-check --dry-run passes;
#   C. the same libraries as a Python wheel's nvidia/cu13/lib under a venv on PATH: the
#      finder and the loader find them there.
# The root is made once and kept in BUILD/bare-root (make clean removes it).  /proc, /sys,
# /dev and /dev/shm are mounted inside it only within a private mount namespace (unshare -m),
# so nothing stays mounted when the test ends; unshare -n gives it no network.  Skipped, with a
# message, only when debootstrap cannot reach the Debian mirror.
#
#   tests/bundle/bare_root.sh [BUNDLE [BUILD]]     (defaults gpu-bundle, build-bundle)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=$(cd "${1:-gpu-bundle}" 2>/dev/null && pwd) || { echo "bare_root: no bundle at ${1:-gpu-bundle}: run scripts/gpu-bundle.sh first" >&2; exit 1; }
BUILD=${2:-build-bundle}
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd)
ROOT="$BUILD/bare-root"
MIRROR=${CPB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
T0=$(date +%s)
[ "$(id -u)" -eq 0 ] || { echo "bare_root: needs root (debootstrap, chroot, unshare)" >&2; exit 1; }
for c in debootstrap unshare chroot ip; do
  command -v $c >/dev/null 2>&1 || { echo "bare_root: $c not found: run scripts/setup.sh bundle" >&2; exit 1; }
done
[ -x "$BUNDLE/bin/cpbench" ] && [ -x "$BUNDLE/gpu-check.sh" ] || { echo "bare_root: $BUNDLE is not a gpu-bundle" >&2; exit 1; }

# ---------------------------------------------------------------- the root, once
if [ ! -f "$ROOT/.cpbench-bare-root" ]; then
  rm -rf "$ROOT" "$ROOT.tmp"
  echo "bare_root: debootstrap --variant=minbase bookworm into $ROOT"
  if ! debootstrap --variant=minbase bookworm "$ROOT.tmp" "$MIRROR" > "$BUILD/debootstrap.log" 2>&1; then
    if grep -qE "Failed getting release file|Couldn't download|Temporary failure in name resolution|Could not resolve|Connection refused|Network is unreachable|Failure trying to run: wget" "$BUILD/debootstrap.log"; then
      tail -5 "$BUILD/debootstrap.log"
      echo "bare_root: SKIPPED: debootstrap cannot reach the Debian mirror $MIRROR (log: $BUILD/debootstrap.log)"
      rm -rf "$ROOT.tmp"
      exit 0
    fi
    tail -20 "$BUILD/debootstrap.log"
    echo "bare_root: debootstrap failed (log: $BUILD/debootstrap.log)" >&2
    exit 1
  fi
  mv "$ROOT.tmp" "$ROOT" && touch "$ROOT/.cpbench-bare-root"
fi
echo "bare_root: root ready after $(( $(date +%s) - T0 ))s ($(du -sh "$ROOT" | cut -f1))"

# the bundle alone goes in; mount points for the CUDA libraries of cases B and C
rm -rf "$ROOT/gpu-bundle" "$ROOT/results" "$ROOT/opt/venv" "$ROOT/usr/local/cuda"
cp -a "$BUNDLE" "$ROOT/gpu-bundle"
mkdir -p "$ROOT/results" "$ROOT/usr/local/cuda/lib64" "$ROOT/opt/venv/bin" \
         "$ROOT/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib"
# a venv's python3 that cannot run here (there is no Python in the root): the finder then
# falls back to the venv's folders, as the loader does
printf '#!/bin/sh\necho "no python in the bare root" >&2\nexit 1\n' > "$ROOT/opt/venv/bin/python3"
chmod +x "$ROOT/opt/venv/bin/python3"
HOSTLIB=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -f "$d/libcublas.so.13" ] && [ -f "$d/libnccl.so.2" ] && { HOSTLIB=$(cd "$d" && pwd -P); break; }
done

# ---------------------------------------------------------------- the checks, in the namespace
cat > "$ROOT/bare-root-checks.sh" <<'CHECKS'
#!/bin/bash
# runs inside the bare root: expect CODE PATTERN NAME -- CMD...
fails=0 passes=0
expect() {
  local code=$1 pat=$2 name=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" > "/results/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_').out"
  if [ "$rc" -eq "$code" ] && printf '%s\n' "$out" | grep -Eq -- "$pat"; then
    echo "ok    $name"; passes=$((passes + 1))
  else
    echo "FAIL  $name (exit $rc, expected $code; pattern '$pat')"; printf '%s\n' "$out" | tail -25 | sed 's/^/      /'
    fails=$((fails + 1))
  fi
}
cd /
B=/gpu-bundle/bin
case $1 in
A)
  expect 0 "^Methods:" "A: cpbench list (for people)" -- $B/cpbench list
  # the scripts' form: PATH<TAB>VALUE lines (harness/list_json.h)
  expect 0 "^backends\.cuda\.description.compiled in. cannot load the plugin .*libcublas.so.13 \(needed by .*was not found. looked" \
    "A: cpbench list --format flat (no CUDA library)" -- $B/cpbench list --format flat
  expect 0 "^backends\.cuda\.present.false$" "A: cpbench list --format flat: cuda not present" -- $B/cpbench list --format flat
  # every registered method passes: the count is the registry's (cpbench list --format flat), not a typed number
  expect 0 "hupipe: PASS" "A: mpirun -np 4 cpbench verify --backend cpu --method all --model tiny --seq 192" -- \
    bash -c "n=\$($B/cpbench list --format flat | grep -c '^methods\.[0-9]*\.name	'); $B/mpirun -np 4 $B/cpbench verify --backend cpu --method all --model tiny --seq 192 > /results/verify.txt 2>&1; rc=\$?; cat /results/verify.txt; [ \$n -ge 9 ] && [ \$(grep -c ': PASS\$' /results/verify.txt) -eq \$n ] && ! grep -q FAIL /results/verify.txt && exit \$rc; exit 1"
  expect 0 "result: every step passed" "A: gpu-check.sh --dry-run" -- /gpu-bundle/gpu-check.sh --dry-run --log-dir /results/gpu-check-A
  expect 2 "cuda backend: cannot load the plugin .*libcublas.so.13 \(needed by .*was not found. looked" \
    "A: cpbench run --backend cuda refuses (exit 2)" -- $B/cpbench run --backend cuda --method ulysses --model tiny --seq 64
  expect 2 "cuda backend cannot run here: .*libcublas.so.13" "A: cpbench verify --backend cuda refuses (exit 2)" -- \
    $B/mpirun -np 2 $B/cpbench verify --backend cuda --method ulysses --model tiny --seq 64
  expect 1 "cuBLAS +libcublas.so.13 +not found" "A: cuda-libs says what is missing" -- $B/cuda-libs
  # a Hugging Face config.json, read by the Jansson linked into cpbench (no libjansson here)
  printf '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256}\n' > /results/config.json
  printf '{"hidden_size": "4096"}\n' > /results/bad-config.json
  expect 0 "^Recommendation \(a prediction: h100-sxm, torchtitan\)" "A: cpbench plan --model-config (Jansson)" -- \
    $B/cpbench plan --model-config /results/config.json --gpus 8 --seq 1M
  expect 2 "hidden_size" "A: a bad config.json is refused (exit 2)" -- \
    $B/cpbench run --backend sim --method ulysses --model-config /results/bad-config.json --gpus 8 --seq 1M ;;
B)
  expect 0 "^backends\.cuda\.description.compiled in. plugin /gpu-bundle/lib/libcpb_cuda.so loaded. .*cuBLAS from /usr/local/cuda/lib64/libcublas.so.13.*NCCL from /usr/local/cuda/lib64/libnccl.so.2" \
    "B: cpbench list --format flat (toolkit at /usr/local/cuda)" -- $B/cpbench list --format flat
  expect 0 "^backends\.cuda\.devices.0$" "B: cpbench list --format flat: no device" -- $B/cpbench list --format flat
  expect 2 "cuda backend: no GPU present" "B: cpbench run --backend cuda refuses: no GPU (exit 2)" -- \
    $B/cpbench run --backend cuda --method ulysses --model tiny --seq 64
  expect 2 "no NVIDIA driver" "B: cpbench verify --backend cuda refuses: no GPU (exit 2)" -- \
    $B/mpirun -np 4 $B/cpbench verify --backend cuda --comm mpi --method all --model tiny --seq 192
  expect 2 "no CUDA device" "B: cpbench device-props refuses: no GPU (exit 2)" -- $B/cpbench device-props
  expect 0 "cuda plugin and libraries load +ok" "B: gpu-check.sh --dry-run" -- /gpu-bundle/gpu-check.sh --dry-run --log-dir /results/gpu-check-B ;;
C)
  W=/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib
  expect 0 "cuBLAS +libcublas.so.13 +$W/libcublas.so.13 +\(python3 site-packages\)" "C: cuda-libs finds a wheel's libraries" -- \
    env PATH=/opt/venv/bin:/usr/bin:/bin $B/cuda-libs
  expect 0 "^backends\.cuda\.description.*cuBLAS from $W/libcublas.so.13" "C: cpbench list loads a wheel's libraries" -- \
    env PATH=/opt/venv/bin:/usr/bin:/bin $B/cpbench list --format flat
  expect 0 "^backends\.cuda\.description.*cuBLAS from $W/libcublas.so.13" "C: the loader alone finds them (venv on PATH, no finder)" -- \
    env PATH=/opt/venv/bin:/usr/bin:/bin CPB_CUDA_LIB_PATH= $B/cpbench list --format flat ;;
esac
echo "bare root $1: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
CHECKS
chmod +x "$ROOT/bare-root-checks.sh"

# in_root CASE: mount what a root needs, privately, and run the checks with a clean environment
in_root() {
  local case=$1 bind_src=${2:-} bind_dst=${3:-}
  unshare -m -n --propagation private bash -c '
    set -e
    R=$1 case=$2 src=$3 dst=$4
    ip link set lo up          # Open MPI'"'"'s launcher needs an interface; there is no other
    mount -t proc proc "$R/proc"
    mount -t sysfs sys "$R/sys"
    mount --rbind /dev "$R/dev"
    mount -t tmpfs -o mode=1777 shm "$R/dev/shm"
    [ -n "$src" ] && mount --bind -o ro "$src" "$R$dst"
    set +e
    chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root /bin/bash /bare-root-checks.sh "$case"
  ' _ "$ROOT" "$case" "$bind_src" "$bind_dst"
}
rc=0
in_root A || rc=1
if [ -n "$HOSTLIB" ]; then
  in_root B "$HOSTLIB" /usr/local/cuda/lib64 || rc=1
  in_root C "$HOSTLIB" /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib || rc=1
else
  echo "bare_root: cases B and C need this machine's CUDA toolkit libraries (libcublas.so.13, libnccl.so.2); none found" >&2
  rc=1
fi
# nothing may stay mounted under the build folder (make clean would follow a bind of /dev)
if grep -q " $ROOT" /proc/mounts; then
  echo "bare_root: something is still mounted under $ROOT:" >&2; grep " $ROOT" /proc/mounts >&2; rc=1
fi
echo "bare_root: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - T0 ))s (outputs in $ROOT/results)"
exit $rc
