# paper/external.py (issue 24 §3): three rows of paper/external.csv end to end, the report
# with every column; and malformed tables rejected with one clear line, exit 2, no report.
# Simulator runs only: a few seconds each.
cpb_cmd_test(harness_external_report bash ${CMAKE_SOURCE_DIR}/tests/external_test.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_external_report ${CMAKE_SOURCE_DIR})
cpb_cmd_test(harness_external_bad_inputs bash ${CMAKE_SOURCE_DIR}/tests/external_bad_inputs.sh ${CPBENCH}
             ${CMAKE_CURRENT_BINARY_DIR}/harness_external_bad_inputs ${CMAKE_SOURCE_DIR})
