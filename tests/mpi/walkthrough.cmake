# docs/adding-a-method.md: every command of the walk-through, run in order in a copy of the
# tree (it adds a method, its verify cases and a memory test, builds and runs them).  The
# copy's build is a cache hit for every unchanged file when ccache is on PATH
# (tests/adding_a_method_test.py); without it the build is a full one, hence the timeout.
# The copy builds without sanitizers whatever this tree's flags, so a sanitizer build (CI's
# second pass) would only repeat the first pass's run: it is registered in plain builds only.
if(CPB_SANITIZE)
  return()
endif()
cpb_cmd_test(harness_adding_a_method /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/adding_a_method_test.py
             ${CMAKE_SOURCE_DIR}/docs/adding-a-method.md ${CMAKE_SOURCE_DIR}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_adding_a_method)
set_tests_properties(harness_adding_a_method PROPERTIES TIMEOUT 900 LABELS walkthrough)
