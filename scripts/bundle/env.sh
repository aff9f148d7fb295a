# env.sh — sourced by gpu-bundle/bin/cpbench and gpu-bundle/bin/mpirun: the environment the
# bundled binaries need, whatever the caller's (a bare root, SLURM, `env -i`).  B is the
# bundle's folder.
#  - the bundle's Open MPI first, even where the machine has another (LD_LIBRARY_PATH wins
#    over the binaries' RUNPATH), with OPAL_PREFIX pointing at it (help texts, launcher);
#  - the check runs as root: Open MPI refuses that unless told;
#  - one node, shared memory between ranks: ob1 over self/sm unless the caller chose
#    (UCX and libfabric are in the wheel but probe for network devices a GPU check has no
#    use for); no single-copy (CMA) in containers;
#  - CPB_CUDA_LIB_PATH: where bin/cuda-libs found cuBLAS, NCCL and cuDNN, computed once in
#    the caller's environment (whose PATH has its python3 and so its nvidia wheels) and
#    passed down to the ranks.
export OPAL_PREFIX="$B/mpi"
export PATH="$B/mpi/bin:${PATH:-/usr/bin:/bin}"
export LD_LIBRARY_PATH="$B/mpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}" OMPI_MCA_btl="${OMPI_MCA_btl:-self,sm,tcp}"
export OMPI_MCA_btl_sm_single_copy_mechanism="${OMPI_MCA_btl_sm_single_copy_mechanism:-none}"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
if [ -z "${CPB_CUDA_LIB_PATH+set}" ]; then
  CPB_CUDA_LIB_PATH=$("$B/bin/cuda-libs" --path 2>/dev/null) || true
  export CPB_CUDA_LIB_PATH
fi
