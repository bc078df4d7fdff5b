// Sub-commands of the infertrace executable. Each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>

namespace infertrace::cli {

struct CommonOptions {
  std::string config_path;  // empty: built-in defaults
  std::string listen;       // overrides the configuration's listen address
  std::string btf;          // overrides the configuration's BTF path
  uint32_t pid = 0;         // attrib: only this process
  std::string binary;       // attrib: only this executable or library
};

int run_daemon(const CommonOptions& options);
int print_probes(const CommonOptions& options, bool json);

}  // namespace infertrace::cli
