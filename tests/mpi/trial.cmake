# The measured step starts together on every rank (driver/trial.c): a rank 2 s late does
# not show in the others' step time (cpu backend, 2 ranks).
add_executable(trial_skew ${CMAKE_CURRENT_SOURCE_DIR}/mpi/trial_skew.c)
target_link_libraries(trial_skew PRIVATE cpb_driver)
cpb_mpi_test(trial_skew_np2 2 $<TARGET_FILE:trial_skew>)
