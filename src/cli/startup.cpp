#include "cli/startup.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "probes/bpf_loader.h"
#include "probes/privileges.h"

namespace tailcause::cli {

core::Config load_config(const CommonOptions& options) {
  core::Config config;
  if (!options.config_path.empty()) {
    config = core::load_config_file(options.config_path);
  }
  if (!options.listen.empty()) {
    core::parse_listen(options.listen);  // throws with a clear message
    config.listen = options.listen;
  }
  if (!options.btf.empty()) config.btf = options.btf;
  if (options.pid) config.attrib.pid = options.pid;
  if (!options.binary.empty()) config.attrib.binary = std::filesystem::absolute(options.binary).string();
  return config;
}

std::optional<Startup> prepare(const CommonOptions& options) {
  Startup s;
  try {
    s.config = load_config(options);
  } catch (const core::ConfigError& e) {
    fmt::print(stderr, "tailcause: configuration error: {}\n", e.what());
    return std::nullopt;
  }
  if (auto missing = probes::missing_capabilities(); !missing.empty()) {
    fmt::print(stderr,
               "tailcause: missing capability {}: loading BPF programs needs CAP_BPF and "
               "CAP_PERFMON (or root). Run as root or grant them, e.g. "
               "setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep build/tailcause\n",
               fmt::join(missing, ", "));
    return std::nullopt;
  }
  probes::install_libbpf_logger();
  s.features = probes::probe_features(s.config.btf);
  if (!s.features.btf) {
    fmt::print(stderr,
               "tailcause: no usable BTF: {}. tailcause's CO-RE programs need type information "
               "for the running kernel: use a kernel with CONFIG_DEBUG_INFO_BTF=y, or pass a BTF "
               "file for it with --btf FILE (btf: in the configuration)\n",
               s.features.list.front().detail);
    return std::nullopt;
  }
  try {
    s.layout = probes::detect_cgroup_layout(s.config.cgroup);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tailcause: cgroups: {}\n", e.what());
    return std::nullopt;
  }
  return s;
}

}  // namespace tailcause::cli
