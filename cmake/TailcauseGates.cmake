# SPDX-License-Identifier: Apache-2.0
# The house's gates, as ctests with no root (label gate): the layering of src/ by floor. .ci/run
# also runs the quick ones first, so a slip fails in seconds rather than after the build.
find_program(GATE_PYTHON3 python3 REQUIRED)
add_test(NAME layering COMMAND ${GATE_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/layering/test_layering.py)
set_tests_properties(layering PROPERTIES LABELS gate)
