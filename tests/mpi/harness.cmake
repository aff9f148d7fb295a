# Harness tests: sweeps on the simulator and on the cpu backend, the results file
# as h5py reads it, resuming, --isolate, and the figure script.  Unit tests of the sweep
# logic and the HDF5 writer are in tests/unit/test_sweep.c and tests/unit/test_results_h5.c.
cpb_cmd_test(harness_sweep_sim bash ${CMAKE_CURRENT_SOURCE_DIR}/sweep_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_sweep_sim)
cpb_cmd_test(harness_figures bash ${CMAKE_CURRENT_SOURCE_DIR}/paper_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_figures ${CMAKE_SOURCE_DIR})
# every figure kind of make_figures.py from a small simulator file, PNG and PDF, no warnings;
# the model-scope buckets add up to the peak; one plan figure per plan invocation (issue 25 §3)
cpb_cmd_test(harness_figure_kinds bash ${CMAKE_SOURCE_DIR}/tests/figures_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_figure_kinds ${CMAKE_SOURCE_DIR})
# cpbench plan end to end: its table, --out, the recommendation run again, the frontier figure
cpb_cmd_test(harness_plan bash ${CMAKE_CURRENT_SOURCE_DIR}/plan_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_plan ${CMAKE_SOURCE_DIR})
# two whole-model searches: about 10 s here, a minute or two under the sanitizers.  `cpbench
# plan` and `run` on the simulator start no MPI (harness/main.c: needs_mpi), so the test takes
# the fast unwinding (tests/CMakeLists.txt): with the full one it took 330 s here and timed
# out at 600 s on CI
set_tests_properties(harness_plan PROPERTIES ENVIRONMENT "${CPB_NO_MPI_TEST_ENV}" TIMEOUT 600)
# `make reproduce` end to end on its reduced grid (CPB_REPRODUCE_QUICK=1, simulator only),
# writing under the build tree: every step of the script must pass (exit 0), so an option
# a step passes that cpbench refuses fails here.  About 2 minutes; left out of the
# sanitizer pass, whose sim code the other tests already cover
if(NOT CPB_SANITIZE)
  add_test(NAME harness_reproduce_quick
           COMMAND ${CMAKE_COMMAND} -E env CPB_REPRODUCE_BACKEND=sim CPB_REPRODUCE_QUICK=1
                   CPB_REPRODUCE_OUT=${CMAKE_CURRENT_BINARY_DIR}/harness_reproduce_quick
                   bash ${CMAKE_SOURCE_DIR}/scripts/reproduce.sh $<TARGET_FILE_DIR:cpbench>)
  set_tests_properties(harness_reproduce_quick PROPERTIES TIMEOUT 900 FIXTURES_REQUIRED harness_reproduce_clean)
  # from an empty folder: reproduce resumes from its results files, and a file an older
  # cpbench wrote (another schema version) is refused, as it must be for a user's, which
  # would fail this test in a build tree kept across a schema change
  add_test(NAME harness_reproduce_quick_clean
           COMMAND ${CMAKE_COMMAND} -E rm -rf ${CMAKE_CURRENT_BINARY_DIR}/harness_reproduce_quick)
  set_tests_properties(harness_reproduce_quick_clean PROPERTIES FIXTURES_SETUP harness_reproduce_clean)
endif()

# every method on 2 cpu ranks, two lengths: measured rows from MPI ranks, written by rank 0;
# run twice, the second time every point comes from the file (resume under MPI)
set(CPB_CPU_SWEEP_H5 ${CMAKE_CURRENT_BINARY_DIR}/harness_sweep_cpu.h5)
add_test(NAME harness_sweep_cpu_clean COMMAND ${CMAKE_COMMAND} -E rm -f ${CPB_CPU_SWEEP_H5})
set_tests_properties(harness_sweep_cpu_clean PROPERTIES FIXTURES_SETUP harness_cpu_clean)
foreach(pass 1 2)
  cpb_mpi_test(harness_sweep_cpu_${pass} 2 ${CPBENCH} sweep --backend cpu --model tiny --method all
               --seq-list 64,128 --warmup 0 --iters 1 --out ${CPB_CPU_SWEEP_H5})
