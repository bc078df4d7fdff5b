// SPDX-License-Identifier: Apache-2.0
#include "core/config/recipe_path.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace tailcause::core {
namespace {

std::string join(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

}  // namespace

std::string installed_recipe_dir(std::string_view exe) {
  const std::filesystem::path bin = std::filesystem::path(exe).parent_path();
  if (bin.empty() || !bin.has_parent_path()) return {};
  return (bin.parent_path() / "share" / "tailcause" / "recipes").string();
}

std::string resolve_recipe_file(std::string_view written, std::string_view config_source,
                                std::string_view install_dir,
                                const std::function<bool(const std::string&)>& exists) {
  if (!written.empty() && written.front() == '/') return std::string(written);
  const auto slash = config_source.rfind('/');
  // "tailcause.yaml" (no directory): the working directory, as the daemon opened the file.
  const std::string_view config_dir =
      slash == std::string_view::npos ? std::string_view() : config_source.substr(0, slash + 1);
  std::string beside = join(config_dir, written);
  if (exists(beside)) return beside;
  if (!install_dir.empty()) {
    std::string installed = join(install_dir, written);
    if (exists(installed)) return installed;
  }
  return beside;
}

std::string resolve_recipe_file(std::string_view written, std::string_view config_source) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return resolve_recipe_file(written, config_source, ec ? "" : installed_recipe_dir(exe.string()),
                             [](const std::string& p) { return ::access(p.c_str(), F_OK) == 0; });
}

}  // namespace tailcause::core
