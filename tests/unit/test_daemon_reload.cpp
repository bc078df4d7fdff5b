// SPDX-License-Identifier: Apache-2.0
// The daemon object without probes (every family disabled, so no root is needed): reloads
// re-read the file given at start, reject a bad one and keep the running configuration,
// refuse a new listen address, re-apply glitch settings; run() serves /metrics on its thread
// and ends on request_stop(), releasing the port.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "daemon/daemon.h"
#include "probes/cgroup_names.h"
#include "stage_builder.h"
#include "temp_dir.h"
#include "free_port.h"

namespace tailcause::daemon {
namespace {

using testing::free_port;

constexpr uint64_t ms = 1'000'000;

// No probes, no sinks outside the test's directory.
std::string yaml(int port, const std::string& extra = "") {
  return "listen: 127.0.0.1:" + std::to_string(port) +
         "\nprobes: {sched: {enabled: false}, throttle: {enabled: false}, tcp: {enabled: false}, "
         "memory: {enabled: false}, block: {enabled: false}, attrib: {enabled: false}}\n"
         "breaker: {socket: '', state_file: ''}\njournal: {path: ''}\n" +
         extra;
}

struct Fixture {
  testing::TempDir dir;
  StartOptions options;
  int port = free_port();

  Fixture() {
    options.config_path = dir.file("config.yaml");
    write(yaml(port));
  }
  void write(const std::string& text) const { std::ofstream(options.config_path) << text; }
  std::unique_ptr<Daemon> make() const {
    Startup s;
    s.config = load_config(options);
    s.layout = probes::detect_cgroup_layout(s.config.cgroup);
    return std::make_unique<Daemon>(options, s);
  }
};

core::StageRecord slow_stage(uint64_t wall_ms) {
  return testing::StageBuilder()
      .request(1)
      .pid(7)
      .tenant("ta")
      .agent("rag")
      .stage(core::StageKind::generation)
      .start_ns(1'000'000'000)
      .component(core::Component::on_cpu, wall_ms * ms)
      .build();
}

TEST(DaemonReload, ABadConfigurationIsRejectedAndTheRunningOneKept) {
  Fixture f;
  f.write(yaml(f.port, "top_k: 7\n"));
  auto d = f.make();
  f.write(yaml(f.port, "top_k: 9\nglitch: {frobnicate: 1}\n"));
  const ReloadResult r = d->reload();
  EXPECT_FALSE(r.applied);
  EXPECT_NE(r.error.find("config.yaml:6: glitch.frobnicate: unknown key"), std::string::npos)
      << r.error;
  EXPECT_EQ(d->config().top_k, 7u);

  std::filesystem::remove(f.options.config_path);
  EXPECT_FALSE(d->reload().applied) << "a vanished file is a rejected reload too";
  EXPECT_EQ(d->config().top_k, 7u);
}

TEST(DaemonReload, ANewListenAddressIsRefusedTheRestApplied) {
  Fixture f;
  auto d = f.make();
  const int other = free_port();
  f.write(yaml(other, "top_k: 12\n"));
  const ReloadResult r = d->reload();
  EXPECT_TRUE(r.applied);
  EXPECT_TRUE(r.listen_kept);
  EXPECT_EQ(d->config().listen, "127.0.0.1:" + std::to_string(f.port));
  EXPECT_EQ(d->config().top_k, 12u);
  EXPECT_EQ(d->port(), f.port);
}

TEST(DaemonReload, ANewUiWindowIsRefusedTheRestApplied) {
  Fixture f;
  auto d = f.make();
  f.write(yaml(f.port, "top_k: 13\nui: {tick_s: 5, history_s: 3600}\n"));
  const ReloadResult r = d->reload();
  EXPECT_TRUE(r.applied);
  EXPECT_TRUE(r.ui_kept);
  EXPECT_EQ(d->config().ui, core::UiSettings{});
  EXPECT_EQ(d->config().top_k, 13u);
}

TEST(DaemonReload, FlagsOverrideTheFileAgainOnReload) {
  Fixture f;
  f.options.pid = 4321;
  auto d = f.make();
  f.write(yaml(f.port, "top_k: 3\n"));
  ASSERT_TRUE(d->reload().applied);
  EXPECT_EQ(d->config().attrib.pid, 4321u);
  EXPECT_EQ(d->config().top_k, 3u);
}

TEST(DaemonReload, GlitchSettingsAreReappliedToThePipeline) {
  Fixture f;
  auto d = f.make();
  d->pipeline().observe(slow_stage(300));
  EXPECT_EQ(d->pipeline().glitches(), 1u) << "over the default 200 ms stage SLO";

  f.write(yaml(f.port, "glitch: {stage_slo_ms: 1000}\n"));
  ASSERT_TRUE(d->reload().applied);
  EXPECT_EQ(d->config().glitch.stage_slo_ms, 1000u);
  const uint64_t before = d->pipeline().glitches();
  d->pipeline().observe(slow_stage(300));
  EXPECT_EQ(d->pipeline().glitches(), before) << "300 ms is within the reloaded 1 s SLO";
}

TEST(DaemonReload, TakenListenAddressIsAStartupError) {
  Fixture f;
  // Held by a plain socket (no SO_REUSEPORT), like another program on the port.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(f.port));
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  try {
    auto d = f.make();
    FAIL() << "the daemon bound a taken address";
  } catch (const StartupError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(f.port)),
              std::string::npos)
        << e.what();
  }
  ::close(holder);
}

TEST(DaemonRun, ServesReloadsOnRequestAndStops) {
  Fixture f;
  auto d = f.make();
  int rc = -1;
  std::thread runner([&] { rc = d->run(); });
  ASSERT_TRUE(d->wait_running(std::chrono::seconds(30)));

  httplib::Client client("127.0.0.1", f.port);
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("tailcause_probe_attached{probe=\"sched\"} 0"), std::string::npos)
      << res->body;

  f.write(yaml(f.port, "top_k: 21\n"));
  d->request_reload();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (d->reloads_handled() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(d->reloads_handled(), 1u);
  EXPECT_EQ(d->config().top_k, 21u);

  d->request_stop();
  runner.join();
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(client.Get("/metrics")) << "still serving after stop";
}

TEST(DaemonRun, AStopRequestedBeforeRunEndsItAtOnce) {
  Fixture f;
  auto d = f.make();
  d->request_stop();
  EXPECT_EQ(d->run(), 0);
  EXPECT_THROW(d->run(), std::logic_error);
}

}  // namespace
}  // namespace tailcause::daemon
