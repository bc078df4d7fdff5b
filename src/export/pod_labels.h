// SPDX-License-Identifier: Apache-2.0
// Adds namespace, pod and container labels to every per-cgroup series of a scrape (every sample
// with a `cgroup` label naming a kubepods cgroup), from the path (core/host/kubepods.h) and, when
// kubernetes.pod_list names one, the kubelet's pod list, read again every 30 s at most. A pod
// list that cannot be read or parsed keeps the last good one and is logged (once a minute); the
// series keep their uid/id labels meanwhile. The labels are a function of the cgroup label, so
// they add no series. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/host/kubepods.h"
#include "core/record/metrics.h"

namespace tailcause::exporter {

class PodLabeler {
 public:
  explicit PodLabeler(core::KubernetesSettings settings = {});
  void configure(core::KubernetesSettings settings);  // on reload
  void apply(core::MetricSet& set);

  // What the last read of the pod list gave: pods known, and its error ("" when it was read).
  size_t pods_known() const;
  std::string last_error() const;

 private:
  void refresh_locked();
  std::string fetch_locked() const;  // the pod list's text; throws std::runtime_error

  mutable std::mutex mu_;
  core::KubernetesSettings settings_;
  std::map<std::string, core::PodInfo> pods_;
  std::map<std::string, core::Labels> cache_;  // cgroup label value -> labels to add
  std::chrono::steady_clock::time_point loaded_{}, last_log_{};
  bool loaded_once_ = false;
  std::string error_;
};

}  // namespace tailcause::exporter
