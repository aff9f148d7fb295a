# fuzz.cmake — the fuzz smoke run of `make test` (included by tests/CMakeLists.txt).
#
# The libFuzzer targets of tests/fuzz (the argument parser; cpbench's checks of a results
# file's schema, attributes and rows; the --model-config reader) are built with clang in a build of their own,
# <build>/fuzz (-DCPB_FUZZ=ON: every source instrumented for libFuzzer, ASan and UBSan),
# made as an external project of this build.  ctest runs each for a bounded time from the
# committed corpus (tests/fuzz/corpus) and the regression inputs of crashes found and fixed
# (tests/fuzz/regress), and each regression input once on its own.  The sanitizer pass
# (CPB_SANITIZE) leaves them out: they are sanitizer builds already.
if(CPB_SANITIZE)
  return()
endif()
find_program(CPB_CLANG NAMES clang clang-16 clang-15 clang-14)
find_program(CPB_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
set(CPB_FUZZ_OK OFF)
if(CPB_CLANG AND CPB_CLANGXX)
  # libFuzzer's runtime (Debian: libclang-rt-dev) links
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
       "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${CPB_CLANG} -fsanitize=fuzzer,address,undefined ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c
                          -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(CPB_FUZZ_OK ON)
  endif()
endif()
if(NOT CPB_FUZZ_OK)
  message(WARNING "clang with libFuzzer not found: the fuzz smoke tests are left out (scripts/setup.sh installs "
                  "clang and libclang-rt-dev)")
  return()
endif()

include(ExternalProject)
set(CPB_FUZZ_BIN ${CMAKE_BINARY_DIR}/fuzz)
# under make, the sub-build shares make's job slots (-j of `make build`)
if(CMAKE_GENERATOR MATCHES "Make")
  set(CPB_FUZZ_BUILD $(MAKE) cpb_fuzz_targets)
else()
  set(CPB_FUZZ_BUILD ${CMAKE_COMMAND} --build <BINARY_DIR> --target cpb_fuzz_targets)
endif()
ExternalProject_Add(cpb_fuzz
  SOURCE_DIR ${CMAKE_SOURCE_DIR}
  BINARY_DIR ${CPB_FUZZ_BIN}
  CMAKE_ARGS -DCMAKE_C_COMPILER=${CPB_CLANG} -DCMAKE_CXX_COMPILER=${CPB_CLANGXX} -DCPB_FUZZ=ON
             -DCMAKE_BUILD_TYPE=Debug -DCPB_BUNDLE_DEPS=${CPB_BUNDLE_DEPS}
  BUILD_COMMAND ${CPB_FUZZ_BUILD}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON)

set(CPB_FUZZ_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
foreach(t args results model_config)
  set(exe ${CPB_FUZZ_BIN}/tests/fuzz/fuzz_${t})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/fuzz-${t})
  # new inputs go to the build's corpus; the committed ones are read only
  add_test(NAME fuzz_${t}_smoke
    COMMAND sh -c "mkdir -p '${work}/corpus' && cd '${work}' && exec '${exe}' -max_total_time=10 -timeout=10 \
-rss_limit_mb=2048 -print_final_stats=1 '${work}/corpus' '${CPB_FUZZ_SRC}/corpus/${t}' '${CPB_FUZZ_SRC}/regress/${t}'")
  # each input that once crashed, run once
  add_test(NAME fuzz_${t}_regressions
    COMMAND sh -c "cd '${CMAKE_CURRENT_BINARY_DIR}' && exec '${exe}' -runs=0 '${CPB_FUZZ_SRC}/regress/${t}'")
  set_tests_properties(fuzz_${t}_smoke fuzz_${t}_regressions PROPERTIES ENVIRONMENT "${CPB_TEST_ENV}" TIMEOUT 300)
endforeach()
