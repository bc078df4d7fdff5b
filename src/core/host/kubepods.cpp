// SPDX-License-Identifier: Apache-2.0
#include "core/host/kubepods.h"

#include <nlohmann/json.hpp>

namespace tailcause::core {
namespace {

bool is_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return !s.empty();
}

// A pod UID as the kubelet writes it: 36 characters, '-' (cgroupfs) or '_' (systemd) between
// lower-case hex groups of 8-4-4-4-12. Returned with '-'.
std::optional<std::string> pod_uid(std::string_view s) {
  if (s.size() != 36) return std::nullopt;
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    const bool sep = i == 8 || i == 13 || i == 18 || i == 23;
    if (sep) {
      if (out[i] != '-' && out[i] != '_') return std::nullopt;
      out[i] = '-';
    } else if (!is_hex(out.substr(i, 1))) {
      return std::nullopt;
    }
  }
  return out;
}

// A container id: 64 lower-case hex digits.
bool container_id(std::string_view s) { return s.size() == 64 && is_hex(s); }

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// The container of a systemd scope: "<runtime>-<id>.scope" for the runtimes the kubelet drives.
std::optional<std::string> scope_container(std::string_view s) {
  if (!s.ends_with(".scope")) return std::nullopt;
  s.remove_suffix(6);
  for (std::string_view prefix : {"cri-containerd-", "docker-", "crio-"}) {
    if (s.starts_with(prefix) && container_id(s.substr(prefix.size())))
      return std::string(s.substr(prefix.size()));
  }
  return std::nullopt;  // crio-conmon-<id>.scope and others: not a container
}

}  // namespace

std::optional<PodCgroup> parse_kubepods_path(std::string_view path) {
  const auto parts = split_path(path);
  for (size_t i = 0; i < parts.size(); ++i) {
    PodCgroup pc;
    size_t pod_at = 0;
    if (parts[i] == "kubepods.slice" || parts[i].ends_with("-kubepods.slice")) {
      // systemd: [kubepods-<qos>.slice/]kubepods[-<qos>]-pod<uid>.slice[/<runtime>-<id>.scope],
      // each slice named after its parent ("kubelet-kubepods.slice" on kind nodes).
      const std::string base(parts[i].substr(0, parts[i].size() - 6));
      size_t j = i + 1;
      pc.qos = "guaranteed";
      for (std::string_view q : {"burstable", "besteffort"}) {
        if (j < parts.size() && parts[j] == base + "-" + std::string(q) + ".slice") {
          pc.qos = std::string(q);
          ++j;
        }
      }
      if (j >= parts.size()) return std::nullopt;
      const std::string prefix =
          pc.qos == "guaranteed" ? base + "-pod" : base + "-" + pc.qos + "-pod";
      std::string_view pod = parts[j];
      if (!pod.starts_with(prefix) || !pod.ends_with(".slice")) return std::nullopt;
      pod = pod.substr(prefix.size(), pod.size() - prefix.size() - 6);
      auto uid = pod_uid(pod);
      if (!uid) return std::nullopt;
      pc.pod_uid = *uid;
      pod_at = j;
      if (pod_at + 1 < parts.size()) {
        if (auto id = scope_container(parts[pod_at + 1])) pc.container_id = *id;
      }
      return pc;
    }
    if (parts[i] == "kubepods") {
      // cgroupfs: [<qos>/]pod<uid>[/<id>]
      size_t j = i + 1;
      pc.qos = "guaranteed";
      if (j < parts.size() && (parts[j] == "burstable" || parts[j] == "besteffort")) {
        pc.qos = std::string(parts[j]);
        ++j;
      }
      if (j >= parts.size() || !parts[j].starts_with("pod")) return std::nullopt;
      auto uid = pod_uid(parts[j].substr(3));
      if (!uid) return std::nullopt;
      pc.pod_uid = *uid;
      if (j + 1 < parts.size()) {
        std::string_view c = parts[j + 1];
        for (std::string_view prefix : {"crio-", "docker-"}) {
          if (c.starts_with(prefix)) c.remove_prefix(prefix.size());
        }
        if (container_id(c)) pc.container_id = std::string(c);
      }
      return pc;
    }
  }
  return std::nullopt;
}

std::map<std::string, PodInfo> parse_pod_list(std::string_view json_text) {
  using nlohmann::json;
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    throw PodListError(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
    throw PodListError("not a PodList: no \"items\" array");
  }
  auto str = [](const json& o, const char* key) -> std::string {
    if (!o.is_object()) return {};
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::map<std::string, PodInfo> pods;
  for (const json& item : doc["items"]) {
    if (!item.is_object()) continue;
    const json meta = item.value("metadata", json::object());
    const std::string uid = str(meta, "uid");
    if (uid.empty()) continue;
    PodInfo& p = pods[uid];
    p.namespace_ = str(meta, "namespace");
    p.name = str(meta, "name");
    const json status = item.value("status", json::object());
    if (!status.is_object()) continue;
    for (const char* list :
         {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
      auto it = status.find(list);
      if (it == status.end() || !it->is_array()) continue;
      for (const json& c : *it) {
        std::string id = str(c, "containerID");
        const size_t scheme = id.find("://");
        if (scheme != std::string::npos) id = id.substr(scheme + 3);
        if (!id.empty()) p.containers[id] = str(c, "name");
      }
    }
  }
  return pods;
}

std::vector<std::pair<std::string, std::string>> pod_labels(
    std::string_view cgroup_path, const std::map<std::string, PodInfo>& pods) {
  const auto pc = parse_kubepods_path(cgroup_path);
  if (!pc) return {};
  std::vector<std::pair<std::string, std::string>> out;
  const auto it = pods.find(pc->pod_uid);
  if (it != pods.end()) {
    out.emplace_back("namespace", it->second.namespace_);
    out.emplace_back("pod", it->second.name);
    if (!pc->container_id.empty()) {
      const auto c = it->second.containers.find(pc->container_id);
      out.emplace_back("container", c != it->second.containers.end()
                                        ? c->second
                                        : pc->container_id.substr(0, 12));
    }
    return out;
  }
  out.emplace_back("pod", pc->pod_uid);
  if (!pc->container_id.empty()) out.emplace_back("container", pc->container_id.substr(0, 12));
  return out;
}

}  // namespace tailcause::core
