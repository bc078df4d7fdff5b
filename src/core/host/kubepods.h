// SPDX-License-Identifier: Apache-2.0
// Kubernetes pods behind cgroup paths: the kubelet names a pod's cgroup after its QoS class and
// UID and the container runtime names each container's cgroup after the container id, so a
// cgroup path says which pod and container it is, and the kubelet's pod list (/pods JSON) turns
// those ids into namespace, pod and container names. Pure: no I/O.
//
// The kubelet's two cgroup drivers, on cgroup v1 and v2 alike:
//   systemd:  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
//             cri-containerd-<id>.scope   (also docker-<id>.scope, crio-<id>.scope; the uid's
//             '-' written '_'; Guaranteed pods sit directly under kubepods.slice)
//   cgroupfs: /kubepods/burstable/pod<uid>/<id>   (Guaranteed: /kubepods/pod<uid>/<id>)
// anywhere in the path (kind and nested nodes put kubepods under another cgroup).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tailcause::core {

struct PodCgroup {
  std::string qos;           // guaranteed | burstable | besteffort
  std::string pod_uid;       // 8-4-4-4-12 lower-case hex, with '-'
  std::string container_id;  // 64 hex digits (containerd, docker, cri-o); empty: the pod's own
                             // cgroup (or its pause/conmon sandbox)
  bool operator==(const PodCgroup&) const = default;
};

// The pod (and container) a cgroup path belongs to; nullopt when it is not a kubepods path.
std::optional<PodCgroup> parse_kubepods_path(std::string_view path);

struct PodInfo {
  std::string namespace_, name;
  std::map<std::string, std::string> containers;  // container id (hex) -> container name
};

struct PodListError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The kubelet's /pods answer (a v1 PodList): pod uid -> namespace, name and the containers of
// its status (containerStatuses, initContainerStatuses, ephemeralContainerStatuses; the
// "containerd://" or "docker://" or "cri-o://" prefix of containerID dropped). Items without a
// uid are skipped. Throws PodListError on text that is not a PodList.
std::map<std::string, PodInfo> parse_pod_list(std::string_view json_text);

// The labels a per-cgroup series gets: namespace, pod, container. From the pod list when the
// pod is in it; else pod = the pod's uid and container = the first 12 digits of its id (the
// namespace unknown, left out). Empty for a path that is not a pod's.
std::vector<std::pair<std::string, std::string>> pod_labels(
    std::string_view cgroup_path, const std::map<std::string, PodInfo>& pods);

}  // namespace tailcause::core
