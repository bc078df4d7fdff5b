// The daemon's configuration: its model, defaults, and YAML validation with errors that name
// the file, the line and the key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

// A uprobe recipe: calls of `symbol` in `library` are stages (or GPU waits) for runtimes
// without the SDK (deploy/recipes/*.yaml).
struct Recipe {
  // An absolute path or a file-name glob ("libllama.so*"), matched against the files running
  // processes map (a glob with '/' against the whole path, else against the file name).
  std::string library;
  std::string symbol;  // as the ELF symbol table spells it (C++: mangled)
  // span: prompt|embedding|retrieval|generation|tool|response or a free name; gpu_sync and
  // count: empty.
  std::string stage;
  std::string kind = "span";  // span | gpu_sync | count
  std::string source;         // "file:line", for messages
  bool operator==(const Recipe&) const = default;
};

// Request/stage attribution through the SDK's USDT probes and uprobe recipes.
struct AttribConfig {
  bool enabled = true;
  // layer_begin/end fire several times per token: their uprobe traps cost ~1 us each, so the
  // layer x batch heatmap is opt-in.
  bool layers = false;
  uint32_t pid = 0;    // attach to this process only; 0: every process that maps an SDK binary
  std::string binary;  // attach to this executable or library only; empty: discover them
  std::vector<Recipe> recipes;            // inline recipes
  std::vector<std::string> recipe_files;  // absolute paths of recipe files (read at start)
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

// Parses a recipe file: YAML with one key, `recipes:`, a list like probes.attrib.recipes.
// Throws ConfigError naming the file, the line and the key.
std::vector<Recipe> parse_recipe_file(std::string_view yaml_text, std::string_view source);
// The inline recipes followed by those of every recipe file; a file that cannot be read or is
// invalid is skipped and its error appended to `errors`.
std::vector<Recipe> load_recipes(const AttribConfig& config, std::vector<std::string>& errors);

// Checks "HOST:PORT" ("0.0.0.0:9436", "[::1]:9436", ":9436"); throws ConfigError.
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
ListenAddress parse_listen(std::string_view text);

}  // namespace infertrace::core
