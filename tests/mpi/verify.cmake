# Verification of every method against the reference layer: one mpirun per world size,
# each running the lines of every tests/mpi/cases/*.txt written for that size (format:
# tests/mpi/cases/README).  The case files are globbed at configure time.
file(GLOB CPB_VERIFY_CASES ${CMAKE_CURRENT_SOURCE_DIR}/mpi/cases/*.txt)
list(SORT CPB_VERIFY_CASES)
if(CPB_VERIFY_CASES)
  foreach(np 1 2 3 4 5 6 8)
    cpb_mpi_test(verify_np${np} ${np} ${CPBENCH} verify --cases ${CPB_VERIFY_CASES})
  endforeach()
endif()
# --dump: the file holds the documented datasets and attributes, and the results in it agree
# with the reference recomputed from the inputs in it; an unwritable dump fails cleanly.
add_executable(verify_dump_check ${CMAKE_CURRENT_SOURCE_DIR}/mpi/verify_dump_check.c)
target_link_libraries(verify_dump_check PRIVATE cpb_cli)
cpb_cmd_test(verify_dump sh ${CMAKE_CURRENT_SOURCE_DIR}/mpi/verify_dump.sh ${MPIEXEC_EXECUTABLE} ${CPBENCH}
  $<TARGET_FILE:verify_dump_check> ${CMAKE_CURRENT_BINARY_DIR}/verify_dump)
