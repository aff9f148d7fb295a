# Sanitizer-pass only: the leak check at exit must survive a dlopen'd library's thread-local
# block at the address GCC 12's LeakSanitizer misreads (tests/sanitizer/dtls_block_probe.c).
if(CPB_SANITIZE)
  add_library(dtls_block_lib MODULE ${CMAKE_CURRENT_LIST_DIR}/dtls_block_lib.c)
  add_executable(dtls_block_probe ${CMAKE_CURRENT_LIST_DIR}/dtls_block_probe.c)
  target_link_libraries(dtls_block_probe PRIVATE ${CMAKE_DL_LIBS})
  cpb_cmd_test(sanitizer_leak_check_survives_dtls_block
    $<TARGET_FILE:dtls_block_probe> $<TARGET_FILE:dtls_block_lib>)
endif()
