#!/usr/bin/env bash
# cuda-libs.sh — where cuBLAS, cuBLASLt, NCCL and cuDNN are on this machine.  The same places,
# in the same order, as cpbench's plugin loader (backends/lib_search.c; docs/cuda.md), and
# more: each python3 found is asked for its real site-packages.  Needs no library, compiler
# or network (it is gpu-bundle/bin/cuda-libs, run on bare GPU machines).
#
#   cuda-libs.sh            a table: library, soname, where it was found (or where it was looked for)
#   cuda-libs.sh --path     the folders of the libraries found, colon-separated (for CPB_CUDA_LIB_PATH)
#   cuda-libs.sh --cmake    CMake options to build against them, one a line: CUDAToolkit_ROOT (the
#                           first toolkit with nvcc, in the order below), CPB_NCCL_ROOT and
#                           CPB_CUDNN_ROOT (the folder above the library's, when it has the
#                           headers: a wheel's nvidia/nccl or nvidia/cudnn), so that a toolkit
#                           without cudnn.h still builds cuDNN attention from the wheel's headers
#
# Exit 0 when cuBLAS, cuBLASLt and NCCL were all found; 1 otherwise (cuDNN is optional).
set -u
mode=table
case "${1:-}" in
  "") ;;
  --path) mode=path ;;
  --cmake) mode=cmake ;;
  -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
  *) echo "usage: cuda-libs.sh [--path|--cmake]" >&2; exit 2 ;;
esac

# name soname required; the sonames of the CUDA 13 builds (gpu-bundle.sh writes the plugin's
# own into lib/cuda-sonames.txt, read first when it is there)
LIBS=("cuBLAS libcublas.so.13 1" "cuBLASLt libcublasLt.so.13 1" "NCCL libnccl.so.2 1" "cuDNN libcudnn.so.9 0")
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/../lib/cuda-sonames.txt" ]; then
  mapfile -t LIBS < <(grep -v '^#' "$here/../lib/cuda-sonames.txt")
fi

