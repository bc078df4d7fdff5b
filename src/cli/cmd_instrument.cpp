// SPDX-License-Identifier: Apache-2.0
// `tailcause instrument [OPTIONS] -- python3 agent.py ARGS...`: runs a Python agent, unchanged,
// with the SDK's auto-instrumentation (sdk/python/tailcause/instrument.py): the interpreter is
// exec'd as `python3 [ITS OPTIONS] -m tailcause.instrument ARGS...` (core/config/python_command.h)
// with the SDK's package on PYTHONPATH and the options in the environment. The daemon
// (`tailcause run`) attributes what it marks.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "cli/commands.h"
#include "core/config/python_command.h"

namespace fs = std::filesystem;

namespace tailcause::cli {
namespace {

// The directory holding the `tailcause` Python package: the flag, else next to this executable
// (the build tree's ../sdk/python, an install's ../lib/tailcause/python, where
// cmake/TailcauseInstall.cmake puts it).
std::optional<fs::path> find_sdk_python(const std::string& flag, std::vector<std::string>& looked) {
  std::vector<fs::path> candidates;
  if (!flag.empty()) {
    candidates.emplace_back(flag);
  } else {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      candidates.push_back(self.parent_path().parent_path() / "sdk" / "python");
      candidates.push_back(self.parent_path().parent_path() / "lib" / "tailcause" / "python");
    }
    candidates.emplace_back("/usr/lib/tailcause/python");
  }
  for (const auto& c : candidates) {
    looked.push_back(c.string());
    std::error_code ec;
    if (fs::is_regular_file(c / "tailcause" / "instrument.py", ec)) return c;
  }
  return std::nullopt;
}

// libtailcause_sdk.so beside this executable (the build tree: build/sdk/), when the user has not
// said where it is.
std::optional<fs::path> find_sdk_library() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path lib = self.parent_path() / "sdk" / "libtailcause_sdk.so";
  return fs::is_regular_file(lib, ec) ? std::optional<fs::path>(lib) : std::nullopt;
}

}  // namespace

int run_instrument(const InstrumentOptions& o) {
  if (o.command.empty()) {
    fmt::print(stderr,
               "tailcause instrument: give the command after --: "
               "tailcause instrument -- python3 agent.py\n");
    return 2;
  }
  const std::string interpreter = fs::path(o.command.front()).filename().string();
  if (!interpreter.starts_with("python")) {
    fmt::print(stderr,
               "tailcause instrument: {} is not a Python interpreter; instrument runs Python "
               "agents (tailcause instrument -- python3 agent.py)\n",
               o.command.front());
    return 2;
  }
  core::PythonCommand args = core::python_instrument_command(o.command);
  if (!args.error.empty()) {
    fmt::print(stderr, "tailcause instrument: {} {}\n", o.command.front(), args.error);
    return 2;
  }
  std::vector<std::string> looked;
  const auto sdk = find_sdk_python(o.sdk_python, looked);
  if (!sdk) {
    fmt::print(stderr,
               "tailcause instrument: the tailcause Python package (tailcause/instrument.py) is "
               "not in {}; pass --sdk-python DIR\n",
               fmt::join(looked, ", "));
    return 2;
  }
  const char* old_path = std::getenv("PYTHONPATH");
  const std::string path =
      sdk->string() + (old_path && *old_path ? std::string(":") + old_path : std::string());
  setenv("PYTHONPATH", path.c_str(), 1);
  if (!std::getenv("TAILCAUSE_SDK_LIB")) {
    if (auto lib = find_sdk_library()) setenv("TAILCAUSE_SDK_LIB", lib->c_str(), 1);
  }
  const std::pair<const char*, const std::string*> settings[] = {
      {"TAILCAUSE_INSTRUMENT_ENTRY", &o.entry},
      {"TAILCAUSE_INSTRUMENT_WSGI", &o.wsgi},
      {"TAILCAUSE_INSTRUMENT_ASGI", &o.asgi},
      {"TAILCAUSE_INSTRUMENT_TENANT_ARG", &o.tenant_arg},
      {"TAILCAUSE_INSTRUMENT_TENANT_HEADER", &o.tenant_header},
      {"TAILCAUSE_INSTRUMENT_TENANT_ENV", &o.tenant_env},
      {"TAILCAUSE_INSTRUMENT_AGENT", &o.agent}};
  for (const auto& [name, value] : settings) {
    if (!value->empty()) setenv(name, value->c_str(), 1);
  }
  std::vector<char*> argv;
  for (auto& a : args.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fmt::print(stderr, "tailcause instrument: cannot run {}: {}\n", o.command.front(),
             std::strerror(errno));
  return 127;
}

}  // namespace tailcause::cli
