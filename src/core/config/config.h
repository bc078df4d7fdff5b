// SPDX-License-Identifier: Apache-2.0
// The daemon's configuration: its model, defaults, and YAML validation with errors that name
// the file, the line and the key.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tailcause::core {

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

// An identity rule (probes.attrib.identity; matching in core/config/identity_rules.h): the tenant
// and agent of a process without the SDK, from its cgroup path, name, command line or environment.
struct IdentityRule {
  std::string from;     // cgroup | comm | cmdline | env
  std::string env;      // the variable's name, for from: env
  std::string pattern;  // ECMAScript regex, searched in the value (anchor it with ^...$)
  // Templates: $0 the whole match, $1..$9 its groups, ${comm} the process name, ${pid}.
  std::string tenant = "$0";
  std::string agent = "${comm}";
  std::string source;  // "file:line", for messages
  bool operator==(const IdentityRule& o) const {
    return from == o.from && env == o.env && pattern == o.pattern && tenant == o.tenant &&
           agent == o.agent;
  }
};

// A uprobe recipe: calls of `symbol` in `library` are stages (or GPU waits) for runtimes
// without the SDK (deploy/recipes/*.yaml).
struct Recipe {
  // An absolute path or a file-name glob ("libllama.so*"), matched against the files running
  // processes map (a glob with '/' against the whole path, else against the file name). A
  // recipe file may give a list (`library: [libfaiss*.so*, _swigfaiss*.so]`): one Recipe each.
  std::string library;
  std::string symbol;  // as the ELF symbol table spells it (C++: mangled)
  // span: prompt|embedding|retrieval|generation|tool|response or a free name; gpu_sync and
  // count: empty.
  std::string stage;
  std::string kind = "span";  // span | gpu_sync | count
  // `request: call`: each call is a whole request of its process (ONNX Runtime's session Run);
  // `grouped` (the default): calls are grouped into requests (core/record/recipe_requests.h).
  bool whole_request = false;
  std::string source;  // "file:line", for messages
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
  std::vector<Recipe> recipes;  // inline recipes
  // Recipe files; relative ones as resolve_recipe_file() found them.
  std::vector<std::string> recipe_files;
  // Their recipes, read with the configuration (load_config_file): a file that cannot be read
  // or parsed is a configuration error, at start and on reload.
  std::vector<Recipe> file_recipes;
  // Tenant and agent of processes without the SDK (recipe spans), first match wins.
  std::vector<IdentityRule> identity;
  bool operator==(const AttribConfig&) const = default;
};

struct CgroupConfig {
  std::string version = "auto";  // auto | v1 | v2
  std::string root = "auto";     // hierarchy holding cpu.stat, or auto
  bool operator==(const CgroupConfig&) const = default;
};

// Sustained slowdowns (glitch.incident:): a tenant's stage whose recent median reaches
// `factor` x its baseline median, learned over `horizon` stages and frozen while it lasts.
struct IncidentSettings {
  bool enabled = true;
  double factor = 2.0;
  uint32_t min_samples = 200;  // a (tenant, stage)'s baseline is judged after this many stages
  uint32_t horizon = 5000;     // stages the baseline remembers (1/e weight after this many)
  uint32_t window = 15;        // recent stages whose median is tested
  double min_excess_ms = 1.0;  // a slowed stage also runs this much over the baseline median
  uint32_t quiet_s = 5;        // an incident ends this long after its stages recovered
  bool operator==(const IncidentSettings&) const = default;
};

// When a request or stage is a glitch (glitch:).
struct GlitchSettings {
  uint32_t request_slo_ms = 800;
  uint32_t stage_slo_ms = 200;                    // stages not listed in stage_slos_ms
  std::map<std::string, uint32_t> stage_slos_ms;  // stage name -> SLO
  // A file whose glitch: section sets the three SLOs above (deploy/prometheus/thresholds.yaml,
  // which the alert rules are generated from), read by load_config_file; "" for none.
  std::string slo_file;
  double p99_factor = 2.0;    // also a glitch when over this many times its recent P99 ...
  uint32_t min_samples = 50;  // ... once its window holds this many samples
  // Uprobe recipe spans (no SDK) shorter than this are too short to judge against their P99:
  // a millisecond call doubled by one scheduler tick is noise, not a glitch. The SLO still holds.
  uint32_t recipe_noise_floor_ms = 20;
  IncidentSettings incident;
  bool operator==(const GlitchSettings&) const = default;
};

