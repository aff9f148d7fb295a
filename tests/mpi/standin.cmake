# The cuda backend's real host code and kernels on the CPU stand-in of the CUDA runtime,
# cuBLAS, NCCL and NVTX (backends/cuda/standin; docs/cuda.md, "The CPU stand-in").  Every
# test fails when the stand-in reports a broken rule, even if the program carried on.
if(NOT TARGET cpb_cuda_standin)
  return()
endif()
set(CPB_SD_ENV ${CPB_TEST_ENV} "CPB_CUDA_PLUGIN=$<TARGET_FILE:cpb_cuda_standin>")
set(CPB_SD_MPIRUN ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG})
set(CPB_SD_MPIFLAGS --oversubscribe --allow-run-as-root --bind-to none)

# cpb_standin_test(NAME NP [ENV VAR=VALUE...] COMMAND ARGS...): NP 0 runs without mpirun.
# The output comes through failures_first.sh: the passed checks' lines are left out, so a
# failure's reason is not buried under hundreds of them in CI's view of the output.
set(CPB_SD_FILTER sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/failures_first.sh)
function(cpb_standin_test name np)
  cmake_parse_arguments(SD "" "" "ENV;COMMAND" ${ARGN})
  if(np GREATER 0)
    add_test(NAME ${name} COMMAND ${CPB_SD_FILTER} ${CPB_SD_MPIRUN} ${np} ${CPB_SD_MPIFLAGS} ${SD_COMMAND})
  else()
    add_test(NAME ${name} COMMAND ${CPB_SD_FILTER} ${SD_COMMAND})
  endif()
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${CPB_SD_ENV};${SD_ENV}" TIMEOUT 300 LABELS standin
                       FAIL_REGULAR_EXPRESSION "cuda stand-in: rule broken")
endfunction()

# the whole self-test: one rank (groups of one are local copies), and four (NCCL).  Its
# copy longer than memPitch is 2.25 GiB on an H100 (three buffers per rank); here the device
# allows 16 MiB pitches, wider than any other copy of the self-test, so that copy is 18 MiB
# and only its size differs from a GPU's run (the tests also see that it ran).
set(CPB_SD_SELFTEST_PITCH CPB_STANDIN_MEMPITCH=16777216)
set(CPB_SD_LARGE_COPY_RAN "ok +copy 18 MiB bf16 device -> device, window 1 +elements 8386560\\.\\.8390655 exact")
cpb_standin_test(standin_selftest 0 ENV ${CPB_SD_SELFTEST_PITCH}
                 COMMAND ${CPB_EXPECT} 0 - "${CPB_SD_LARGE_COPY_RAN}" -- ${CPBENCH} selftest --backend cuda)
cpb_standin_test(standin_selftest_np4 0 ENV ${CPB_SD_SELFTEST_PITCH}
                 COMMAND ${CPB_EXPECT} 0 - "${CPB_SD_LARGE_COPY_RAN}" --
                 ${CPB_SD_MPIRUN} 4 ${CPB_SD_MPIFLAGS} ${CPBENCH} selftest --backend cuda)
# the same with a device that allows only 512-byte pitches: every same-dtype copy of the
# self-test goes through the paths a > 2 GiB copy takes on an H100 (1-D and split 2-D copies)
cpb_standin_test(standin_selftest_small_pitch 0 ENV CPB_STANDIN_MEMPITCH=512
                 COMMAND ${CPBENCH} selftest --backend cuda)
# every method against the fp64 reference: the generic kernels (head dim 16), and head dim
# 64, where bf16 runs the tensor-core kernels (fp32 the generic ones).  Under the sanitizers
# (several times slower) head dim 64 runs a shorter sequence, 40 tokens per rank: the same
# calls, partial kernel tiles only.
set(CPB_SD_D64_SEQ 256)
if(CPB_SANITIZE)
  set(CPB_SD_D64_SEQ 160)
