// SPDX-License-Identifier: Apache-2.0
// The daemon's glitch pipeline fed by the real attrib family: a stage of an SDK program that
// runs over its SLO becomes a glitch the run loop routes to the journal (its tenant, stage,
// cause and the agent's trace id), and the daemon's stop flushes it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/daemon.h"
#include "export/journal.h"
#include "support.h"
#include "../unit/free_port.h"

namespace tailcause::testing {
namespace {

const std::string kTarget = std::string(TAILCAUSE_BUILD_DIR) + "/testprogs/attrib_target";

TEST(DaemonPipeline, SlowStageOfARealAgentIsJournaled) {
  REQUIRE_ROOT();
  char tmpl[] = "/tmp/tailcause-daemon-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  daemon::StartOptions options;
  options.config_path = dir + "/config.yaml";
  options.binary = kTarget;  // only this test's target: other SDK programs may run meanwhile
  std::ofstream(options.config_path)
      << "listen: 127.0.0.1:" << free_port()
      << "\nprobes:\n  sched: {enabled: false}\n  throttle: {enabled: false}\n"
         "  tcp: {enabled: false}\n  memory: {enabled: false}\n  block: {enabled: false}\n"
         "glitch: {stage_slo_ms: 50}\nbreaker: {socket: '', state_file: ''}\njournal: {path: "
      << dir << "/journal.db}\n";

  daemon::Startup startup;
  startup.config = daemon::load_config(options);
  startup.features = host_features();
  startup.layout = host_layout();
  daemon::Daemon d(options, startup);
  std::thread runner([&] { d.run(); });
  ASSERT_TRUE(d.wait_running(std::chrono::seconds(60)));
  bool attrib = false;
  for (const auto& s : d.probes().status()) attrib = attrib || (s.name == "attrib" && s.attached);
  ASSERT_TRUE(attrib) << "attrib not attached";

  // 150 ms of CPU in one generation stage: three times its 50 ms SLO. The target waits until
  // the daemon's discovery has enabled its probes.
  const pid_t pid = fork();
  if (pid == 0) {
    execl(kTarget.c_str(), kTarget.c_str(), "cpu", "77", "tpipe", "150", nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "attrib_target status " << status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (d.pipeline().glitches() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  d.request_stop();
  runner.join();  // stop flushes what the journal thread had not written yet

  exporter::Journal journal(dir + "/journal.db", exporter::JournalLimits{});
  exporter::JournalFilter filter;
  filter.tenant = "tpipe";
  const auto rows = journal.query(filter);
  ASSERT_EQ(rows.size(), 1u) << "glitches seen: " << d.pipeline().glitches();
  EXPECT_EQ(rows[0].stage, "generation");
  EXPECT_EQ(rows[0].agent, "attrib-test");
  EXPECT_EQ(rows[0].cause, "on_cpu");
  EXPECT_GE(rows[0].wall_seconds, 0.15);
  EXPECT_EQ(rows[0].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(rows[0].verdict.rfind("over_slo 50 ms", 0), 0u) << rows[0].verdict;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tailcause::testing
