// SPDX-License-Identifier: Apache-2.0
// The daemon in-process with real probes: run() attaches the configured families and serves
// them; reloads re-apply families (a disabled one detaches, a changed one restarts, the others
// keep their programs), a bad configuration changes nothing; request_stop() detaches all.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "daemon/daemon.h"
#include "support.h"
#include "../unit/free_port.h"

namespace tailcause::testing {
namespace {

// sched and tcp only (quick to load), no sinks outside the test's directory.
std::string yaml(int port, bool tcp, const std::string& sched_extra = "") {
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nprobes:\n  sched: {enabled: true" +
         sched_extra + "}\n  tcp: {enabled: " + (tcp ? "true" : "false") +
         "}\n  throttle: {enabled: false}\n  memory: {enabled: false}\n  block: {enabled: false}\n"
         "  attrib: {enabled: false}\nbreaker: {socket: '', state_file: ''}\njournal: {path: ''}\n";
}

std::map<std::string, probes::FamilyStatus> statuses(daemon::Daemon& d) {
  std::map<std::string, probes::FamilyStatus> out;
  for (auto& s : d.probes().status()) out[s.name] = s;
  return out;
}

void reload_and_wait(daemon::Daemon& d) {
  const uint64_t want = d.reloads_handled() + 1;
  d.request_reload();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (d.reloads_handled() < want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(d.reloads_handled(), want) << "the run loop did not take the reload";
}

TEST(DaemonRun, ReloadReappliesFamiliesInTheRunningDaemon) {
  REQUIRE_ROOT();
  char tmpl[] = "/tmp/tailcause-daemon-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  daemon::StartOptions options;
  options.config_path = dir + "/config.yaml";
  const int port = free_port();
  auto write = [&](const std::string& text) { std::ofstream(options.config_path) << text; };
  write(yaml(port, true));

  daemon::Startup startup;
  startup.config = daemon::load_config(options);
  startup.features = host_features();
  startup.layout = host_layout();
  daemon::Daemon d(options, startup);
  int rc = -1;
  std::thread runner([&] { rc = d.run(); });
  ASSERT_TRUE(d.wait_running(std::chrono::seconds(60)));

  auto s1 = statuses(d);
  ASSERT_TRUE(s1["sched"].attached) << s1["sched"].error;
  ASSERT_TRUE(s1["tcp"].attached) << s1["tcp"].error;
  EXPECT_FALSE(s1["block"].attached);
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("tailcause_probe_attached{probe=\"tcp\"} 1"), std::string::npos);

  // tcp disabled: it detaches, sched keeps its programs (same generation).
  write(yaml(port, false));
  reload_and_wait(d);
  auto s2 = statuses(d);
  EXPECT_FALSE(s2["tcp"].attached);
  EXPECT_TRUE(s2["sched"].attached);
  EXPECT_EQ(s2["sched"].generation, s1["sched"].generation);
  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("tailcause_probe_attached{probe=\"tcp\"} 0"), std::string::npos);

  // A bad file: rejected, nothing restarted.
  write(yaml(port, true, ", bogus: 1"));
  reload_and_wait(d);
  auto s3 = statuses(d);
  EXPECT_FALSE(s3["tcp"].attached) << "a rejected reload re-enabled tcp";
  EXPECT_EQ(s3["sched"].generation, s1["sched"].generation);

  // A sched setting changed: sched alone restarts.
  write(yaml(port, false, ", runqlen_sparse_hz: 20"));
  reload_and_wait(d);
  auto s4 = statuses(d);
  EXPECT_TRUE(s4["sched"].attached) << s4["sched"].error;
  EXPECT_EQ(s4["sched"].generation, s1["sched"].generation + 1);
  EXPECT_EQ(d.config().sched.runqlen_sparse_hz, 20u);

  d.request_stop();
  runner.join();
  EXPECT_EQ(rc, 0);
  for (const auto& [name, s] : statuses(d)) EXPECT_FALSE(s.attached) << name << " still attached";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailcause::testing
