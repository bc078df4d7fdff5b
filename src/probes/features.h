// SPDX-License-Identifier: Apache-2.0
// Kernel feature probing. Every check loads or creates the real thing rather than trusting
// `bpftool feature probe`, which misreports tracing programs on some kernels.
#pragma once

#include <memory>
#include <string>
#include <vector>

struct btf;

namespace tailcause::probes {

struct Feature {
  std::string name;
  bool available = false;
  std::string detail;  // why not, or what was found
};

// The parsed BTF, shared by every copy of a Features (the daemon's start-up keeps one, the probe
// set another): drop() frees it for all of them, so no forgotten copy keeps megabytes alive.
class SharedBtf {
 public:
  const ::btf* get() const { return slot_->get(); }
  std::shared_ptr<const ::btf> hold() const { return *slot_; }
  void set(std::shared_ptr<const ::btf> parsed) { *slot_ = std::move(parsed); }
  void drop() { slot_->reset(); }

 private:
  std::shared_ptr<std::shared_ptr<const ::btf>> slot_ =
      std::make_shared<std::shared_ptr<const ::btf>>();
};

struct Features {
  std::string btf_path;  // the BTF CO-RE relocates against
  bool btf = false;
  bool tp_btf = false;  // BTF tracepoints (preferred)
  bool raw_tp = false;  // raw tracepoints (fallback)
  bool ringbuf = false;
  bool task_storage = false;
  bool perf_event = false;      // software perf events with BPF (samplers)
  bool runqueues_ksym = false;  // per-CPU `runqueues` in BTF (run-queue length)
  bool kprobes = false;         // optional paths only
  bool fentry = false;          // optional paths only
  bool uprobe_multi = false;    // uprobe_multi links (USDT attach in one syscall per program)
  bool uprobe_multi_pid_filter = false;  // ... whose pid filter passes every thread (6.10+)
  std::vector<Feature> list;             // everything above, for `tailcause probes`
  // The BTF at btf_path, parsed once (several MB) and shared by the features probe and the
  // families' starts; the probe set drops it once its families are started (null then, or
  // when invalid).
  SharedBtf parsed_btf;
};

// `btf_path` empty means the running kernel's /sys/kernel/btf/vmlinux.
Features probe_features(const std::string& btf_path);

// Parses a BTF file; null (errno set) when it is not valid BTF.
std::shared_ptr<const ::btf> parse_btf(const std::string& path);

// The BTF a family's start reads: the shared parse, or (a family started on its own after a
// probe set dropped it) a parse of its own; null without valid BTF.
std::shared_ptr<const ::btf> start_btf(const Features& features);

}  // namespace tailcause::probes
