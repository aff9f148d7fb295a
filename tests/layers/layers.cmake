# layers.cmake — the build's layers hold (included by tests/CMakeLists.txt).
#
# A method is compiled with the methods' usage requirements (cpb_methods: methods/ and the
# runtime API in runtime/), on which the backend interface (runtime/backend/cpb_backend.h)
# must not be.  Two probe objects are built when the tests run: one that includes the
# runtime API (must build: the probe is set up right) and one that includes cpb_backend.h
# (must fail to find it).  Should a change put the backend header on the methods' path, the
# second builds and its test fails.
foreach(probe api backend)
  add_library(layer_probe_${probe} OBJECT EXCLUDE_FROM_ALL
              ${CMAKE_CURRENT_SOURCE_DIR}/layers/method_includes_${probe}.c)
  target_link_libraries(layer_probe_${probe} PRIVATE cpb_methods)
  add_test(NAME layers_method_includes_${probe}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target layer_probe_${probe})
  set_tests_properties(layers_method_includes_${probe} PROPERTIES TIMEOUT 120)
endforeach()
set_tests_properties(layers_method_includes_backend PROPERTIES
                     PASS_REGULAR_EXPRESSION "cpb_backend\\.h: No such file")
