# cuDNN failures are errors, never aborts: the real cuDNN attention (attn_cudnn.cpp through
# cudnn-frontend's dynamic loading), compiled into the stand-in plugin
# libcpb_cuda_standin_cudnn.so (backends/cuda/standin/CMakeLists.txt), run against a fake
# cuDNN of ours (fake_cudnn.c) that fails where each test asks.  Each test checks the exit
# code (1 where the trial fails, with status error), the message (cuDNN, the frontend call that
# failed, the frontend's own words) and that no rank aborted (expect_no_abort.sh).  Included
# by tests/mpi/standin.cmake (cpb_standin_test); docs/cuda.md, "cuDNN failures on the
# stand-in".
if(NOT TARGET cpb_cuda_standin_cudnn)
  return()
endif()
set(CPB_FAKE_DNN_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fake_cudnn)
set(CPB_FAKE_DNN_DIR ${CMAKE_BINARY_DIR}/fake_cudnn)        # the fake cuDNN, its libraries, a CUDA runtime
set(CPB_FAKE_DNN_NOSYM ${CMAKE_BINARY_DIR}/fake_cudnn_nosym) # a libcudnn.so.9 without cudnnBackendCreateDescriptor
set(CPB_FAKE_DNN_NODESTROY ${CMAKE_BINARY_DIR}/fake_cudnn_nodestroy) # ... without cudnnBackendDestroyDescriptor

# cpb_fake_dnn_lib(TARGET FILE DIR SOURCE [DEFINITIONS...]): a shared library whose file name
# and soname are FILE (libcudnn.so.9, ...): what the loader and the frontend look for
function(cpb_fake_dnn_lib target file dir src)
  add_library(${target} SHARED ${CPB_FAKE_DNN_SRC}/${src})
  target_include_directories(${target} PRIVATE ${CPB_SD_CUDNN_INCLUDE} ${CPB_SD_CUDA_INCLUDE})
  target_compile_definitions(${target} PRIVATE ${ARGN})
  target_compile_options(${target} PRIVATE -fvisibility=hidden)
  string(REGEX REPLACE "\\.so\\..*$" "" stem ${file})
  string(REGEX REPLACE "^.*\\.so" ".so" suffix ${file})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${stem} SUFFIX ${suffix} NO_SONAME ON
    LIBRARY_OUTPUT_DIRECTORY ${dir})
  target_link_options(${target} PRIVATE "LINKER:-soname,${file}")
  add_dependencies(cpb_cuda_standin_cudnn ${target})
endfunction()
cpb_fake_dnn_lib(fake_cudnn libcudnn.so.9 ${CPB_FAKE_DNN_DIR} fake_cudnn.c)
cpb_fake_dnn_lib(fake_cudnn_nosym libcudnn.so.9 ${CPB_FAKE_DNN_NOSYM} fake_cudnn.c FAKE_CUDNN_NO_CREATE_DESCRIPTOR)
cpb_fake_dnn_lib(fake_cudnn_nodestroy libcudnn.so.9 ${CPB_FAKE_DNN_NODESTROY} fake_cudnn.c FAKE_CUDNN_NO_DESTROY_DESCRIPTOR)
cpb_fake_dnn_lib(fake_cudnn_graph libcudnn_graph.so.9 ${CPB_FAKE_DNN_DIR} fake_cudnn_sublib.c)
cpb_fake_dnn_lib(fake_cudnn_engines libcudnn_engines_precompiled.so.9 ${CPB_FAKE_DNN_DIR} fake_cudnn_sublib.c)
cpb_fake_dnn_lib(fake_cudnn_rtc libcudnn_engines_runtime_compiled.so.9 ${CPB_FAKE_DNN_DIR} fake_cudnn_sublib.c)
# the one whose pre-load fails (an undefined symbol), for the reports
cpb_fake_dnn_lib(fake_cudnn_heuristic libcudnn_heuristic.so.9 ${CPB_FAKE_DNN_DIR} fake_cudnn_sublib.c FAKE_SUBLIB_BROKEN)
cpb_fake_dnn_lib(fake_cudart libcudart.so.13 ${CPB_FAKE_DNN_DIR} fake_cudart.c)

