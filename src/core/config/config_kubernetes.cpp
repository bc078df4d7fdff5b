// SPDX-License-Identifier: Apache-2.0
// The kubernetes: section of the configuration: pod labels from kubepods cgroup paths, and
// where the kubelet's pod list (for names) is read.
#include "core/config/config.h"
#include "core/config/config_reader.h"

namespace tailcause::core {
namespace {

// A file, an http(s):// URL or "" (uids and ids only).
std::string parse_pod_list(const Reader& r, const YAML::Node& v, const std::string& key) {
  std::string pod_list = r.string(v, key);
  const bool url = pod_list.starts_with("http://") || pod_list.starts_with("https://");
  if (!pod_list.empty() && !url && pod_list.front() != '/') {
    r.fail(v, key, "expected an absolute path, an http(s):// URL or \"\"");
  }
  return pod_list;
}

}  // namespace

void kubernetes_section(Reader& r, const YAML::Node& n, const std::string& k,
                        KubernetesSettings& kc) {
  r.mapping(n, k,
            {{"pod_labels", flag_handler(r, kc.pod_labels)},
             {"pod_list", [&](const YAML::Node& v,
                              const std::string& kk) { kc.pod_list = parse_pod_list(r, v, kk); }},
             {"token_file", [&](const YAML::Node& v,
                                const std::string& kk) { kc.token_file = r.path_or_empty(v, kk); }},
             {"ca_file", [&](const YAML::Node& v,
                             const std::string& kk) { kc.ca_file = r.path_or_empty(v, kk); }},
             {"insecure_skip_tls_verify", flag_handler(r, kc.insecure_skip_tls_verify)}});
}

}  // namespace tailcause::core