endif()
foreach(dt fp32 bf16)
  cpb_standin_test(standin_verify_tiny_${dt} 4
                   COMMAND ${CPBENCH} verify --backend cuda --method all --model tiny --seq 192 --dtype ${dt})
  cpb_standin_test(standin_verify_d64_${dt} 4 COMMAND ${CPBENCH} verify --backend cuda --method all --model tiny
                   --head-dim 64 --seq ${CPB_SD_D64_SEQ} --dtype ${dt})
endforeach()
# --tp 2 around every method: the TP and CP groups' communicators and the runtime scope on the
# cuda backend's host code (tp 2 x cp 2)
cpb_standin_test(standin_verify_tp2 4
                 COMMAND ${CPBENCH} verify --backend cuda --method all --model tiny --seq 64 --dtype bf16 --tp 2)
# four ranks on one GPU over --comm mpi (the GPU check's single-GPU run)
cpb_standin_test(standin_verify_comm_mpi 4 COMMAND sh -c
  "CUDA_VISIBLE_DEVICES=0 exec '${CPBENCH}' verify --backend cuda --comm mpi --method all --model tiny --seq 192 --dtype bf16")
# a short sweep with --out: measured rows through the results file, read back with h5py
cpb_standin_test(standin_sweep 0 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/standin_sweep.sh ${MPIEXEC_EXECUTABLE}
                 ${CPBENCH} ${CMAKE_CURRENT_BINARY_DIR}/standin_sweep.h5)
# two trials in one process, the smaller after the larger: each row's reserved bytes are its
# own (the pool is trimmed between trials), equal to the same trial's alone
cpb_standin_test(standin_reserved_per_trial 0 COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/standin_reserved.sh
                 ${MPIEXEC_EXECUTABLE} ${CPBENCH} ${CMAKE_CURRENT_BINARY_DIR}/standin_reserved)

# Defects fixed in the backend, checked through the stand-in's call statistics
# (standin_stats.py; trial 1 is the warm-up step): after the warm-up, a step allocates and
# frees no pinned memory, creates no events, reads no driver memory counters, waits on no
# stream with cudaStreamSynchronize and makes no communicators; collectives run on a stream
# of the greatest priority; NCCL communicators exist only for the streams that carry
# collectives (offload and fpdt communicate on the compute stream only, though they make
# 2 and 3 streams: one communicator per rank; ring on its comm stream, and its set-up on
# the compute stream: two), and each timed step's two phases are read from events.
set(CPB_SD_STATS /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/standin_stats.py)
foreach(m offload fpdt ring)
  set(extra "calls('cudaStreamCreate*') > 0")
  if(m STREQUAL "ring")
    set(extra "value('stream priority', -5) >= 2")
    set(comms 4)
  else()
    set(extra "calls('cudaMallocHost') > 0")
    set(comms 2)
  endif()
  cpb_standin_test(standin_steps_${m} 0 COMMAND ${CPB_SD_STATS} ${CMAKE_CURRENT_BINARY_DIR}/standin_steps_${m}
    "trials() == 3" "calls('cudaMallocHost', 2) == 0" "calls('cudaFreeHost', 2) == 0"
    "calls('cudaEventCreate*', 2) == 0" "calls('cudaMemGetInfo', 2) == 0" "calls('cudaStreamSynchronize', 2) == 0"
    "calls('ncclCommInitRank', 2) == 0" "calls('ncclCommInitRank') == ${comms}"
    "calls('cudaEventElapsedTime', 2) == 8" "${extra}" --
    ${CPB_SD_MPIRUN} 2 ${CPB_SD_MPIFLAGS} ${CPBENCH} run --backend cuda --method ${m} --model tiny --seq 128
    --warmup 1 --iters 2)
endforeach()
# RoPE positions travel as kernel arguments: the backend allocates nothing with cudaMalloc
# (it had a per-stream table copied from pageable memory) and the self-test's RoPE with 100
# segments still passes
cpb_standin_test(standin_rope_no_table 0 ENV ${CPB_SD_SELFTEST_PITCH} COMMAND ${CPB_SD_STATS} ${CMAKE_CURRENT_BINARY_DIR}/standin_rope
  "calls('cudaMalloc') == 0" "calls('rope_kernel (${CMAKE_SOURCE_DIR}/backends/cuda/kern_rope_stats.cu)') > 0" --
  ${CPBENCH} selftest --backend cuda)

