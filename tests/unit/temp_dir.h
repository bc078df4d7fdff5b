// SPDX-License-Identifier: Apache-2.0
// A directory under the system temp dir that lives as long as the test object; for unit tests
// that need real files or sockets (journal, breaker socket and state).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace tailcause::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tailcause-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace tailcause::testing
