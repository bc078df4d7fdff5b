// SPDX-License-Identifier: Apache-2.0
// The attribution family's ring-buffer records (bpf/attrib.h) decoded into label-ready values:
// stage names, tenants validated as UTF-8, trace ids normalised, and the components of a stage
// completed with the time nothing explained (unattributed). Pure: no I/O, no libbpf.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "core/record/schema.h"
#include "core/record/stage_kind.h"
#include "core/record/utf8.h"

namespace tailcause::core {

// Label values the decoder substitutes.
inline constexpr const char* kUnknownLabel = "unknown";      // no request_begin seen, or empty
inline constexpr const char* kInvalidLabel = "__invalid__";  // not UTF-8

// Error kinds counted in user space (the kernel's are named by kernel_error_name()).
inline constexpr const char* kErrorInvalidUtf8 = "invalid_utf8";
inline constexpr const char* kErrorBadTraceId = "bad_trace_id";
inline constexpr const char* kErrorRequestNotEnded = "request_not_ended";  // process exited first

// Name of a kernel-side bad-input kind (enum attrib_sdk_error), for tailcause_sdk_errors_total.
const char* kernel_error_name(size_t kind);
size_t kernel_error_kinds();

// Who a piece of work was for.
struct Identity {
  uint64_t request_id = 0;
  uint32_t pid = 0;
  std::string tenant;  // label-ready (see decode_identity)
  std::string agent;
  std::string trace_id;           // 32 lower-case hex digits, or empty
  std::string parent_span_id;     // 16 hex digits from the agent's traceparent, or empty
  uint8_t trace_flags = 1;        // the traceparent's flags (bit 0: the agent sampled its span)
  bool known_request = true;      // false: no request_begin was seen for the id
  bool derived_trace_id = false;  // trace_id was derived by the daemon (trace_ids.h), not passed
  bool invalid_utf8 = false;      // tenant or agent were not UTF-8 and were replaced
  bool bad_trace_id = false;      // a trace context was given but was neither 32 hex digits nor a
                                  // valid traceparent
  // No SDK request on the thread: a uprobe recipe's span as the ring delivers it (request_id:
  // the thread id; tenant and agent: the process name, replaced by the identity rules or the
  // process's cgroup by the loader), until RecipeRequests groups it into a request of its own.
  bool synthetic = false;
};

// The thread a stage waited on (critical path): its wake-ups moved `ns` of the stage's
// lock/sleep waits into its own causes, most of it into `component`.
struct Waker {
  uint32_t tid = 0;
  uint64_t ns = 0;
  Component component{};
  bool lock_holder = false;  // the waits were in futex(): it held the lock (or the condition)
  bool peer = false;         // the waits were on a socket: a local thread that answered
};

struct StageRecord {
  Identity id;
  uint32_t tid = 0;
  uint64_t cgroup_id = 0;
  std::string stage;  // label-ready stage name
  static constexpr uint32_t kWorkerSpanKind = 255;
  uint32_t kind = 0;      // StageKind (stage_kind.h); kWorkerSpanKind: a worker span between stages
  uint32_t flags = 0;     // ATTRIB_SPAN_*
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  std::array<uint64_t, kComponents> component_ns{};  // unattributed included
  uint64_t page_cache_misses = 0;
  uint64_t major_faults = 0;
  uint32_t throttled_waits = 0;  // run-queue waits the kernel's throttle clock saw throttled
  uint64_t bytes_read = 0;
  bool invalid_name = false;  // a free stage name that was not UTF-8 (replaced)
  // The stage_begin name of a fixed stage when it is not the stage's own name: for a
  // generation stage, the model as "[provider:]model" (OTLP gen_ai.provider.name and
  // gen_ai.request.model). Valid UTF-8 or empty; never a label.
  std::string detail;
  // The remote end of the connected socket the stage waited on longest in socket system calls
  // (their sleeps summed per peer), "10.0.0.7:443" or "[::1]:8080"; absent when the stage
  // waited on none (only poll/epoll/select, Unix sockets or no network at all).
  std::optional<std::string> network_peer;
  uint64_t network_peer_ns = 0;  // its network wait: part of the network component
  std::optional<Waker> waker;    // absent: no wait was resolved through another thread
  // A grouped recipe request judged as a stage (core/detect/recipe_request_stage.h): its time
  // between the runtime's calls, which no span measured, while no evidence has placed it.
  uint64_t between_calls_ns = 0;

