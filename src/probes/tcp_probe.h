// SPDX-License-Identifier: Apache-2.0
// TCP probe family: connection lifetimes, bytes, smoothed RTT and retransmits per service pair
// (bpf/tcp.bpf.c). The kernel sends one record per closed connection, sampled RTTs and
// retransmits through a ring buffer; consume() aggregates them here, so the pair labels
// (core/record/service_pair.h) and their top-K budget are applied in one place. The family also
// polls the qdiscs' statistics (probes/qdisc_stats.h) once a second for the network verdicts.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "probes/handles.h"
#include "probes/probe_family.h"
#include "probes/qdisc_stats.h"

struct tcp_bpf;
struct tailcause_tcp_event;

namespace tailcause::probes {

TAILCAUSE_SKELETON_HANDLE(tcp_bpf);

class TcpProbe final : public ProbeFamily {
 public:
  TcpProbe();
  ~TcpProbe() override;

  const char* name() const override { return "tcp"; }
  // Needs the BPF ring buffer; throws ProbeError without it.
  void start(const ProbeContext& ctx) override;
  void stop() override;
  int event_fd() const override;
  void consume() override;
  // Drains the records that do not wake user space up (sampled RTTs); polls the qdiscs.
  void tick(const ProbeContext& ctx) override;
  // Drains the ring buffer first, so a scrape sees every record submitted before it.
  void collect(core::MetricSet& out) override;
  std::vector<const bpf_program*> programs() const override;
  uint64_t folded_label_values() const override;

 private:
  struct Pairs;  // label budget and per-pair totals, reset on each start()

  void on_record(std::span<const std::byte> bytes);
  void handle(const tailcause_tcp_event& e);

  Handle<tcp_bpf> skel_;
  RingHandle ring_;  // after skel_: freed before the map it reads
  std::unique_ptr<Pairs> pairs_;
  std::unique_ptr<QdiscStats> qdiscs_;  // null where rtnetlink could not be opened
  std::chrono::steady_clock::time_point last_qdisc_poll_{};
};

std::unique_ptr<ProbeFamily> make_tcp_probe();

}  // namespace tailcause::probes