// A tenant's vector cache stops helping: misses + stale results over a sliding window.
struct CacheBreakdownSettings {
  uint32_t window_s = 60;
  uint32_t min_lookups = 20;  // no verdict on fewer lookups than this in the window
  double ratio = 0.5;         // (miss + stale) / lookups at or above this is a breakdown
  uint32_t warmup_s = 60;     // no verdict this soon after a cache's first lookup (it is filling)
  bool operator==(const CacheBreakdownSettings&) const = default;
};

// Output-entropy spikes held over consecutive outputs, joined to kernel anomalies.
struct EntropySettings {
  double rise = 0.4;            // 40% over the request's baseline ...
  uint32_t outputs = 3;         // ... held this many consecutive outputs
  uint32_t correlation_ms = 5;  // kernel anomalies this close to a spike output are joined
  bool operator==(const EntropySettings&) const = default;
};

// Circuit breaker per tenant and agent, readable by agents through a local socket.
struct BreakerSettings {
  uint32_t slow_ms = 200;
  uint32_t trip_after = 3;
  uint32_t quiet_s = 30;
  std::string socket = "/run/tailcause/breaker.sock";  // "": no socket
  // Who may connect: the socket's group ("": the daemon's own; a name or a numeric gid) and
  // mode (owner read-write, the group nothing or write too, others nothing).
  std::string socket_group;
  uint32_t socket_mode = 0600;
  std::string state_file = "/var/lib/tailcause/breaker.state";  // "": not kept over restarts
  bool operator==(const BreakerSettings&) const = default;
};

// The glitch journal (SQLite).
struct JournalSettings {
  std::string path = "/var/lib/tailcause/journal.db";  // "": no journal
  uint32_t max_age_h = 168;
  uint32_t max_mb = 256;
  bool operator==(const JournalSettings&) const = default;
};

// Request and stage spans over OTLP/HTTP (protobuf).
struct OtlpSettings {
  std::string endpoint;                        // http://HOST:PORT/v1/traces; "": no export
  std::map<std::string, std::string> headers;  // sent with every export (auth tokens)
  std::string service_name = "tailcause";
  uint32_t budget_spans_per_s = 200;  // spans exported per second at most, glitches first
  double sample_normal = 0.01;        // share of non-glitch requests exported
  uint32_t queue_spans = 8192;        // spans waiting to be sent; beyond, dropped and counted
  uint32_t batch_spans = 512;
  uint32_t timeout_ms = 5000;
  std::string compression = "gzip";  // of the request body: gzip | none
  // Resource attributes sent with every span besides service.name/version and host.name.
  std::map<std::string, std::string> resource_attributes;
  bool operator==(const OtlpSettings&) const = default;
};

// Kubernetes: namespace/pod/container labels on every per-cgroup series (kubepods.h).
struct KubernetesSettings {
  bool pod_labels = true;  // from kubepods cgroup paths (pod uid, container id)
  // The kubelet's pod list (GET /pods JSON) for names: a file, or an http(s):// URL such as
  // https://127.0.0.1:10250/pods (read again every 30 s at most); "": uids and ids only.
  std::string pod_list;
  std::string token_file;  // bearer token sent to a pod_list URL (a service account's)
  std::string ca_file;     // CA bundle for an https pod_list; "": the system's
  bool insecure_skip_tls_verify = false;  // the kubelet's self-signed serving certificate
  bool operator==(const KubernetesSettings&) const = default;
};