DIRS=() RULES=() EMPTY=() TOOLKITS=()
add_dir() { # add_dir DIR RULE: existing folders, each once (by real path)
  local d
  [ -d "$1" ] || return 1
  d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
  for x in "${DIRS[@]+"${DIRS[@]}"}"; do [ "$x" = "$d" ] && return 0; done
  DIRS+=("$d"); RULES+=("$2")
}
add_list() { # add_list VAR RULE
  local v="${!1-}" n=${#DIRS[@]} d
  if [ -n "$v" ]; then
    IFS=: read -r -a parts <<< "$v"
    for d in "${parts[@]}"; do [ -n "$d" ] && add_dir "$d" "$2"; done
  fi
  if [ ${#DIRS[@]} -eq "$n" ]; then
    if [ -z "${!1+set}" ]; then EMPTY+=("$2 (unset)"); elif [ -z "$v" ]; then EMPTY+=("$2 (empty)")
    else EMPTY+=("$2 (no folder of it exists)"); fi
  fi
  return 0
}
add_toolkit() {
  [ -n "${1:-}" ] || return 0
  [ -x "$1/bin/nvcc" ] && TOOLKITS+=("$(cd "$1" && pwd -P)")
  add_dir "$1/lib64" "CUDA toolkit"; add_dir "$1/lib" "CUDA toolkit"
  for t in "$1"/targets/*/lib; do add_dir "$t" "CUDA toolkit"; done
  return 0
}
add_site() { # add_site SITE-PACKAGES RULE
  local d
  for d in "$1"/nvidia/*/lib; do [ -d "$d" ] && add_dir "$d" "$2"; done
  return 0
}
add_python_prefix() {
  local g
  for g in "$1"/lib/python3*/site-packages "$1"/lib/python3*/dist-packages "$1"/lib/python3/dist-packages \
           "$1"/lib64/python3*/site-packages "$1"/local/lib/python3*/dist-packages; do
    [ -d "$g" ] && add_site "$g" "python3 site-packages"
  done
  return 0
}

add_list CPB_CUDA_LIB_PATH CPB_CUDA_LIB_PATH
add_list LD_LIBRARY_PATH LD_LIBRARY_PATH
n=${#DIRS[@]}
add_toolkit "${CUDA_HOME:-}"; add_toolkit "${CUDA_PATH:-}"
IFS=: read -r -a pathdirs <<< "${PATH:-}"
for d in "${pathdirs[@]}"; do [ -x "$d/nvcc" ] && add_toolkit "$d/.."; done
add_toolkit /usr/local/cuda
[ ${#DIRS[@]} -eq "$n" ] && EMPTY+=("CUDA toolkit (none in \$CUDA_HOME, \$CUDA_PATH, PATH's nvcc, /usr/local/cuda)")

# every python3 we can see: asked for its site-packages, and its prefix globbed like the loader does
n=${#DIRS[@]}
pythons=() seen=()
for d in "${pathdirs[@]}" "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin}" "${CONDA_PREFIX:+$CONDA_PREFIX/bin}" /usr/bin /usr/local/bin \
         /opt/*/bin /opt/*/.venv/bin /opt/*/venv/bin "${HOME:+$HOME/.local/bin}"; do
  p="$d/python3"
  [ -n "$d" ] && [ -x "$p" ] && [ -f "$p" ] || continue
  # a virtual environment's python3 links to the system's but has its own site-packages:
  # the same interpreter is asked once per folder, not once per file
  key=$(cd "$d" 2>/dev/null && pwd -P)
  case " ${seen[*]+"${seen[*]}"} " in *" $key "*) continue ;; esac
  seen+=("$key"); pythons+=("$p")
done
for p in "${pythons[@]+"${pythons[@]}"}"; do
  sites=$(timeout 20 "$p" -I -c 'import site,sys
print("\n".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null) || sites=""
  while IFS= read -r s; do [ -n "$s" ] && [ -d "$s" ] && add_site "$s" "python3 site-packages"; done <<< "$sites"
  add_python_prefix "$(dirname "$p")/.."
done
for pre in "${VIRTUAL_ENV:-}" "${CONDA_PREFIX:-}" /usr /usr/local "${HOME:+$HOME/.local}"; do
  [ -n "$pre" ] && add_python_prefix "$pre"
done
[ ${#DIRS[@]} -eq "$n" ] && EMPTY+=("python3 site-packages (no nvidia/*/lib folder; pythons: ${pythons[*]:-none})")

# the dynamic linker's cache, last
ldcache() { command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s {print $NF; exit}'; }

missing=0 found_dirs=() found_libs=() rows=()
for entry in "${LIBS[@]}"; do
  read -r name soname required <<< "$entry"
  where="" rule=""
  for i in "${!DIRS[@]}"; do
    if [ -f "${DIRS[$i]}/$soname" ]; then where="${DIRS[$i]}/$soname"; rule="${RULES[$i]}"; break; fi
  done
  if [ -z "$where" ]; then where=$(ldcache "$soname"); [ -n "$where" ] && rule="ld.so.cache"; fi
  if [ -n "$where" ]; then
    rows+=("$(printf '%-9s %-18s %s  (%s)' "$name" "$soname" "$where" "$rule")")
    found_dirs+=("$(dirname "$where")"); found_libs+=("$name $(dirname "$where")")
  else
    rows+=("$(printf '%-9s %-18s not found%s' "$name" "$soname" "$([ "$required" = 1 ] || echo ' (optional)')")")
    [ "$required" = 1 ] && missing=1
  fi
done

case $mode in
  path)
    out=""
    for d in "${found_dirs[@]+"${found_dirs[@]}"}"; do case ":$out:" in *":$d:"*) ;; *) out="${out:+$out:}$d" ;; esac; done
    echo "$out" ;;
  cmake)
    [ ${#TOOLKITS[@]} -gt 0 ] && echo "-DCUDAToolkit_ROOT=${TOOLKITS[0]}"
    # each library's own folder (the one the loader takes), not the first that has its file
    for entry in "${found_libs[@]+"${found_libs[@]}"}"; do
      read -r name d <<< "$entry"
      case $name in
        NCCL) [ -f "$d/../include/nccl.h" ] && echo "-DCPB_NCCL_ROOT=$(cd "$d/.." && pwd)" ;;
        cuDNN) [ -f "$d/../include/cudnn.h" ] && echo "-DCPB_CUDNN_ROOT=$(cd "$d/.." && pwd)" ;;
      esac
    done ;;
  table)
    printf '%s\n' "${rows[@]}"
    if [ "$missing" = 1 ] || [ "${CPB_CUDA_LIBS_VERBOSE:-0}" = 1 ]; then
      echo "looked in, in this order:"
      for i in "${!DIRS[@]}"; do printf '  %-22s %s\n' "${RULES[$i]}" "${DIRS[$i]}"; done
      for e in "${EMPTY[@]+"${EMPTY[@]}"}"; do printf '  %s\n' "$e"; done
      echo "  the dynamic linker's cache (ldconfig -p)"
    fi ;;
esac
exit $missing
