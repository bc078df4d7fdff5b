// SPDX-License-Identifier: Apache-2.0
#include "core/config/python_command.h"

#include <fmt/format.h>

namespace tailcause::core {
namespace {

// Options whose value may be the next argument (CPython's usage: -W arg, -X opt, and one long).
bool takes_value(char option) { return option == 'W' || option == 'X'; }

// One short-option group (`-u`, `-OO`, `-Werror`, `-W`): "" when it may go in front of
// `-m tailcause.instrument`, else why not. `needs_next`: its value is the next argument.
std::string check_group(const std::string& group, bool& needs_next) {
  needs_next = false;
  for (size_t i = 1; i < group.size(); ++i) {
    const char c = group[i];
    if (takes_value(c)) {
      needs_next = i + 1 == group.size();  // else the rest of the group is the value
      return "";
    }
    if (c == 'c') return "-c: instrument runs a script or -m MODULE, not a command string";
    if (c == 'm') return fmt::format("{}: write -m MODULE as an argument of its own", group);
    if (c == 'E' || c == 'I') {
      return fmt::format(
          "{}: it makes Python ignore PYTHONPATH, which carries the tailcause package", group);
    }
  }
  return "";
}

}  // namespace

PythonCommand python_instrument_command(const std::vector<std::string>& command) {
  PythonCommand out;
  std::vector<std::string> front{command.front()};
  size_t i = 1;
  for (; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-m" || a.size() < 2 || a[0] != '-') break;  // the program starts here (or "-")
    if (a == "--") {
      ++i;
      break;
    }
    bool needs_next = a == "--check-hash-based-pycs";
    if (!a.starts_with("--")) {
      if (std::string why = check_group(a, needs_next); !why.empty()) {
        out.error = why;
        return out;
      }
    }
    front.push_back(a);
    if (needs_next) {
      if (i + 1 == command.size()) {
        out.error = fmt::format("{} needs a value", a);
        return out;
      }
      front.push_back(command[++i]);
    }
  }
  if (i < command.size() && command[i] == "-") {
    out.error = "-: instrument runs a script or -m MODULE, not standard input";
    return out;
  }
  out.argv = std::move(front);
  out.argv.insert(out.argv.end(), {"-m", "tailcause.instrument"});
  out.argv.insert(out.argv.end(), command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
  return out;
}

}  // namespace tailcause::core
