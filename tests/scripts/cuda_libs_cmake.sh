#!/usr/bin/env bash
# cuda_libs_cmake.sh — scripts/cuda-libs.sh --cmake on a made-up machine: a toolkit in
# $CUDA_HOME (bin/nvcc) and the cuDNN and NCCL wheels' layout (nvidia/X/lib and
# nvidia/X/include) on CPB_CUDA_LIB_PATH.  The options name each library's own folder (the
# one the loader takes, even where the toolkit has a copy too) and the toolkit:
# -DCUDAToolkit_ROOT, -DCPB_NCCL_ROOT, -DCPB_CUDNN_ROOT.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d) && trap 'rm -rf "$W"' EXIT
W=$(cd "$W" && pwd -P)
mkdir -p "$W/cuda/bin" "$W/site/nvidia/cudnn/lib" "$W/site/nvidia/cudnn/include" "$W/site/nvidia/nccl/lib" \
         "$W/site/nvidia/nccl/include"
printf '#!/bin/sh\nexit 0\n' > "$W/cuda/bin/nvcc" && chmod +x "$W/cuda/bin/nvcc"
touch "$W/site/nvidia/cudnn/lib/libcudnn.so.9" "$W/site/nvidia/cudnn/include/cudnn.h" \
      "$W/site/nvidia/nccl/lib/libnccl.so.2" "$W/site/nvidia/nccl/include/nccl.h"
out=$(env CUDA_HOME="$W/cuda" CPB_CUDA_LIB_PATH="$W/site/nvidia/cudnn/lib:$W/site/nvidia/nccl/lib" \
      bash "$ROOT/scripts/cuda-libs.sh" --cmake)
echo "$out"
fails=0
for want in "-DCUDAToolkit_ROOT=$W/cuda" "-DCPB_NCCL_ROOT=$W/site/nvidia/nccl" "-DCPB_CUDNN_ROOT=$W/site/nvidia/cudnn"; do
  printf '%s\n' "$out" | grep -qxF -- "$want" || { echo "cuda_libs_cmake: no line '$want'" >&2; fails=1; }
done
[ "$fails" = 0 ] && echo "cuda_libs_cmake: passed"
exit $fails
