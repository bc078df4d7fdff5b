// SPDX-License-Identifier: Apache-2.0
// PodLabeler on a scrape: per-cgroup samples get namespace/pod/container from the path and the
// pod list file; other samples are left alone; a broken pod list keeps the last good one.
#include "export/pod_labels.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace tailcause::exporter {
namespace {

const std::string kUid = "0f5a9c1e-7d2b-4c8e-9a1f-3b6d2e4c5a7f";
const std::string kId(64, 'c');
const std::string kCgroup = "/kubepods/burstable/pod" + kUid + "/" + kId;

core::MetricSet scrape() {
  core::MetricSet set;
  set.add("tailcause_cpu_throttled_seconds", core::MetricType::Counter, "h", {{"cgroup", kCgroup}},
          1);
  set.add("tailcause_cpu_throttled_seconds", core::MetricType::Counter, "h",
          {{"cgroup", "/agents/ta"}}, 2);
  set.add("tailcause_requests", core::MetricType::Counter, "h", {{"tenant", "ta"}}, 3);
  return set;
}

TEST(PodLabeler, LabelsPerCgroupSeriesFromThePathAndThePodList) {
  testing::TempDir dir;
  const std::string list = dir.file("pods.json");
  std::ofstream(list) << R"({"items":[{"metadata":{"name":"rag-0","namespace":"agents","uid":")"
                      << kUid << R"("},"status":{"containerStatuses":[{"name":"rag",)"
                      << R"("containerID":"containerd://)" << kId << R"("}]}}]})";
  core::KubernetesSettings k;
  k.pod_list = list;
  PodLabeler labeler(k);
  auto set = scrape();
  labeler.apply(set);
  EXPECT_EQ(labeler.pods_known(), 1u);
  const auto& f = set.families();
  EXPECT_EQ(
      f[0].samples[0].labels,
      (core::Labels{
          {"cgroup", kCgroup}, {"namespace", "agents"}, {"pod", "rag-0"}, {"container", "rag"}}));
  EXPECT_EQ(f[0].samples[1].labels, (core::Labels{{"cgroup", "/agents/ta"}}));
  EXPECT_EQ(f[1].samples[0].labels, (core::Labels{{"tenant", "ta"}}));

  // Without a pod list: the uid and the short id.
  PodLabeler bare;
  auto plain = scrape();
  bare.apply(plain);
  EXPECT_EQ(plain.families()[0].samples[0].labels,
            (core::Labels{{"cgroup", kCgroup}, {"pod", kUid}, {"container", kId.substr(0, 12)}}));

  // Switched off.
  core::KubernetesSettings off;
  off.pod_labels = false;
  PodLabeler none(off);
  auto untouched = scrape();
  none.apply(untouched);
  EXPECT_EQ(untouched.families()[0].samples[0].labels, (core::Labels{{"cgroup", kCgroup}}));
}

// The kubelet's /pods over HTTP with the service account's bearer token (a local server here).
TEST(PodLabeler, ReadsThePodListFromAUrlWithABearerToken) {
  httplib::Server kubelet;
  std::string auth;
  kubelet.Get("/pods", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    if (auth != "Bearer sa-token") {
      res.status = 401;
      return;
    }
    res.set_content(
        R"({"items":[{"metadata":{"name":"rag-1","namespace":"ns","uid":")" + kUid + R"("}}]})",
        "application/json");
  });
  const int port = kubelet.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serve([&] { kubelet.listen_after_bind(); });
  testing::TempDir dir;
  std::ofstream(dir.file("token")) << "sa-token\n";
  core::KubernetesSettings k;
  k.pod_list = "http://127.0.0.1:" + std::to_string(port) + "/pods";
  k.token_file = dir.file("token");
  PodLabeler labeler(k);
  auto set = scrape();
  labeler.apply(set);
  EXPECT_EQ(auth, "Bearer sa-token");
  EXPECT_EQ(labeler.last_error(), "");
  EXPECT_EQ(set.families()[0].samples[0].labels[2],
            (std::pair<std::string, std::string>{"pod", "rag-1"}));

  std::ofstream(dir.file("token")) << "wrong";
  k.token_file = dir.file("token");
  k.insecure_skip_tls_verify = true;  // a different setting: read again
  labeler.configure(k);
  auto refused = scrape();
  labeler.apply(refused);
  EXPECT_NE(labeler.last_error().find("HTTP 401"), std::string::npos) << labeler.last_error();
  kubelet.stop();
  serve.join();
}

TEST(PodLabeler, ABrokenPodListIsReportedAndLabelsFallBackToIds) {
  testing::TempDir dir;
  core::KubernetesSettings k;
  k.pod_list = dir.file("missing.json");
  PodLabeler labeler(k);
  auto set = scrape();
  labeler.apply(set);
  EXPECT_NE(labeler.last_error().find("cannot be read"), std::string::npos);
  EXPECT_EQ(set.families()[0].samples[0].labels[1],
            (std::pair<std::string, std::string>{"pod", kUid}));

  std::ofstream(dir.file("bad.json")) << "{not json";
  k.pod_list = dir.file("bad.json");
  labeler.configure(k);
  auto again = scrape();
  labeler.apply(again);
  EXPECT_NE(labeler.last_error().find("not JSON"), std::string::npos);
  EXPECT_EQ(labeler.pods_known(), 0u);
}

}  // namespace
}  // namespace tailcause::exporter