  uint64_t wall_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  // What the kernel measured (all components but unattributed); may exceed the wall time only
  // through clock skew between CPUs.
  uint64_t measured_ns() const;
  bool worker() const;               // a context_attach..detach span on a helper thread
  bool aborted() const;              // the thread exited mid-stage
  bool recipe() const;               // begun by a uprobe recipe on a runtime, not by the SDK
  bool recipe_call_request() const;  // ... whose call is a whole request (`request: call`)
  void mark_recipe();                // for records made above the decoder
  // A whole stage of its owner thread, ended: what the detectors and the stage heatmap judge.
  bool owner_stage() const;
  // The component with the most time.
  Component largest() const;
};

struct RequestRecord {
  Identity id;
  uint64_t cgroup_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  int64_t status = 0;  // 0 ok
  uint64_t tokens = 0;
  uint64_t first_token_ns = 0;  // 0: no token
  uint64_t last_token_ns = 0;
  // A request grouped from uprobe recipe calls (core/record/recipe_requests.h): its calls'
  // components summed and the time they took; the rest of its wall time was between calls.
  bool recipe = false;
  std::array<uint64_t, kComponents> call_component_ns{};
  uint64_t in_calls_ns = 0;

  double duration_seconds() const;
  std::optional<double> time_to_first_token() const;
  std::optional<double> time_per_output_token() const;  // needs two tokens or more
};

struct CacheRecord {
  Identity id;
  std::string cache;
  bool invalid_name = false;  // the cache name was not UTF-8 (replaced)
  int result = 0;             // 0 hit, 1 miss, 2 stale
  uint64_t age_ns = 0;
  uint64_t key_hash = 0;
  uint64_t time_ns = 0;  // when the lookup was reported (CLOCK_MONOTONIC)
};

// An action of a cache library (libtailcause_cache's cache_action probe). Not tied to a request.
inline constexpr std::array<const char*, 5> kCacheActionNames = {"warmup", "rebalance",
                                                                 "invalidate", "reject", "evict"};
inline constexpr int kCacheActionRebalance = 1;  // its count is a quota in bytes
struct CacheActionRecord {
  uint32_t pid = 0;
  std::string tenant;
  std::string cache;
  bool invalid_utf8 = false;  // the tenant or the cache name was not UTF-8 (replaced)
  int action = 0;             // index into kCacheActionNames
  // Entries loaded (warm-up), dropped (invalidate) or evicted; the new quota in bytes
  // (rebalance); 1 (reject).
  uint64_t count = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC
};

// A stall the kernel saw on a thread in a span: a run-queue wait, a throttled stretch or a
// block-I/O sleep of 1 ms or more (the loader's anomaly_min_ns), or a major fault.
struct KernelAnomaly {
  uint64_t end_ns = 0;       // CLOCK_MONOTONIC
  uint64_t duration_ns = 0;  // 0 for a major fault (not measured)
  std::string kind;  // a component's name (runqueue, cpu_throttled, block_io) or "major_fault"
  bool operator==(const KernelAnomaly&) const = default;
};
inline constexpr const char* kMajorFaultAnomaly = "major_fault";
// The component an anomaly kind names; nullopt for a major fault.
std::optional<Component> anomaly_component(std::string_view kind);

struct QualityRecord {
  Identity id;
  double entropy = 0;
  uint64_t time_ns = 0;  // when output_quality fired (CLOCK_MONOTONIC)
  // The last anomaly of the reporting thread, and of any thread of its process (the same one
  // when that thread had the latest); absent when none was ever seen.
  std::optional<KernelAnomaly> thread_anomaly{}, process_anomaly{};
};

// A process exec'd (discovery) or exited leaving requests (clean-up).
struct ProcessRecord {
  bool exec = false;
  uint32_t pid = 0;
};

using Record = std::variant<StageRecord, RequestRecord, CacheRecord, CacheActionRecord,
                            QualityRecord, ProcessRecord>;

// Decodes one ring-buffer record; nullopt when it is too short or of an unknown type.
std::optional<Record> decode_record(std::span<const std::byte> data);

// Building blocks, public for tests (UTF-8: core/record/utf8.h).
// The NUL-terminated prefix of a fixed-size field.
std::string_view c_field(const char* field, size_t size);
// A label value from raw bytes: "unknown" when empty, "__invalid__" when not UTF-8.
std::string label_value(std::string_view raw, bool truncated, bool* invalid);
// "prompt" .. "response" for the fixed kinds, the name for "other" kinds (or "other").
std::string stage_label(uint32_t kind, std::string_view name, bool truncated, bool* invalid);
// "1.2.3.4:80", "[::1]:80" (v4-mapped IPv6 as IPv4) from an attrib_peer's family (AF_INET,
// AF_INET6), network-order address and host-order port; nullopt for any other family.
std::optional<std::string> peer_label(uint32_t family, const std::array<uint8_t, 16>& addr,
                                      uint32_t port);
// 32 hex digits, not all zero, lower-cased; nullopt otherwise.
std::optional<std::string> normalize_trace_id(std::string_view text);

}  // namespace tailcause::core
