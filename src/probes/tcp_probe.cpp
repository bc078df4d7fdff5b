// SPDX-License-Identifier: Apache-2.0
#include "core/host/clock.h"
#include "probes/tcp_probe.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include "core/aggregate/histogram_conversion.h"
#include "core/record/schema.h"
#include "core/record/service_pair.h"
#include "probes/bpf_loader.h"
#include "probes/ring_reader.h"
#include "bpf/hist.h"
#include "bpf/tcp.h"
#include "tcp.skel.h"

namespace tailcause::probes {
namespace {

using core::MetricType;

constexpr const char* kFamily = "tcp";
constexpr int kAfInet = 2, kAfInet6 = 10;  // the kernel's family numbers in the records

// Buckets, as log2 slots of microseconds (slot i: le = 2^(i+1) us).
constexpr size_t kDurationFirst = 5, kDurationLast = 34;  // 64 us .. ~9.5 h
constexpr size_t kRttFirst = 1, kRttLast = 22;            // 4 us .. ~8.4 s
constexpr auto kQdiscInterval = std::chrono::seconds(1);

static_assert(sizeof(tailcause_tcp_event) == 72, "the record layout is shared with BPF");

using Slots = std::array<uint64_t, TAILCAUSE_LOG2_SLOTS>;

struct Log2Hist {
  Slots slots{};
  uint64_t sum = 0;
  void observe(uint64_t v) {
    ++slots[core::log2_slot(v, TAILCAUSE_LOG2_SLOTS)];
    sum += v;
  }
};

// Everything one exported pair accumulated since start(); monotonic.
struct PairTotals {
  Log2Hist duration_us;
  Log2Hist rtt_us;
  uint64_t sent_bytes = 0;
  uint64_t received_bytes = 0;
  uint64_t retransmits = 0;
};

core::IpAddress address(uint16_t family, const __u8 (&bytes)[16]) {
  core::IpAddress a;
  a.family = family == kAfInet6 ? core::AddressFamily::IPv6 : core::AddressFamily::IPv4;
  std::copy(std::begin(bytes), std::end(bytes), a.bytes.begin());
  return a;
}

}  // namespace

TAILCAUSE_SKELETON_DESTROY(tcp_bpf)

// Pairs are folded as records arrive rather than at collect time (FoldedSeries): admission is
// sticky, so a folded pair always lands in "__other__" and every series stays monotonic, while
// memory stays bounded by top_k + 1 pairs however many distinct peers a server sees.
struct TcpProbe::Pairs {
  explicit Pairs(size_t top_k) : budget(top_k) {}

  PairTotals& at(const core::ServicePair& pair) {
    if (budget.admit(pair.local + ' ' + pair.remote) == core::kOtherLabel) {
      return totals[core::ServicePair{core::kOtherLabel, core::kOtherLabel}];
    }
    return totals[pair];
  }

  core::LabelBudget budget;  // keyed by "local remote" (neither contains a space)
  std::map<core::ServicePair, PairTotals> totals;
};

TcpProbe::TcpProbe() = default;
TcpProbe::~TcpProbe() { stop(); }

void TcpProbe::start(const ProbeContext& ctx) {
  stop();
  if (!ctx.features.ringbuf) {
    throw ProbeError("tcp: the kernel has no BPF ring buffer (needs Linux 5.8 or later)");
  }
  pairs_ = std::make_unique<Pairs>(ctx.config.top_k);
  // Built here and kept only when complete: a failure frees them on the way out.
  const bpf_object_open_opts opts = open_options(ctx.features);
  Handle<tcp_bpf> skel(tcp_bpf__open_opts(&opts));
  if (!skel) check(errno ? -errno : -EINVAL, kFamily, "open BPF object");
  select_tracepoint_flavour(skel->obj, ctx.features);
  check(tcp_bpf__load(skel.get()), kFamily, "load BPF programs");
  check(
      tcp_bpf__attach(skel.get()), kFamily,
      std::string("attach tcp tracepoints (") + (ctx.features.tp_btf ? "tp_btf" : "raw_tp") + ")");
  auto ring = std::make_unique<RingReader>(bpf_map__fd(skel->maps.tcp_events),
                                           [this](std::span<const std::byte> r) { on_record(r); });
  skel_ = std::move(skel);
  ring_ = std::move(ring);
  spdlog::info("tcp: attached ({})", ctx.features.tp_btf ? "tp_btf" : "raw_tp");
  try {
    qdiscs_ = std::make_unique<QdiscStats>(ctx.config.top_k);
  } catch (const std::exception& e) {
    spdlog::warn("tcp: no qdisc statistics ({}); network verdicts will not name a qdisc", e.what());
  }
}

void TcpProbe::stop() {
  qdiscs_.reset();
  ring_.reset();
  skel_.reset();
}

int TcpProbe::event_fd() const { return ring_ ? ring_->event_fd() : -1; }

void TcpProbe::consume() {
  if (ring_) ring_->consume();
}

void TcpProbe::tick(const ProbeContext& ctx) {
  consume();
  if (qdiscs_ && std::chrono::steady_clock::now() - last_qdisc_poll_ >= kQdiscInterval) {
    last_qdisc_poll_ = std::chrono::steady_clock::now();
    qdiscs_->poll(ctx.signals.evidence, core::monotonic_ns());
  }
}

void TcpProbe::on_record(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(tailcause_tcp_event)) return;
  tailcause_tcp_event e;
  std::memcpy(&e, bytes.data(), sizeof e);
  handle(e);
}

