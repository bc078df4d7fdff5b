// SPDX-License-Identifier: Apache-2.0
// Pod and container from kubepods cgroup paths (both kubelet cgroup drivers, every QoS class,
// containerd / docker / cri-o, v1 and v2 alike: the paths are the same below the hierarchy's
// root), the kubelet's pod list, and the labels they give a per-cgroup series.
#include "core/host/kubepods.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/config.h"

namespace tailcause::core {
namespace {

const std::string kUid = "0f5a9c1e-7d2b-4c8e-9a1f-3b6d2e4c5a7f";
const std::string kUidSd = "0f5a9c1e_7d2b_4c8e_9a1f_3b6d2e4c5a7f";  // as systemd slices spell it
const std::string kId = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b";

std::optional<PodCgroup> parse(const std::string& p) { return parse_kubepods_path(p); }

TEST(Kubepods, SystemdDriver) {
  const std::string burstable =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidSd + ".slice";
  EXPECT_EQ(parse(burstable + "/cri-containerd-" + kId + ".scope"),
            (PodCgroup{"burstable", kUid, kId}));
  EXPECT_EQ(parse(burstable + "/docker-" + kId + ".scope"), (PodCgroup{"burstable", kUid, kId}));
  EXPECT_EQ(parse(burstable + "/crio-" + kId + ".scope"), (PodCgroup{"burstable", kUid, kId}));
  EXPECT_EQ(parse(burstable), (PodCgroup{"burstable", kUid, ""}));  // the pod's own cgroup
  // cri-o's conmon scope is the pod's, not a container's.
  EXPECT_EQ(parse(burstable + "/crio-conmon-" + kId + ".scope"),
            (PodCgroup{"burstable", kUid, ""}));
  EXPECT_EQ(parse("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidSd +
                  ".slice/cri-containerd-" + kId + ".scope"),
            (PodCgroup{"besteffort", kUid, kId}));
  // Guaranteed pods sit directly under kubepods.slice.
  EXPECT_EQ(
      parse("/kubepods.slice/kubepods-pod" + kUidSd + ".slice/cri-containerd-" + kId + ".scope"),
      (PodCgroup{"guaranteed", kUid, kId}));
  // Nested (kind, a node in a container): kubepods below another cgroup, slices named after it.
  EXPECT_EQ(parse("/system.slice/docker-abc.scope/kubelet.slice/kubelet-kubepods.slice/"
                  "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" +
                  kUidSd + ".slice/cri-containerd-" + kId + ".scope"),
            (PodCgroup{"burstable", kUid, kId}));
}

TEST(Kubepods, CgroupfsDriver) {
  EXPECT_EQ(parse("/kubepods/burstable/pod" + kUid + "/" + kId),
            (PodCgroup{"burstable", kUid, kId}));
  EXPECT_EQ(parse("/kubepods/besteffort/pod" + kUid + "/" + kId),
            (PodCgroup{"besteffort", kUid, kId}));
  EXPECT_EQ(parse("/kubepods/pod" + kUid + "/" + kId), (PodCgroup{"guaranteed", kUid, kId}));
  EXPECT_EQ(parse("/kubepods/pod" + kUid), (PodCgroup{"guaranteed", kUid, ""}));
  EXPECT_EQ(parse("/kubepods/burstable/pod" + kUid + "/crio-" + kId),
            (PodCgroup{"burstable", kUid, kId}));
  EXPECT_EQ(parse("/docker/abc/kubepods/burstable/pod" + kUid + "/" + kId),
            (PodCgroup{"burstable", kUid, kId}));
  // Below the container (a nested cgroup of the container's own): still that container.
  EXPECT_EQ(parse("/kubepods/burstable/pod" + kUid + "/" + kId + "/worker"),
            (PodCgroup{"burstable", kUid, kId}));
}

TEST(Kubepods, NotAPod) {
  for (const std::string& p : std::vector<std::string>{
           std::string("/"),
           std::string(""),
           std::string("/system.slice/sshd.service"),
           std::string("/kubepods"),
           std::string("/kubepods/burstable"),
           std::string("/kubepods.slice"),
           std::string("/kubepods.slice/kubepods-burstable.slice"),
           "/kubepods/burstable/pod" + kUid.substr(1),                     // short uid
           "/kubepods/burstable/pod" + std::string(36, 'x'),               // not hex
           "/kubepods/burstable/pod0F5A9C1E-7D2B-4C8E-9A1F-3B6D2E4C5A7F",  // upper case
           "/kubepods/burstable/pod0f5a9c1e-7d2b-4c8e-9a1f+3b6d2e4c5a7f",  // separator
           "/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" + kUidSd + ".slice",
           "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidSd,
           "/agents/kubepods-burstable-pod" + kUidSd + ".slice",
       }) {
    EXPECT_FALSE(parse(p)) << p;
  }
  // A container id that is not 64 hex digits: the pod, no container.
  EXPECT_EQ(parse("/kubepods/pod" + kUid + "/" + kId.substr(1)),
            (PodCgroup{"guaranteed", kUid, ""}));
  EXPECT_EQ(parse("/kubepods.slice/kubepods-pod" + kUidSd + ".slice/cri-containerd-xyz.scope"),
            (PodCgroup{"guaranteed", kUid, ""}));
}

const std::string kPods = R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[
 {"metadata":{"name":"rag-7d9f","namespace":"agents","uid":")" +
                          kUid + R"("},
  "spec":{"containers":[{"name":"rag"}]},
  "status":{"phase":"Running",
   "initContainerStatuses":[{"name":"warm","containerID":"containerd://1111"}],
   "containerStatuses":[{"name":"rag","containerID":"containerd://)" +
                          kId + R"("},
                        {"name":"sidecar"}]}},
 {"metadata":{"name":"no-uid","namespace":"x"}},
 {"metadata":{"name":"pending","namespace":"y","uid":"u-2"},"status":{}},
 "not an object"
]})";

