# SPDX-License-Identifier: Apache-2.0
"""Prints what the interpreter was started with and the program's own arguments, for
test_zerocode_instrument.sh: that `tailcause instrument -- python3 OPTIONS prog ARGS` gives the
interpreter its options and the program its arguments."""
import sys

print(sys.warnoptions, sys.flags.dev_mode, sys.argv[1:])
