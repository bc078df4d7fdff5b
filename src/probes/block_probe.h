// SPDX-License-Identifier: Apache-2.0
// Block probe family: block request latency (issue to completion) and bytes per whole disk and
// operation (bpf/block.bpf.c), with disks named as in /dev ("vda", "nvme0n1"); and, for the
// verdicts' evidence, each issuing cgroup's request time per disk.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <linux/types.h>

#include "bpf/block.h"
#include "probes/handles.h"
#include "probes/probe_family.h"

struct block_bpf;

namespace tailcause::probes {

TAILCAUSE_SKELETON_HANDLE(block_bpf);

// The kernel name of the disk major:minor from /sys/dev/block/MAJ:MIN/uevent (DEVNAME), or
// empty when the device is unknown.
std::string block_device_name(uint32_t major, uint32_t minor);

class BlockProbe final : public ProbeFamily {
 public:
  BlockProbe();
  ~BlockProbe() override;

  const char* name() const override { return "block"; }
  void start(const ProbeContext& ctx) override;
  void stop() override;
  void tick(const ProbeContext& ctx) override;
  void collect(core::MetricSet& out) override;
  std::vector<const bpf_program*> programs() const override;
  uint64_t folded_label_values() const override;

 private:
  struct Series;  // label budget and folded series, reset on each start()
  using Device = std::pair<uint32_t, uint32_t>;  // (major, first minor)

  std::string device_label(const Device& dev);
  void forget_removed_devices();

  Handle<block_bpf> skel_;
  std::unique_ptr<Series> series_;
  std::map<Device, std::string> names_;  // cached: sysfs is read once per disk
  std::chrono::steady_clock::time_point last_gc_{};
  CgroupNames* cgroups_ = nullptr;
  // Each (cgroup id, major, minor)'s totals at the previous reading, for the deltas.
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, block_cgroup_value> cgroup_io_;
  std::chrono::steady_clock::time_point last_cgroup_read_{};
};

std::unique_ptr<ProbeFamily> make_block_probe();

}  // namespace tailcause::probes
