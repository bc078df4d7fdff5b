// SPDX-License-Identifier: Apache-2.0
// Attribution probe family (bpf/attrib.bpf.c): attaches to the SDK's USDT probes in every
// binary that carries them (or one process / one binary when narrowed), follows process churn,
// and turns the kernel's per-stage records into per tenant/agent/stage series.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/aggregate/stage_aggregator.h"
#include "core/record/recipe_requests.h"
#include "core/record/stage_record.h"
#include "probes/exec_mappings.h"
#include "probes/handles.h"
#include "probes/probe_family.h"
#include "probes/recipe_attach.h"
#include "probes/recipe_identity.h"
#include "probes/usdt_binaries.h"
#include "probes/usdt_discovery.h"

struct attrib_bpf;

namespace tailcause::probes {

TAILCAUSE_SKELETON_HANDLE(attrib_bpf);

class AttribProbe final : public ProbeFamily {
 public:
  AttribProbe();
  ~AttribProbe() override;

  const char* name() const override { return kFamily; }
  void start(const ProbeContext& ctx) override;
  void stop() override;
  int event_fd() const override;
  // Drains the ring buffer, then attaches to binaries of processes that exec'd and frees the
  // requests of processes that exited.
  void consume() override;
  // consume(), plus a /proc rescan every second and a clean-up of dead processes' requests.
  void tick(const ProbeContext& ctx) override;
  void collect(core::MetricSet& out) override;
  std::vector<const bpf_program*> programs() const override;
  uint64_t folded_label_values() const override;
  std::vector<RecipeDetail> recipe_details() const override;

  // Sees every decoded record (tests, tail evidence). Called on the consuming thread.
  using Observer = std::function<void(const core::Record&)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

  // Rescans running processes for binaries to attach or release now.
  void rescan();
  // The processes' /proc files the scans read (each second without the kernel's reports of
  // new mappings, only the reported processes' with them), and whether those reports are on.
  const ExecMappings& mappings() const { return maps_; }
  size_t attached_binaries() const { return usdt_ ? usdt_->size() : 0; }
  // How long a binary's probes stay attached after the last process mapping it is gone (30 s).
  void set_release_grace(std::chrono::milliseconds grace);
  bool attached_to(const std::string& path) const { return usdt_ && usdt_->attached_to(path); }
  // USDT links held now (one per program and binary with uprobe_multi, else one per site), and
  // whether they are uprobe_multi links.
  size_t usdt_links() const { return usdt_ ? usdt_->links() : 0; }
  bool uprobe_multi() const { return usdt_ && usdt_->multi(); }
  // Argument specs in use (shared by sites with the same argument string).
  size_t usdt_spec_ids() const { return usdt_ ? usdt_->spec_ids_in_use() : 0; }
  // Waits until the links of released binaries are closed (they close on other threads).
  void wait_for_releases() {
    if (usdt_) usdt_->wait_for_releases();
  }
  // Entries in the kernel's requests and processes maps, of one process or (0) of all; they
  // must drain when processes exit.
  size_t live_requests(uint32_t pid = 0) const;
  size_t live_processes(uint32_t pid = 0) const;
  uint64_t records_consumed() const { return records_; }
  // Uprobe recipes: attaches to / releases the libraries they name now (tick() does every
  // second); what was wrong with them (files, libraries, symbols), one line each.
  void rescan_recipes();
  const RecipeAttacher& recipes() const { return recipes_; }
  std::vector<std::string> recipe_problems() const;
  uint64_t recipe_calls(size_t index) const;
  uint64_t recipe_spans(size_t index) const;
  uint64_t events_lost() const;       // dropped: ring buffer or a map full
  uint64_t missed_switches() const;   // switch-ins the kernel did not report, recovered
  int64_t spans_in_progress() const;  // stage and recipe spans open on the node now
  // The same as counted by the per-process gates of the scheduler programs, each gate's count
  // as an absolute value: equal to spans_in_progress() while the gates are balanced.
  int64_t spans_in_process_gates() const;

 private:
  static constexpr const char* kFamily = "attrib";  // names the family in errors and metrics
  void on_record(std::span<const std::byte> bytes);
  // To the aggregator and the observer (a derived trace id first where the agent gave none).
  void dispatch(core::Record& record);
  void dispatch_grouped();  // the records recipe_requests_ ended, in order
  void drain();
  // The programs for the tailcause probes a binary carries (layer probes only when asked).
  std::vector<UsdtProgram> usdt_programs(const MappedBinary& binary) const;
  // The pieces of start(), in order.
  void take_settings(const ProbeContext& ctx);
  bool load_programs(const ProbeContext& ctx);
  void track_usdt_binaries(bool multi);
  void attach_binaries();
  void attach_core_programs(const ProbeContext& ctx);
  void attach_major_faults();
  void attach_remap_feed();
  void take_remap_reports();
  // A kind of reclaim ("direct", "memcg") and the programs timing its passes.
  struct ReclaimPair {
    bpf_program* begin;
    bpf_program* end;
    const char* kind;
  };
  std::array<ReclaimPair, 2> reclaim_pairs() const;
  void set_reclaim_autoload(const Features& features);
  void set_remap_autoload(const Features& features);
  void load_recipes(const core::AttribConfig& config);
  void handle_pending();
  // The pieces of collect(), in order.
  void read_kernel_totals();
  void collect_kernel_counters(core::MetricSet& out) const;
  void collect_recipes(core::MetricSet& out) const;
  void collect_usdt(core::MetricSet& out) const;
  uint64_t lost(uint32_t kind) const;
  // Deletes requests of processes in `dead` (or of any dead process when `all_dead`).
  void free_requests(const std::set<uint32_t>& dead, bool all_dead);

  Handle<attrib_bpf> skel_;
  RingHandle ring_;
  std::vector<LinkHandle> links_;       // tracepoints and perf events (each owns its perf fd)
  std::unique_ptr<UsdtBinaries> usdt_;  // while started: the binaries whose probes are attached
  ExecMappings maps_;                   // before the two that read it
  UsdtDiscovery discovery_{maps_};
  RecipeAttacher recipes_{maps_};
  std::vector<std::string> recipe_table_errors_;
  CgroupNames* cgroups_ = nullptr;  // synthetic recipe requests: tenant = the process's cgroup
  RecipeIdentity identity_;         // ... or what probes.attrib.identity says
  core::RecipeRequests recipe_requests_;  // recipe spans of processes without the SDK
  std::vector<core::Record> grouped_;     // the requests it ended, not yet dispatched
  std::unique_ptr<core::StageAggregator> aggregator_;
  Observer observer_;
  pid_t only_pid_ = 0;
  bool layers_ = false;  // attach layer_begin/end (probes.attrib.layers)
  std::string only_binary_;
  std::set<uint32_t> pending_execs_, pending_exits_;
  uint64_t records_ = 0;
  uint64_t trace_salt_ = 0;  // per start: derived trace ids differ between daemon runs
  uint64_t malformed_ = 0;
  std::chrono::milliseconds release_grace_ = std::chrono::seconds(30);
  std::chrono::steady_clock::time_point last_scan_{}, last_gc_{}, last_recipe_scan_{};
};

std::unique_ptr<ProbeFamily> make_attrib_probe();

}  // namespace tailcause::probes
