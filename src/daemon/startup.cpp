// SPDX-License-Identifier: Apache-2.0
#include "daemon/startup.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/trace/otel_env.h"
#include "probes/bpf_loader.h"
#include "probes/privileges.h"

namespace tailcause::daemon {

core::Config load_config(const StartOptions& options) {
  // The OpenTelemetry variables first, so that what the configuration file sets wins.
  core::Config config;
  for (const std::string& w : core::apply_otel_env(core::OtelEnv::read(std::getenv), config.otlp)) {
    spdlog::warn("{}", w);
  }
  if (!options.config_path.empty()) {
    config = core::load_config_file(options.config_path, std::move(config));
  }
  if (!options.listen.empty()) {
    core::parse_listen(options.listen);  // throws with a clear message
    config.listen = options.listen;
  }
  if (!options.btf.empty()) config.btf = options.btf;
  if (options.pid) config.attrib.pid = options.pid;
  if (!options.binary.empty())
    config.attrib.binary = std::filesystem::absolute(options.binary).string();
  return config;
}

Startup prepare(const StartOptions& options) {
  Startup s;
  try {
    s.config = load_config(options);
  } catch (const core::ConfigError& e) {
    throw StartupError(fmt::format("configuration error: {}", e.what()));
  }
  if (auto missing = probes::missing_capabilities(); !missing.empty()) {
    throw StartupError(fmt::format(
        "missing capability {}: loading BPF programs needs CAP_BPF and CAP_PERFMON (or root). Run "
        "as root or grant them, e.g. setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep "
        "build/tailcause",
        fmt::join(missing, ", ")));
  }
  probes::install_libbpf_logger();
  s.features = probes::probe_features(s.config.btf);
  if (!s.features.btf) {
    throw StartupError(fmt::format(
        "no usable BTF: {}. tailcause's CO-RE programs need type information for the running "
        "kernel: use a kernel with CONFIG_DEBUG_INFO_BTF=y, or pass a BTF file for it with --btf "
        "FILE (btf: in the configuration)",
        s.features.list.front().detail));
  }
  try {
    s.layout = probes::detect_cgroup_layout(s.config.cgroup);
  } catch (const std::exception& e) {
    throw StartupError(fmt::format("cgroups: {}", e.what()));
  }
  return s;
}

}  // namespace tailcause::daemon
