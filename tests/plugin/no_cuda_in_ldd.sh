#!/bin/sh
# no_cuda_in_ldd.sh BINARY: the cpbench executable must start where no CUDA library is
# installed, so ldd must list none of them (the cuda backend is a plugin opened at run time).
ldd "$1" || exit 1
if ldd "$1" | grep -Eq 'lib(cuda|cudart|cublas|cublasLt|nccl|cudnn|nvToolsExt|nvrtc)[.-]'; then
    echo "no_cuda_in_ldd: $1 links a CUDA library (above); it must come through the cuda plugin" >&2
    exit 1
fi
echo "no_cuda_in_ldd: $1 links no CUDA library"
