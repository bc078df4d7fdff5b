// SPDX-License-Identifier: Apache-2.0
// The command `tailcause instrument` execs for `python3 [OPTIONS] agent.py ARGS...`: the
// interpreter's own options stay in front of `-m tailcause.instrument`, the program and its
// arguments follow it (`python3 -X dev -m tailcause.instrument agent.py ARGS...`). Options that
// cannot work with it are refused with the reason: -c and - (instrument runs a script or a
// module), -E and -I (they ignore PYTHONPATH, which carries the package).
#pragma once

#include <string>
#include <vector>

namespace tailcause::core {

struct PythonCommand {
  std::vector<std::string> argv;  // what to exec; empty when refused
  std::string error;              // why it was refused
};

// `command`: the interpreter, its options, then a script (or -m MODULE) and the program's
// arguments, as given after `tailcause instrument --`. Not empty.
PythonCommand python_instrument_command(const std::vector<std::string>& command);

}  // namespace tailcause::core