TEST(Kubepods, PodList) {
  const auto pods = parse_pod_list(kPods);
  ASSERT_EQ(pods.size(), 2u);
  const PodInfo& p = pods.at(kUid);
  EXPECT_EQ(p.namespace_, "agents");
  EXPECT_EQ(p.name, "rag-7d9f");
  EXPECT_EQ(p.containers.at(kId), "rag");
  EXPECT_EQ(p.containers.at("1111"), "warm");
  EXPECT_EQ(p.containers.size(), 2u);  // a status without containerID has no cgroup yet
  EXPECT_TRUE(pods.at("u-2").containers.empty());

  EXPECT_THROW(parse_pod_list("{"), PodListError);
  EXPECT_THROW(parse_pod_list("[]"), PodListError);
  EXPECT_THROW(parse_pod_list(R"({"items":{}})"), PodListError);
  EXPECT_TRUE(parse_pod_list(R"({"items":[]})").empty());
}

using L = std::vector<std::pair<std::string, std::string>>;

TEST(Kubepods, Labels) {
  const auto pods = parse_pod_list(kPods);
  const std::string c = "/kubepods/burstable/pod" + kUid + "/" + kId;
  EXPECT_EQ(pod_labels(c, pods),
            (L{{"namespace", "agents"}, {"pod", "rag-7d9f"}, {"container", "rag"}}));
  EXPECT_EQ(pod_labels("/kubepods/burstable/pod" + kUid, pods),
            (L{{"namespace", "agents"}, {"pod", "rag-7d9f"}}));
  // Without the pod list (or a pod not in it yet): the uid and the short container id.
  EXPECT_EQ(pod_labels(c, {}), (L{{"pod", kUid}, {"container", kId.substr(0, 12)}}));
  // A container the list does not know (restarted since): its short id.
  const std::string other(64, 'a');
  EXPECT_EQ(pod_labels("/kubepods/burstable/pod" + kUid + "/" + other, pods),
            (L{{"namespace", "agents"}, {"pod", "rag-7d9f"}, {"container", "aaaaaaaaaaaa"}}));
  EXPECT_TRUE(pod_labels("/agents/ta", pods).empty());
  EXPECT_TRUE(pod_labels("__other__", pods).empty());
}

}  // namespace
}  // namespace tailcause::core

// The configuration the Kubernetes manifests ship (their ConfigMap) is one the daemon accepts.
TEST(KubernetesManifests, TheConfigMapsConfigurationParses) {
  const std::string path =
      std::string(TAILCAUSE_SOURCE_DIR) + "/deploy/kubernetes/base/tailcause.yaml";
  const auto config = tailcause::core::load_config_file(path);
  EXPECT_EQ(config.kubernetes.pod_list, "https://127.0.0.1:10250/pods");
  EXPECT_TRUE(config.kubernetes.pod_labels);
  EXPECT_EQ(config.otlp.endpoint, "");  // left to the OTEL_* variables
}
