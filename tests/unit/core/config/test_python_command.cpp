// SPDX-License-Identifier: Apache-2.0
// What `tailcause instrument -- python3 ...` execs: the interpreter's options in front of
// `-m tailcause.instrument`, the program behind it, and the options it cannot honour refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/python_command.h"

namespace tailcause::core {
namespace {

using Args = std::vector<std::string>;

Args exec_of(const Args& command) {
  PythonCommand c = python_instrument_command(command);
  EXPECT_EQ(c.error, "") << "for " << command.size() << " arguments";
  return c.argv;
}

std::string error_of(const Args& command) {
  PythonCommand c = python_instrument_command(command);
  EXPECT_TRUE(c.argv.empty());
  return c.error;
}

TEST(PythonCommand, AScriptAndItsArgumentsFollowTheModule) {
  EXPECT_EQ(exec_of({"python3", "agent.py", "-x", "--port", "1"}),
            (Args{"python3", "-m", "tailcause.instrument", "agent.py", "-x", "--port", "1"}));
  EXPECT_EQ(exec_of({"/usr/bin/python3"}),
            (Args{"/usr/bin/python3", "-m", "tailcause.instrument"}));
}

TEST(PythonCommand, TheInterpretersOptionsStayInFront) {
  EXPECT_EQ(exec_of({"python3", "-u", "-W", "error", "-X", "dev", "-OO", "agent.py", "-W"}),
            (Args{"python3", "-u", "-W", "error", "-X", "dev", "-OO", "-m", "tailcause.instrument",
                  "agent.py", "-W"}));
  // Values written into the group: -Werror's E is the value's, not the -E option.
  EXPECT_EQ(exec_of({"python3", "-Werror", "-Xfrozen_modules=off", "-uB", "agent.py"}),
            (Args{"python3", "-Werror", "-Xfrozen_modules=off", "-uB", "-m", "tailcause.instrument",
                  "agent.py"}));
  EXPECT_EQ(exec_of({"python3", "--check-hash-based-pycs", "never", "agent.py"}),
            (Args{"python3", "--check-hash-based-pycs", "never", "-m", "tailcause.instrument",
                  "agent.py"}));
}

TEST(PythonCommand, AModuleProgramGoesToInstrumentWithItsDashM) {
  EXPECT_EQ(exec_of({"python3", "-u", "-m", "http.server", "8080"}),
            (Args{"python3", "-u", "-m", "tailcause.instrument", "-m", "http.server", "8080"}));
}

TEST(PythonCommand, DoubleDashEndsTheInterpretersOptions) {
  EXPECT_EQ(exec_of({"python3", "-u", "--", "-odd-name.py"}),
            (Args{"python3", "-u", "-m", "tailcause.instrument", "-odd-name.py"}));
}

TEST(PythonCommand, OptionsInstrumentCannotHonourAreRefusedWithTheReason) {
  EXPECT_NE(error_of({"python3", "-c", "print(1)"}).find("not a command string"),
            std::string::npos);
  EXPECT_NE(error_of({"python3", "-uc", "print(1)"}).find("not a command string"),
            std::string::npos);
  EXPECT_NE(error_of({"python3", "-"}).find("not standard input"), std::string::npos);
  EXPECT_NE(error_of({"python3", "-E", "agent.py"}).find("ignore PYTHONPATH"), std::string::npos);
  EXPECT_NE(error_of({"python3", "-sI", "agent.py"}).find("ignore PYTHONPATH"), std::string::npos);
  EXPECT_NE(error_of({"python3", "-um", "http.server"}).find("-m MODULE as an argument"),
            std::string::npos);
  EXPECT_EQ(error_of({"python3", "-W"}), "-W needs a value");
  EXPECT_EQ(error_of({"python3", "--check-hash-based-pycs"}),
            "--check-hash-based-pycs needs a value");
}

}  // namespace
}  // namespace tailcause::core
