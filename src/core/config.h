// The daemon's configuration: its model, defaults, and YAML validation with errors that name
// the file, the line and the key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace infertrace::core {

struct SchedConfig {
  bool enabled = true;
  uint32_t runqlen_dense_hz = 200;  // while a watched cgroup is being throttled
  uint32_t runqlen_sparse_hz = 10;  // otherwise
  bool operator==(const SchedConfig&) const = default;
};

struct ThrottleConfig {
  bool enabled = true;
  uint32_t interval_ms = 1000;  // how often cpu.stat is read
  bool operator==(const ThrottleConfig&) const = default;
};

struct TcpConfig {
  bool enabled = true;
  bool operator==(const TcpConfig&) const = default;
};

struct MemoryConfig {
  bool enabled = true;
  bool operator==(const MemoryConfig&) const = default;
};

struct BlockConfig {
  bool enabled = true;
  bool operator==(const BlockConfig&) const = default;
};

// Request/stage attribution through the SDK's USDT probes.
struct AttribConfig {
  bool enabled = true;
  uint32_t pid = 0;    // attach to this process only; 0: every process that maps an SDK binary
  std::string binary;  // attach to this executable or library only; empty: discover them
  bool operator==(const AttribConfig&) const = default;
};

struct CgroupConfig {
  std::string version = "auto";  // auto | v1 | v2
  std::string root = "auto";     // hierarchy holding cpu.stat, or auto
  bool operator==(const CgroupConfig&) const = default;
};

struct Config {
  std::string listen = "0.0.0.0:9436";
  uint32_t top_k = 50;  // label values kept per label before folding into __other__
  CgroupConfig cgroup;
  std::string btf;         // BTF file for kernels without /sys/kernel/btf/vmlinux; empty: kernel's
  bool bpf_stats = false;  // ask the kernel for per-program run time (a few ns per run)
  SchedConfig sched;
  ThrottleConfig throttle;
  TcpConfig tcp;
  MemoryConfig memory;
  BlockConfig block;
  AttribConfig attrib;
  bool operator==(const Config&) const = default;
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates YAML text; `source` names it in errors ("/etc/infertrace.yaml").
// Keys that are absent keep their defaults. Throws ConfigError.
Config parse_config(std::string_view yaml_text, std::string_view source);

// Checks "HOST:PORT" ("0.0.0.0:9436", "[::1]:9436", ":9436"); throws ConfigError.
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
ListenAddress parse_listen(std::string_view text);

}  // namespace infertrace::core
