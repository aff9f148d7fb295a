# The scripts' machine interface to cpbench: `cpbench list --format json|flat`
# (harness/list_json.h), which every script reads instead of the text for people, and what
# the scripts run with it.
cpb_cmd_test(list_json_and_flat env PYTHON=/usr/bin/python3 bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/list_forms.sh ${CPBENCH})
# the cuda plugin that cannot load (tests/plugin/plugin.cmake's fake): the flat form says so
# in its fields, with the loader's reason (the sanitizer build and a CPU-only one do not
# compile the plugin in, and say so before the same reason)
if(CPB_FAKE_PLUGIN)
  cpb_cmd_test(list_flat_cuda_not_loaded ${CPB_EXPECT} 0 -
    "^backends\\.cuda\\.description[[:space:]](compiled in|not compiled into this build). cannot load the plugin .*libcpb_absent_test.so.1 \\(needed by"
    -- env -u CPB_CUDA_LIB_PATH CPB_CUDA_PLUGIN=${CPB_FAKE_PLUGIN} sh -c
    "\"$0\" list --format flat | grep -x 'backends.cuda.present.false' >/dev/null && \"$0\" list --format flat" ${CPBENCH})
endif()
# the CMake options the finder gives a rebuild on a GPU machine (gpu-check's fallback build)
cpb_cmd_test(cuda_libs_cmake_hints bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cuda_libs_cmake.sh)
# the GPU check's dry run from the build tree: it passes, its per-method steps are exactly the
# registry's methods, and a step list with a name the registry lacks fails it
cpb_cmd_test(gpu_check_dry_run env PYTHON=/usr/bin/python3 bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/gpu_check_dry_run.sh
  ${CPBENCH} ${CMAKE_CURRENT_BINARY_DIR}/gpu_check_dry_run)