set(CPB_FAKE_DNN_EXPECT sh ${CPB_FAKE_DNN_SRC}/expect_no_abort.sh)
# the stand-in with cuDNN attention, and the fake cuDNN found before any other (the loader
# searches CPB_CUDA_LIB_PATH first); the watchdog shortened so that a rank left waiting in a
# collective by its peer's failure would show as a failure of the test, not a 600 s wait
set(CPB_FAKE_DNN_ENV "CPB_CUDA_PLUGIN=$<TARGET_FILE:cpb_cuda_standin_cudnn>" "CPB_CUDA_LIB_PATH=${CPB_FAKE_DNN_DIR}"
    CPB_CUDA_WATCHDOG_S=60)
set(CPB_FAKE_DNN_ARGS --backend cuda --attn cudnn --method ulysses --model tiny --seq 64 --dtype bf16)
set(CPB_FAKE_DNN_RUN ${CPBENCH} run ${CPB_FAKE_DNN_ARGS} --warmup 1 --iters 1)
# the message of the lowest failing rank: the op, cuDNN, the call; on `run`'s status line
set(CPB_FAKE_DNN_FWD "attn_fwd: cuDNN attention forward \\(q 64 x [48] heads, kv 64 x [12] heads, d 16, causal\\)")
set(CPB_FAKE_DNN_STATUS "^status: error .*${CPB_FAKE_DNN_FWD}")
set(CPB_FAKE_DNN_PRELOAD "cuDNN's libraries cpbench could not pre-load: [^ ]*fake_cudnn/libcudnn_heuristic.so.9: not loaded \\(undefined symbol: cpb_fake_cudnn_symbol_nobody_defines")

# `cpbench list`: cuDNN attention compiled in, the fake library named, and the sub-library
# that did not pre-load reported on the cuda line (with the dynamic linker's reason) and on
# the attention line
cpb_standin_test(standin_cudnn_list 0 ENV ${CPB_FAKE_DNN_ENV} COMMAND ${CPB_FAKE_DNN_EXPECT} 0
  "^  cuda .*cuDNN from [^ ]*fake_cudnn/libcudnn.so.9"
  "^  cuda .*not pre-loaded for cuDNN attention: [^ ]*fake_cudnn/libcudnn_heuristic.so.9: not loaded \\(undefined symbol: cpb_fake_cudnn_symbol_nobody_defines\\)"
  "^attention: cudnn \\(compiled in. cuDNN [0-9.]+ from [^ ]*fake_cudnn/libcudnn.so.9, cudnn-frontend [0-9.]+. not pre-loaded: libcudnn_heuristic.so.9 "
  -- ${CPBENCH} list)
# an error status from cuDNN (cudnnBackendFinalize of the first tensor): the frontend
# returns it as an error_t from build_operation_graph; the library that did not pre-load is
# named in the error too
cpb_standin_test(standin_cudnn_status_error 0 ENV ${CPB_FAKE_DNN_ENV} CPB_FAKE_CUDNN_FAIL=cudnnBackendFinalize
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1
  "${CPB_FAKE_DNN_STATUS}: build_operation_graph: .*fake cuDNN \\(tests/fake_cudnn\\): cudnnBackendFinalize fails.*CUDNN_STATUS_NOT_SUPPORTED"
  "${CPB_FAKE_DNN_PRELOAD}"
  -- ${CPB_FAKE_DNN_RUN})
# a symbol missing from libcudnn: the frontend's dynamic loading throws std::runtime_error
# from build_operation_graph, which must not cross the C interface; two ranks, both fail at
# their first cuDNN call, agree on the error and end (no rank left in a collective)
cpb_standin_test(standin_cudnn_missing_symbol 0
  ENV ${CPB_FAKE_DNN_ENV} "CPB_CUDA_LIB_PATH=${CPB_FAKE_DNN_NOSYM}:${CPB_FAKE_DNN_DIR}"
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1
  "${CPB_FAKE_DNN_STATUS}: build_operation_graph threw: Unable to find symbol cudnnBackendCreateDescriptor"
  -- ${CPB_SD_MPIRUN} 2 ${CPB_SD_MPIFLAGS} ${CPB_FAKE_DNN_RUN})
