# The cuda backend as a plugin (backends/cuda_loader.c): cpbench links no CUDA library,
# a missing library or plugin is named with where it was looked for (exit 2), and a plugin
# of another interface version is refused.  The anchored patterns also fail on a message
# that names the backend twice ("cuda backend: cuda backend:").  Runs in every build, with or without nvcc.
add_library(cpb_absent_test SHARED ${CMAKE_CURRENT_SOURCE_DIR}/plugin/absent_lib.c)
set_target_properties(cpb_absent_test PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/absent
  SOVERSION 1)
add_library(cpb_cuda_fake MODULE ${CMAKE_CURRENT_SOURCE_DIR}/plugin/fake_cuda_plugin.c)
target_link_libraries(cpb_cuda_fake PRIVATE cpb_absent_test)
# no RUNPATH: the library must be found by the loader's search, or not at all
set_target_properties(cpb_cuda_fake PROPERTIES SKIP_BUILD_RPATH ON
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake)
set(CPB_FAKE_PLUGIN $<TARGET_FILE:cpb_cuda_fake>)

cpb_cmd_test(cuda_plugin_ldd_no_cuda sh ${CMAKE_CURRENT_SOURCE_DIR}/plugin/no_cuda_in_ldd.sh ${CPBENCH})
cpb_cmd_test(cuda_plugin_missing_library ${CPB_EXPECT} 2 -
  "^cpbench run: cuda backend: cannot load the plugin .*libcpb_cuda_fake.so: libcpb_absent_test.so.1 \\(needed by .*\\) was not found. looked .*CPB_CUDA_LIB_PATH \\(unset\\).*the dynamic linker's own path"
  -- env -u CPB_CUDA_LIB_PATH CPB_CUDA_PLUGIN=${CPB_FAKE_PLUGIN}
  ${CPBENCH} run --backend cuda --method ulysses --model tiny --seq 64)
cpb_cmd_test(cuda_plugin_missing_library_verify ${CPB_EXPECT} 2 - "libcpb_absent_test.so.1 \\(needed by"
  -- env -u CPB_CUDA_LIB_PATH CPB_CUDA_PLUGIN=${CPB_FAKE_PLUGIN}
  ${CPBENCH} verify --backend cuda --method ulysses --model tiny --seq 64)
cpb_cmd_test(cuda_plugin_wrong_interface ${CPB_EXPECT} 2 -
  "plugin .*libcpb_cuda_fake.so was built for plugin interface 1000 and this cpbench has [0-9]+"
  -- env CPB_CUDA_LIB_PATH=${CMAKE_CURRENT_BINARY_DIR}/absent CPB_CUDA_PLUGIN=${CPB_FAKE_PLUGIN}
  ${CPBENCH} run --backend cuda --method ulysses --model tiny --seq 64)
cpb_cmd_test(cuda_plugin_list_reports ${CPB_EXPECT} 0 - "^  cuda .*libcpb_absent_test.so.1 \\(needed by"
  -- env -u CPB_CUDA_LIB_PATH CPB_CUDA_PLUGIN=${CPB_FAKE_PLUGIN} ${CPBENCH} list)
cpb_cmd_test(cuda_plugin_not_found ${CPB_EXPECT} 2 - "CPB_CUDA_PLUGIN=/nonexistent/libcpb_cuda.so: no such file"
  -- env CPB_CUDA_PLUGIN=/nonexistent/libcpb_cuda.so ${CPBENCH} run --backend cuda --method ulysses --model tiny --seq 64)
cpb_cmd_test(cuda_plugin_not_beside sh ${CMAKE_CURRENT_SOURCE_DIR}/plugin/plugin_not_found.sh ${CPBENCH}
  ${CMAKE_CURRENT_BINARY_DIR}/plugin_not_beside)
# the real plugin, where this build made one: it loads (every symbol it takes from cpbench
# is there) and names the cuBLAS and NCCL it found
if(TARGET cpb_cuda)
  cpb_cmd_test(cuda_plugin_loads ${CPB_EXPECT} 0 -
    "^  cuda +compiled in. plugin .*libcpb_cuda.so loaded. .*cuBLAS from [^ ]*libcublas.so.[0-9]+.*NCCL from [^ ]*libnccl.so"
    -- env -u CPB_CUDA_PLUGIN ${CPBENCH} list)
  # the attention implementations: cuDNN's as the build made it (compiled in, with the
  # library found here; or why not), and ours
  if(CPB_CUDNN_WHY STREQUAL "")
    set(CPB_ATTN_LINE "^attention: cudnn \\(compiled in. cuDNN [0-9.]+ from [^ ]*libcudnn.so.9, cudnn-frontend [0-9.]+\\), own$")
  else()
    set(CPB_ATTN_LINE "^attention: cudnn \\(not compiled in: .+\\), own$")
  endif()
  cpb_cmd_test(cuda_plugin_attention_impls ${CPB_EXPECT} 0 - "${CPB_ATTN_LINE}" -- env -u CPB_CUDA_PLUGIN ${CPBENCH} list)
  if(NOT EXISTS /dev/nvidiactl) # a machine without a GPU (CI): the backend refuses, exit 2
    cpb_cmd_test(cuda_plugin_no_gpu ${CPB_EXPECT} 2 - "^cpbench run: cuda backend: no GPU present"
      -- env -u CPB_CUDA_PLUGIN ${CPBENCH} run --backend cuda --method ulysses --model tiny --seq 64)
    cpb_cmd_test(cuda_plugin_device_props_no_gpu ${CPB_EXPECT} 2 - "^cpbench device-props: no CUDA device to describe"
      -- env -u CPB_CUDA_PLUGIN ${CPBENCH} device-props)
  endif()
endif()
