// Kernel feature probing. Every check loads or creates the real thing rather than trusting
// `bpftool feature probe`, which misreports tracing programs on some kernels.
#pragma once

#include <string>
#include <vector>

namespace tailcause::probes {

struct Feature {
  std::string name;
  bool available = false;
  std::string detail;  // why not, or what was found
};

struct Features {
  std::string btf_path;  // the BTF CO-RE relocates against
  bool btf = false;
  bool tp_btf = false;          // BTF tracepoints (preferred)
  bool raw_tp = false;          // raw tracepoints (fallback)
  bool ringbuf = false;
  bool task_storage = false;
  bool perf_event = false;      // software perf events with BPF (samplers)
  bool runqueues_ksym = false;  // per-CPU `runqueues` in BTF (run-queue length)
  bool kprobes = false;         // optional paths only
  bool fentry = false;          // optional paths only
  std::vector<Feature> list;    // everything above, for `tailcause probes`
};

// `btf_path` empty means the running kernel's /sys/kernel/btf/vmlinux.
Features probe_features(const std::string& btf_path);

}  // namespace tailcause::probes
