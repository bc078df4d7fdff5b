// SPDX-License-Identifier: Apache-2.0
#include "core/record/stage_record.h"

#include <algorithm>
#include <cstring>

#include <sys/socket.h>

#include "bpf/attrib.h"
#include "core/record/service_pair.h"
#include "core/record/stage_kind.h"
#include "core/record/traceparent.h"

namespace tailcause::core {
namespace {

constexpr std::array<const char*, ATTRIB_KERNEL_ERRORS> kKernelErrors = {
    "stage_end_without_begin",
    "stage_begin_twice",
    "unknown_stage_kind",
    "unknown_request",
    "tenant_too_long",
    "name_too_long",
    "request_begin_twice",
    "request_end_without_begin",
    "stage_mismatch",
    "detach_without_attach",
    "attach_twice",
    "exit_mid_stage",
    "bad_cache_result",
    "layer_end_without_begin",
    "bad_trace_id",
    "unreadable_string",
    "recipe_return_missed",
    "bad_cache_action"};
static_assert(kKernelErrors.size() == ATTRIB_KERNEL_ERRORS);
static_assert(StageRecord::kWorkerSpanKind == ATTRIB_STAGE_NONE, "one kind for a worker span");
static_assert(kCacheActionNames.size() == ATTRIB_CACHE_ACTIONS);
static_assert(sizeof(attrib_cache_action_record) % 8 == 0, "no tail padding in the ring");

// core/record/stage_kind.h numbers the stage kinds as the BPF ABI (and the SDK) does.
static_assert(kStageKinds == ATTRIB_STAGE_KINDS, "one stage kind per ATTRIB_STAGE_* kind");
static_assert(stage_kind_value(StageKind::other) == ATTRIB_STAGE_OTHER, "other is the last kind");
constexpr uint32_t kStageOther = stage_kind_value(StageKind::other);

// core/record/schema.h lists the components in the kernel's order, unattributed last.
static_assert(ATTRIB_KERNEL_COMPONENTS + 1 == kComponents, "unattributed is the last component");
static_assert(index_of(Component::on_cpu) == ATTRIB_ON_CPU &&
                  index_of(Component::runqueue) == ATTRIB_RUNQUEUE &&
                  index_of(Component::cpu_throttled) == ATTRIB_CPU_THROTTLED &&
                  index_of(Component::block_io) == ATTRIB_BLOCK_IO &&
                  index_of(Component::network) == ATTRIB_NETWORK &&
                  index_of(Component::lock) == ATTRIB_LOCK &&
                  index_of(Component::gpu) == ATTRIB_GPU &&
                  index_of(Component::sleep) == ATTRIB_SLEEP,
              "core/record/schema.h and bpf/attrib.h order the components alike");
static_assert(sizeof(attrib_stage_record) % 8 == 0 && sizeof(attrib_request_record) % 8 == 0 &&
                  sizeof(attrib_cache_record) % 8 == 0 && sizeof(attrib_quality_record) % 8 == 0 &&
                  sizeof(attrib_anomaly) % 8 == 0 && sizeof(attrib_peer) % 8 == 0 &&
                  sizeof(attrib_span) % 8 == 0,
              "records have no tail padding");
static_assert(sizeof(attrib_peer) == 16 + 4 + 4 + 8, "attrib_peer has no implicit padding");
static_assert(ATTRIB_ANOMALY_MAJOR_FAULT >= ATTRIB_KERNEL_COMPONENTS, "kinds do not overlap");

// Copies a record out of the ring (which only guarantees 8-byte alignment of the start).
template <typename T>
std::optional<T> read_as(std::span<const std::byte> data) {
  if (data.size() < sizeof(T)) return std::nullopt;
  T out;
  std::memcpy(&out, data.data(), sizeof(T));
  return out;
}

Identity decode_identity(const attrib_identity& raw) {
  Identity id;
  id.request_id = raw.request_id;
  id.pid = raw.tgid;
  id.known_request = !(raw.flags & ATTRIB_ID_NO_REQUEST);
  id.synthetic = (raw.flags & ATTRIB_ID_SYNTHETIC) != 0;
  if (!id.known_request) {
    id.tenant = kUnknownLabel;
    id.agent = kUnknownLabel;
    return id;
  }
  bool bad_tenant = false, bad_agent = false;
  id.tenant = label_value(c_field(raw.tenant, sizeof raw.tenant),
                          raw.flags & ATTRIB_ID_TENANT_TRUNCATED, &bad_tenant);
  id.agent = label_value(c_field(raw.agent, sizeof raw.agent),
                         raw.flags & ATTRIB_ID_AGENT_TRUNCATED, &bad_agent);
  id.invalid_utf8 = bad_tenant || bad_agent;
  const std::string_view trace = c_field(raw.trace_id, sizeof raw.trace_id);
  // A bare trace id or a W3C traceparent (traceparent.h): the traced process's bytes.
  if (auto t = parse_trace_context(trace)) {
    id.trace_id = std::move(t->trace_id);
    id.parent_span_id = std::move(t->parent_span_id);
    id.trace_flags = t->flags;
  } else {
    // An over-long one was already counted by the kernel and arrives empty.
    id.bad_trace_id = !trace.empty();
  }
  return id;
}

StageRecord decode_stage(const attrib_stage_record& raw) {
  StageRecord r;
  r.id = decode_identity(raw.id);
  r.tid = raw.hdr.tid;
  r.cgroup_id = raw.cgroup_id;
  r.kind = raw.span.stage_kind;
  r.flags = raw.span.flags;
  r.start_ns = raw.span.start_ns;
  r.end_ns = raw.span.end_ns;
  r.stage = stage_label(r.kind, c_field(raw.span.stage_name, sizeof raw.span.stage_name),
                        r.flags & ATTRIB_SPAN_NAME_TRUNCATED, &r.invalid_name);
  if (r.kind < kStageOther) {
    std::string_view name = c_field(raw.span.stage_name, sizeof raw.span.stage_name);
    if (r.flags & ATTRIB_SPAN_NAME_TRUNCATED) name = trim_partial_utf8(name);
    if (!name.empty() && name != r.stage && valid_utf8(name)) r.detail = std::string(name);
  }
  uint64_t measured = 0;
  for (size_t c = 0; c < ATTRIB_KERNEL_COMPONENTS; ++c) {
    r.component_ns[c] = raw.span.component_ns[c];
    measured += raw.span.component_ns[c];
  }
  const uint64_t wall = r.wall_ns();
  r.component_ns[static_cast<size_t>(Component::unattributed)] =
      wall > measured ? wall - measured : 0;
  r.page_cache_misses = raw.span.page_cache_misses;
  r.major_faults = raw.span.major_faults;
  r.throttled_waits = raw.span.throttled_waits;
  r.bytes_read = raw.span.bytes_read;
  std::array<uint8_t, 16> addr;
  std::memcpy(addr.data(), raw.span.peer.addr, addr.size());
  r.network_peer = peer_label(raw.span.peer.family, addr, raw.span.peer.port);
  if (r.network_peer) r.network_peer_ns = raw.span.peer.wait_ns;
  if (raw.span.waker_tid && raw.span.waker_ns &&
      raw.span.waker_component < ATTRIB_KERNEL_COMPONENTS) {
    r.waker = Waker{raw.span.waker_tid, raw.span.waker_ns,
                    static_cast<Component>(raw.span.waker_component),
                    raw.span.waker_wait == ATTRIB_LOCK, raw.span.waker_wait == ATTRIB_NETWORK};
  }
  return r;
}

RequestRecord decode_request(const attrib_request_record& raw) {
  RequestRecord r;
  r.id = decode_identity(raw.id);
  r.cgroup_id = raw.cgroup_id;
  r.start_ns = raw.start_ns;
  r.end_ns = raw.end_ns;
  r.status = raw.status;
  r.tokens = raw.tokens;
  r.first_token_ns = raw.first_token_ns;
  r.last_token_ns = raw.last_token_ns;
  return r;
}

CacheRecord decode_cache(const attrib_cache_record& raw) {
  CacheRecord r;
  r.id = decode_identity(raw.id);
  r.cache = label_value(c_field(raw.cache, sizeof raw.cache), raw.name_truncated, &r.invalid_name);
  r.result = static_cast<int>(raw.result);
  r.age_ns = raw.age_ns;
  r.key_hash = raw.key_hash;
  r.time_ns = raw.time_ns;
  return r;
}

std::optional<CacheActionRecord> decode_cache_action(const attrib_cache_action_record& raw) {
  if (raw.action < 0 || raw.action >= static_cast<int64_t>(kCacheActionNames.size())) {
    return std::nullopt;  // the kernel drops these already
  }
  CacheActionRecord r;
  r.pid = raw.tgid;
  bool bad_tenant = false, bad_cache = false;
  r.tenant = label_value(c_field(raw.tenant, sizeof raw.tenant), raw.tenant_truncated, &bad_tenant);
  r.cache = label_value(c_field(raw.cache, sizeof raw.cache), raw.name_truncated, &bad_cache);
  r.invalid_utf8 = bad_tenant || bad_cache;
  r.action = static_cast<int>(raw.action);
  r.count = raw.count;
  r.time_ns = raw.time_ns;
  return r;
}

std::optional<KernelAnomaly> decode_anomaly(const attrib_anomaly& raw) {
  if (raw.end_ns == 0) return std::nullopt;
  KernelAnomaly a;
  a.end_ns = raw.end_ns;
  a.duration_ns = raw.duration_ns;
  if (raw.kind == ATTRIB_ANOMALY_MAJOR_FAULT) {
    a.kind = kMajorFaultAnomaly;
  } else if (raw.kind < ATTRIB_KERNEL_COMPONENTS) {
    a.kind = kComponentNames[raw.kind];
  } else {
    a.kind = kUnknownLabel;  // a newer kernel side than this decoder
  }
  return a;
}

QualityRecord decode_quality(const attrib_quality_record& raw) {
  QualityRecord r;
  r.id = decode_identity(raw.id);
  r.entropy = raw.entropy_micro * 1e-6;
  r.time_ns = raw.time_ns;
  r.thread_anomaly = decode_anomaly(raw.thread_anomaly);
  r.process_anomaly = decode_anomaly(raw.process_anomaly);
  return r;
}

}  // namespace

std::optional<Component> anomaly_component(std::string_view kind) {
  const auto c = component_from_name(kind);
  if (c && index_of(*c) < ATTRIB_KERNEL_COMPONENTS) return c;
  return std::nullopt;
}

const char* kernel_error_name(size_t kind) {
  return kind < kKernelErrors.size() ? kKernelErrors[kind] : "unknown";
}
size_t kernel_error_kinds() { return kKernelErrors.size(); }

uint64_t StageRecord::measured_ns() const {
  uint64_t sum = 0;
  for (size_t c = 0; c + 1 < kComponents; ++c) sum += component_ns[c];
  return sum;
}

bool StageRecord::worker() const { return flags & ATTRIB_SPAN_WORKER; }
bool StageRecord::aborted() const { return flags & ATTRIB_SPAN_ABORTED; }
bool StageRecord::recipe() const { return flags & ATTRIB_SPAN_RECIPE; }
bool StageRecord::recipe_call_request() const { return flags & ATTRIB_SPAN_RECIPE_CALL; }
void StageRecord::mark_recipe() { flags |= ATTRIB_SPAN_RECIPE; }
bool StageRecord::owner_stage() const { return !aborted() && !worker() && kind != kWorkerSpanKind; }

Component StageRecord::largest() const {
  const auto it = std::max_element(component_ns.begin(), component_ns.end());
  return static_cast<Component>(it - component_ns.begin());
}

double RequestRecord::duration_seconds() const {
  return end_ns > start_ns ? (end_ns - start_ns) * 1e-9 : 0;
}

std::optional<double> RequestRecord::time_to_first_token() const {
  if (!first_token_ns || first_token_ns < start_ns) return std::nullopt;
  return (first_token_ns - start_ns) * 1e-9;
}

std::optional<double> RequestRecord::time_per_output_token() const {
  if (tokens < 2 || first_token_ns == 0 || last_token_ns < first_token_ns) return std::nullopt;
  return (last_token_ns - first_token_ns) * 1e-9 / static_cast<double>(tokens - 1);
}

std::optional<Record> decode_record(std::span<const std::byte> data) {
  const auto hdr = read_as<attrib_record_header>(data);
  if (!hdr) return std::nullopt;
  switch (hdr->type) {
    case ATTRIB_REC_STAGE:
      if (auto raw = read_as<attrib_stage_record>(data)) return decode_stage(*raw);
      break;
    case ATTRIB_REC_REQUEST:
      if (auto raw = read_as<attrib_request_record>(data)) return decode_request(*raw);
      break;
    case ATTRIB_REC_CACHE:
      if (auto raw = read_as<attrib_cache_record>(data)) return decode_cache(*raw);
      break;
    case ATTRIB_REC_CACHE_ACTION:
      if (auto raw = read_as<attrib_cache_action_record>(data)) {
        if (auto r = decode_cache_action(*raw)) return *r;
      }
      break;
    case ATTRIB_REC_QUALITY:
      if (auto raw = read_as<attrib_quality_record>(data)) return decode_quality(*raw);
      break;
    case ATTRIB_REC_EXEC:
    case ATTRIB_REC_PROCESS_EXIT: return ProcessRecord{hdr->type == ATTRIB_REC_EXEC, hdr->tid};
    default: break;
  }
  return std::nullopt;
}

std::string_view c_field(const char* field, size_t size) {
  return std::string_view(field, strnlen(field, size));
}

std::string label_value(std::string_view raw, bool truncated, bool* invalid) {
  if (truncated) raw = trim_partial_utf8(raw);
  if (raw.empty()) return kUnknownLabel;
  if (!valid_utf8(raw)) {
    if (invalid) *invalid = true;
    return kInvalidLabel;
  }
  return std::string(raw);
}

std::string stage_label(uint32_t kind, std::string_view name, bool truncated, bool* invalid) {
  if (kind == ATTRIB_STAGE_NONE) return "none";
  if (kind < kStageOther) return kStageKindNames[kind];
  if (truncated) name = trim_partial_utf8(name);
  if (name.empty()) return "other";
  if (!valid_utf8(name)) {
    if (invalid) *invalid = true;
    return kInvalidLabel;
  }
  return std::string(name);
}

std::optional<std::string> peer_label(uint32_t family, const std::array<uint8_t, 16>& addr,
                                      uint32_t port) {
  IpAddress a;
  a.bytes = addr;
  if (family == AF_INET) {
    a.family = AddressFamily::IPv4;
  } else if (family == AF_INET6) {
    a.family = AddressFamily::IPv6;
  } else {
    return std::nullopt;
  }
  return format_endpoint(a, static_cast<uint16_t>(port));
}

std::optional<std::string> normalize_trace_id(std::string_view text) {
  if (text.size() != 32) return std::nullopt;
  std::string out(text);
  bool all_zero = true;
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return std::nullopt;
    all_zero = all_zero && c == '0';
  }
  if (all_zero) return std::nullopt;
  return out;
}

}  // namespace tailcause::core
