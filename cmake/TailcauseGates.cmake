# SPDX-License-Identifier: Apache-2.0
# The house's gates as ctests with no root (label gate): the layering of src/ by floor, the
# format, clang-tidy on the daemon's code, shellcheck, one version. `make gates` and .ci/run run
# the ones that need no build first, so a style slip fails in seconds.
find_program(GATE_PYTHON3 python3 REQUIRED)
add_test(NAME layering COMMAND ${GATE_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/layering/test_layering.py)
add_test(NAME format COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/gates/format.sh)
add_test(NAME shellcheck COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/gates/shell.sh)
add_test(NAME version COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/gates/version.sh)
# On this tree's compile_commands.json, once the build (and its generated headers) exist.
add_test(NAME tidy COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/gates/tidy.sh ${CMAKE_BINARY_DIR})
set_tests_properties(layering format shellcheck version tidy PROPERTIES LABELS gate)
set_tests_properties(tidy PROPERTIES TIMEOUT 1500)