# One GPU visible per rank (SLURM --gpus-per-task=1): each rank's device 0 is another GPU,
# told apart by its PCI bus id; two ranks on one GPU with NCCL are refused
cpb_standin_test(standin_one_gpu_per_rank 2 COMMAND sh -c
  "CUDA_VISIBLE_DEVICES=\$OMPI_COMM_WORLD_LOCAL_RANK exec '${CPBENCH}' verify --backend cuda --method ulysses,ring --model tiny --seq 128")
cpb_standin_test(standin_shared_gpu_refused 0 COMMAND ${CPB_EXPECT} 1 - "2 ranks on one node share a GPU" --
  ${CPB_SD_MPIRUN} 2 ${CPB_SD_MPIFLAGS} sh -c
  "CUDA_VISIBLE_DEVICES=0 exec '${CPBENCH}' verify --backend cuda --method ulysses --model tiny --seq 128")
# a hung peer (its collectives never complete) ends the run with an error, not a hang
cpb_standin_test(standin_nccl_watchdog 0 ENV CPB_STANDIN_NCCL_STALL_RANK=1 CPB_CUDA_WATCHDOG_S=2
  COMMAND ${CPB_EXPECT} 1 - "no progress for [0-9]+ s.*NCCL communicator aborted" --
  ${CPB_SD_MPIRUN} 2 ${CPB_SD_MPIFLAGS} ${CPBENCH} verify --backend cuda --method ulysses --model tiny --seq 128)
# a failed ncclSend inside a group: the error is reported and the group still closed (the
# stand-in fails a stream synchronized, or a program ending, inside an open group)
cpb_standin_test(standin_nccl_error_in_group 0 ENV CPB_STANDIN_FAIL=ncclSend
  COMMAND ${CPB_EXPECT} 1 - "ncclSend failed.*injected by CPB_STANDIN_FAIL" --
  ${CPB_SD_MPIRUN} 2 ${CPB_SD_MPIFLAGS} ${CPBENCH} verify --backend cuda --method ulysses --model tiny --seq 128)
# collectives on two streams in a different order on each rank: communicators made at their
# first use per (group, stream) pair correctly (the members make the union of what they
# need, in name order), and one stream waiting on its peer does not stop the other
add_executable(standin_comm_order ${CMAKE_CURRENT_SOURCE_DIR}/mpi/standin_comm_order.c)
target_link_libraries(standin_comm_order PRIVATE cpb_driver)
set_target_properties(standin_comm_order PROPERTIES ENABLE_EXPORTS ON) # the plugin takes the runtime from it
cpb_standin_test(standin_comm_order_np2 2 COMMAND $<TARGET_FILE:standin_comm_order>)
cpb_standin_test(standin_comm_order_np3 3 COMMAND $<TARGET_FILE:standin_comm_order>)
# the device timer (events around work on two streams; an early read is an error), the
# pool trimmed at a trial's start, and the pinned cache sealed for the timed steps (a miss
# is an error naming the size), through the backend's hooks
add_executable(standin_trial_hooks ${CMAKE_CURRENT_SOURCE_DIR}/mpi/standin_trial_hooks.c)
target_link_libraries(standin_trial_hooks PRIVATE cpb_driver)
set_target_properties(standin_trial_hooks PROPERTIES ENABLE_EXPORTS ON) # the plugin takes the runtime from it
cpb_standin_test(standin_trial_hooks_np1 1 COMMAND $<TARGET_FILE:standin_trial_hooks>)

# cuDNN attention's failures on a fake cuDNN: errors, never aborts (tests/fake_cudnn)
include(${CMAKE_CURRENT_SOURCE_DIR}/fake_cudnn/fake_cudnn.cmake)