# no CUDA runtime for the frontend (it opens libcudart by itself): it throws from validate;
# `verify` reports the method's failure
cpb_standin_test(standin_cudnn_no_cudart 0
  ENV ${CPB_FAKE_DNN_ENV} CUDNN_FRONTEND_CUDART_LIB_NAME=${CPB_FAKE_DNN_DIR}/no-such-libcudart.so.13
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1
  "^ulysses: ERROR .*${CPB_FAKE_DNN_FWD}: validate threw: Unable to load libcudart library specified by CUDNN_FRONTEND_CUDART_LIB_NAME"
  -- ${CPBENCH} verify ${CPB_FAKE_DNN_ARGS})
# cuDNN's handle cannot be made
cpb_standin_test(standin_cudnn_no_handle 0 ENV ${CPB_FAKE_DNN_ENV} CPB_FAKE_CUDNN_FAIL=cudnnCreate
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1 "${CPB_FAKE_DNN_STATUS}: cudnnCreate: CUDNN_STATUS_NOT_SUPPORTED .*no usable GPU"
  -- ${CPB_FAKE_DNN_RUN})
# a libcudnn.so.9 without cudnnBackendDestroyDescriptor: the frontend calls it from a
# destructor, where its exception would terminate the rank whatever catches around it, so the
# library is refused when opened (cuDNN attention not usable here) and `--attn cudnn` fails
# the trial naming the symbol.  (The failing cudnnBackendFinalize would destroy the graph's
# descriptors if the refusal were missing.)
cpb_standin_test(standin_cudnn_no_destroy 0
  ENV ${CPB_FAKE_DNN_ENV} "CPB_CUDA_LIB_PATH=${CPB_FAKE_DNN_NODESTROY}:${CPB_FAKE_DNN_DIR}"
  CPB_FAKE_CUDNN_FAIL=cudnnBackendFinalize
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1
  "^status: error .*attn_fwd: --attn cudnn, but cuDNN attention is not available here \\(compiled in. not usable here: libcudnn.so.9 \\([^ ]*fake_cudnn_nodestroy/libcudnn.so.9\\) lacks cudnnBackendDestroyDescriptor"
  -- ${CPB_FAKE_DNN_RUN})
# the same library with --attn auto (the default): a cuDNN not usable here serves no call,
# our kernels run them all and the trial succeeds
cpb_standin_test(standin_cudnn_unusable_auto 0
  ENV ${CPB_FAKE_DNN_ENV} "CPB_CUDA_LIB_PATH=${CPB_FAKE_DNN_NODESTROY}:${CPB_FAKE_DNN_DIR}"
  COMMAND ${CPB_FAKE_DNN_EXPECT} 0 "^status: ok"
  -- ${CPBENCH} run --backend cuda --attn auto --method ulysses --model tiny --seq 64 --dtype bf16 --warmup 1 --iters 1)
# bottom-right causal calls (cpb_attn_route.h: a chunk of queries against its whole prefix)
# reach cudnn-frontend with that mask: its validate (the bottom-right rules: s_q <= s_kv,
# lengths that are multiples of 64 before cuDNN 9.6) and build_operation_graph accept the
# forward and backward graphs of the GPU self-test's cases, and the fake cuDNN stops them
# only where it has no engine to offer; the errors name the mask
set(CPB_FAKE_DNN_BR "cuDNN attention %s \\(q 128 x 8 heads, kv 384 x 2 heads, d 128, causal bottom-right\\): create_execution_plans: No valid engine configs")
string(REPLACE "%s" "forward" CPB_FAKE_DNN_BR_FWD "${CPB_FAKE_DNN_BR}")
string(REPLACE "%s" "backward" CPB_FAKE_DNN_BR_BWD "${CPB_FAKE_DNN_BR}")
cpb_standin_test(standin_cudnn_bottom_right 0 ENV ${CPB_FAKE_DNN_ENV} CPB_SELFTEST_ONLY=attn_cudnn
  COMMAND ${CPB_FAKE_DNN_EXPECT} 1 "attn_fwd: ${CPB_FAKE_DNN_BR_FWD}" "attn_bwd: ${CPB_FAKE_DNN_BR_BWD}"
  "cuDNN attention forward \\(q 192 x 4 heads, kv 256 x 4 heads, d 64, causal bottom-right\\): create_execution_plans"
  "cuDNN attention forward \\(q 256 x 8 heads, kv 256 x 2 heads, d 128, causal\\): create_execution_plans"
  -- ${CPBENCH} selftest --backend cuda)
