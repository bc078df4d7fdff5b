// SPDX-License-Identifier: Apache-2.0
#include "export/pod_labels.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tailcause::exporter {
namespace {

constexpr auto kRefresh = std::chrono::seconds(30);
constexpr auto kLogInterval = std::chrono::seconds(60);
constexpr size_t kMaxPodListBytes = 64 << 20;  // a node's pods: far below this

std::string read_small_file(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max) throw std::runtime_error(path + ": too large");
  }
  return text;
}

}  // namespace

PodLabeler::PodLabeler(core::KubernetesSettings settings) : settings_(std::move(settings)) {}

void PodLabeler::configure(core::KubernetesSettings settings) {
  std::lock_guard lock(mu_);
  if (settings == settings_) return;
  settings_ = std::move(settings);
  pods_.clear();
  cache_.clear();
  loaded_once_ = false;
  error_.clear();
}

size_t PodLabeler::pods_known() const {
  std::lock_guard lock(mu_);
  return pods_.size();
}

std::string PodLabeler::last_error() const {
  std::lock_guard lock(mu_);
  return error_;
}

std::string PodLabeler::fetch_locked() const {
  const std::string& where = settings_.pod_list;
  if (where.front() == '/') return read_small_file(where, kMaxPodListBytes);
  // http(s)://host[:port]/path, e.g. the kubelet's https://127.0.0.1:10250/pods.
  const size_t scheme_end = where.find("://") + 3;
  const size_t path_at = where.find('/', scheme_end);
  const std::string base = where.substr(0, path_at);
  const std::string path = path_at == std::string::npos ? "/" : where.substr(path_at);
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (where.starts_with("https://")) {
    throw std::runtime_error(where + ": this build's cpp-httplib has no TLS support");
  }
#endif
  httplib::Client client(base);
  if (!client.is_valid()) throw std::runtime_error(where + ": not a URL cpp-httplib can use");
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(5));
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!settings_.ca_file.empty()) client.set_ca_cert_path(settings_.ca_file);
  client.enable_server_certificate_verification(!settings_.insecure_skip_tls_verify);
#endif
  httplib::Headers headers;
  if (!settings_.token_file.empty()) {
    std::string token = read_small_file(settings_.token_file, 64 << 10);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    headers.emplace("Authorization", "Bearer " + token);
  }
  auto res = client.Get(path, headers);
  if (!res) throw std::runtime_error(where + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    throw std::runtime_error(where + ": HTTP " + std::to_string(res->status));
  }
  if (res->body.size() > kMaxPodListBytes) throw std::runtime_error(where + ": too large");
  return res->body;
}

void PodLabeler::refresh_locked() {
  const auto now = std::chrono::steady_clock::now();
  if (settings_.pod_list.empty() || (loaded_once_ && now - loaded_ < kRefresh)) return;
  loaded_ = now;
  loaded_once_ = true;
  try {
    pods_ = core::parse_pod_list(fetch_locked());
    error_.clear();
  } catch (const std::exception& e) {  // keep the last good list
    error_ = e.what();
    if (now - last_log_ >= kLogInterval) {
      last_log_ = now;
      spdlog::warn("kubernetes.pod_list: {}; pods are labelled by uid until it can be read",
                   error_);
    }
  }
  cache_.clear();
}

void PodLabeler::apply(core::MetricSet& set) {
  std::lock_guard lock(mu_);
  if (!settings_.pod_labels) return;
  refresh_locked();
  for (auto& family : set.families()) {
    for (auto& sample : family.samples) {
      const std::string* cgroup = nullptr;
      bool labelled = false;
      for (const auto& [k, v] : sample.labels) {
        if (k == "cgroup") cgroup = &v;
        labelled = labelled || k == "namespace" || k == "pod" || k == "container";
      }
      if (!cgroup || labelled) continue;
      auto it = cache_.find(*cgroup);
      if (it == cache_.end()) {
        if (cache_.size() > 100000) cache_.clear();  // bounded whatever the cgroup labels
        it = cache_.emplace(*cgroup, core::pod_labels(*cgroup, pods_)).first;
      }
      sample.labels.insert(sample.labels.end(), it->second.begin(), it->second.end());
    }
  }
}

}  // namespace tailcause::exporter