void TcpProbe::handle(const tailcause_tcp_event& e) {
  if (e.family != kAfInet && e.family != kAfInet6) return;
  const auto direction = e.direction == TAILCAUSE_TCP_ACTIVE ? core::TcpDirection::Active
                                                             : core::TcpDirection::Passive;
  PairTotals& t =
      pairs_->at(core::service_pair(direction, address(e.family, e.local_addr), e.local_port,
                                    address(e.family, e.remote_addr), e.remote_port));
  switch (e.kind) {
    case TAILCAUSE_TCP_EV_CLOSE:
      t.duration_us.observe(e.lifetime_ns / 1000);
      t.sent_bytes += e.bytes_sent;
      t.received_bytes += e.bytes_received;
      if (e.srtt_us) t.rtt_us.observe(e.srtt_us);
      break;
    case TAILCAUSE_TCP_EV_RTT: t.rtt_us.observe(e.srtt_us); break;
    case TAILCAUSE_TCP_EV_RETRANS: t.retransmits += e.count; break;
    default: break;
  }
}

void TcpProbe::collect(core::MetricSet& out) {
  if (!skel_) return;
  consume();
  for (const auto& [pair, t] : pairs_->totals) {
    const core::Labels labels = {{"local", pair.local}, {"remote", pair.remote}};
    out.add_histogram(core::metric::kTcpConnectionDurationSeconds,
                      "Lifetime of closed TCP connections, from connect or accept to close", labels,
                      core::log2_to_buckets(t.duration_us.slots, t.duration_us.sum, 1e-6,
                                            kDurationFirst, kDurationLast));
    out.add_histogram(
        core::metric::kTcpRttSeconds,
        "Smoothed TCP round-trip time: one sample per closed connection plus "
        "samples of received traffic",
        labels, core::log2_to_buckets(t.rtt_us.slots, t.rtt_us.sum, 1e-6, kRttFirst, kRttLast));
    out.add(core::metric::kTcpSentBytes, MetricType::Counter,
            "Payload bytes sent and acknowledged on closed TCP connections", labels,
            static_cast<double>(t.sent_bytes), "bytes");
    out.add(core::metric::kTcpReceivedBytes, MetricType::Counter,
            "Payload bytes received on closed TCP connections", labels,
            static_cast<double>(t.received_bytes), "bytes");
    out.add(core::metric::kTcpRetransmits, MetricType::Counter, "TCP segments retransmitted",
            labels, static_cast<double>(t.retransmits));
  }

  uint64_t lost = 0;
  for (uint32_t reason = 0; reason < TAILCAUSE_TCP_LOST_REASONS; ++reason) {
    lost += percpu_sum(bpf_map__fd(skel_->maps.tcp_lost), reason);
  }
  add_events_lost(out, kFamily, lost);
  if (qdiscs_) qdiscs_->collect(out);
}

std::vector<const bpf_program*> TcpProbe::programs() const {
  return loaded_programs(skel_ ? skel_->obj : nullptr);
}

uint64_t TcpProbe::folded_label_values() const {
  return (pairs_ ? pairs_->budget.folded() : 0) + (qdiscs_ ? qdiscs_->folded() : 0);
}

std::unique_ptr<ProbeFamily> make_tcp_probe() { return std::make_unique<TcpProbe>(); }

}  // namespace tailcause::probes