// The web UI's and `top`'s short memory (export/api): how often the daemon samples its own
// metrics for them, and how far back that history and the stage heatmap reach. Memory grows
// with history_s / tick_s (at most kMaxUiSlots samples kept).
struct UiSettings {
  static constexpr uint32_t kMaxUiSlots = 1800;
  uint32_t tick_s = 2;
  uint32_t history_s = 900;
  bool operator==(const UiSettings&) const = default;
};

// limits: how many series the families keyed by an agent's own strings may hold. Each label has
// its top_k budget; these bound their product. Past a limit, new label combinations go to one
// series whose labels are all "__other__", the heaviest combinations kept (by time; caches by
// lookups). stage_series also bounds the (tenant, stage) pairs the glitch and incident
// detectors, the analyzer and the stage heatmap follow.
struct LimitsSettings {
  static constexpr uint32_t kMaxSeries = 100000;
  uint32_t stage_series = 64;    // (tenant, agent, stage)
  uint32_t request_series = 32;  // (tenant, agent)
  uint32_t cache_series = 32;    // (tenant, cache)
  bool operator==(const LimitsSettings&) const = default;
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
  GlitchSettings glitch;
  CacheBreakdownSettings cache_breakdown;
  EntropySettings entropy;
  BreakerSettings breaker;
  JournalSettings journal;
  OtlpSettings otlp;
  KubernetesSettings kubernetes;
  UiSettings ui;
  LimitsSettings limits;
  bool operator==(const Config&) const = default;
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates YAML text; `source` names it in errors ("/etc/tailcause.yaml").
// Keys that are absent keep their defaults. Throws ConfigError.
Config parse_config(std::string_view yaml_text, std::string_view source);
// The same over `base` instead of the defaults: what the file sets wins over what `base` holds
// (the OpenTelemetry environment variables, otel_env.h).
Config parse_config(std::string_view yaml_text, std::string_view source, Config base);

// Reads a configuration or recipe file: a regular file (not a directory, FIFO or device) of at
// most kMaxConfigBytes (config_yaml.h, 1 MiB). Throws ConfigError naming the path and the reason.
std::string read_config_file(const std::string& path);
// read_config_file() then parse_config(), then the glitch SLOs of glitch.slo_file (a relative
// path is taken from the configuration file's directory) over the configuration's own.
Config load_config_file(const std::string& path);
Config load_config_file(const std::string& path, Config base);
// Sets request_slo_ms, stage_slo_ms and stage_slos_ms from the glitch: section of a thresholds
// file's text (its other sections are not the daemon's and are ignored); keys it leaves out keep
// their value. Errors name the file, the line and the key.
void apply_slo_file(std::string_view yaml_text, std::string_view source, GlitchSettings& g);

// Parses a recipe file: YAML with one key, `recipes:`, a list like probes.attrib.recipes.
// Throws ConfigError naming the file, the line and the key.
std::vector<Recipe> parse_recipe_file(std::string_view yaml_text, std::string_view source);
// Reads every file of config.recipe_files into config.file_recipes. Throws ConfigError naming
// `source` (the configuration), the key, the file and the reason.
void load_recipe_files(AttribConfig& config, std::string_view source);
// The inline recipes followed by those read from the recipe files.
std::vector<Recipe> all_recipes(const AttribConfig& config);

// Checks "HOST:PORT" ("0.0.0.0:9436", "[::1]:9436", ":9436"); throws ConfigError.
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
ListenAddress parse_listen(std::string_view text);

// Checks an OTLP/HTTP endpoint: http:// or https://, a host, an optional port 1-65535 and a
// path (default /v1/traces). Throws ConfigError.
struct OtlpEndpoint {
  std::string scheme;  // http | https
  std::string host;
  uint16_t port = 0;
  std::string path;
};
OtlpEndpoint parse_otlp_endpoint(std::string_view text);

// Whether `s` can name a stage: prompt..response or a free name of 1-32 letters, digits,
// '_', '-', '.', ':'.
bool is_stage_name(std::string_view s);

}  // namespace tailcause::core