endforeach()
set_tests_properties(harness_sweep_cpu_1 PROPERTIES FIXTURES_REQUIRED harness_cpu_clean
                     FIXTURES_SETUP harness_cpu_pass1)
set_tests_properties(harness_sweep_cpu_2 PROPERTIES FIXTURES_REQUIRED harness_cpu_pass1
                     FIXTURES_SETUP harness_cpu_rows PASS_REGULAR_EXPRESSION "\\(0 run, [0-9]+ from --out\\)")
add_test(NAME harness_sweep_cpu_rows COMMAND /usr/bin/python3 -c
  "import h5py,sys; r=h5py.File(sys.argv[1])['runs'][:]; k=[(m,s) for m,s in zip(r['method'],r['seq_len'])]; assert len(r)>=2 and len(k)==len(set(k)), k; assert set(r['backend'])=={b'cpu'} and (r['world_size']==2).all() and (r['step_s'][r['status']==b'ok']>0).all(), r[['method','status','reason']]; print(len(r),'cpu rows, none twice')"
  ${CPB_CPU_SWEEP_H5})
set_tests_properties(harness_sweep_cpu_rows PROPERTIES FIXTURES_REQUIRED harness_cpu_rows)
# the fingerprint columns of those rows: every method has one, and at each length they
# agree within the bf16 bar (read with h5py, and by `cpbench fingerprints`)
add_test(NAME harness_sweep_cpu_fingerprints COMMAND /usr/bin/python3 -c
  "import h5py,sys; r=h5py.File(sys.argv[1])['runs'][:]; r=r[r['status']==b'ok']; assert len(set(r['method']))>=8, set(r['method'])\nfor S in set(r['seq_len']):\n x=r[r['seq_len']==S]\n for c in ('y_norm','dx_norm','dw_norm'):\n  v=x[c]; assert (v>0).all(), (S,c,v); assert (abs(v-v.mean())<=3e-2*v.mean()).all(), (S,c,list(zip(x['method'],v)))\nprint(len(r),'rows: the methods agree at every length')"
  ${CPB_CPU_SWEEP_H5})
cpb_cmd_test(harness_sweep_cpu_fingerprints_cli ${CPB_EXPECT} 0 - "[0-9]+ points? with several methods, 0 where" --
             ${CPBENCH} fingerprints --results ${CPB_CPU_SWEEP_H5})
set_tests_properties(harness_sweep_cpu_fingerprints harness_sweep_cpu_fingerprints_cli PROPERTIES
                     FIXTURES_REQUIRED harness_cpu_rows)
# what a person reads (issue 25 §2): no time for OOM rows, seconds, the scope in headers,
# per-command --help
cpb_cmd_test(harness_output bash ${CMAKE_CURRENT_SOURCE_DIR}/output_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_output)
set_tests_properties(harness_output PROPERTIES ENVIRONMENT "${CPB_NO_MPI_TEST_ENV}")
# make install into a temporary PREFIX, cpbench list from PATH
cpb_cmd_test(harness_install bash ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${CMAKE_BINARY_DIR}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_install ${CMAKE_SOURCE_DIR})
# paper/export_csv.py: a results file as a CSV for pandas
cpb_cmd_test(harness_export_csv bash ${CMAKE_CURRENT_SOURCE_DIR}/export_csv_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_export_csv ${CMAKE_SOURCE_DIR})
set_tests_properties(harness_export_csv PROPERTIES ENVIRONMENT "${CPB_NO_MPI_TEST_ENV}")
# every command block of README.md: run (```sh) or skipped with a reason (```sh skip:)
cpb_cmd_test(harness_readme_blocks /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/readme_blocks.py
             ${CMAKE_SOURCE_DIR}/README.md ${CPBENCH} ${CMAKE_CURRENT_BINARY_DIR}/harness_readme_blocks ${CMAKE_SOURCE_DIR})
