// SPDX-License-Identifier: Apache-2.0
// Fixture of the attribution family's root tests: runs tests/testprogs/attrib_target while the
// family consumes, keeps the records of the targets it started, and checks on every test that
// each stage's components add up to its wall time. ATTRIB_VERBOSE=1 prints every stage record.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/attrib.h"
#include "export/exposition.h"
#include "probes/attrib_probe.h"
#include "support.h"

namespace tailcause::testing {

using namespace std::chrono_literals;
using core::Component;
using core::StageRecord;

inline const std::string kTarget = std::string(TAILCAUSE_BUILD_DIR) + "/testprogs/attrib_target";

inline double seconds(uint64_t ns) { return ns * 1e-9; }

// A file of `bytes` pseudo-random bytes (incompressible), flushed to the disk.
inline void write_random_file(const std::string& path, size_t bytes, uint64_t seed) {
  std::vector<char> data(bytes);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) *reinterpret_cast<uint64_t*>(&data[i]) = rng();
  std::ofstream(path, std::ios::binary).write(data.data(), data.size());
  const int fd = open(path.c_str(), O_RDONLY);
  fdatasync(fd);
  close(fd);
}

// Why a test that moves single threads into a quota'd cgroup (and, with `cpus` 2, between two
// CPUs) cannot run here, or "" when it can.
inline std::string why_no_thread_cgroups(long cpus) {
  if (host_layout().version != probes::CgroupLayout::Version::V1) {
    return "moves single threads between cgroups: needs the v1 cpu controller";
  }
  return sysconf(_SC_NPROCESSORS_ONLN) < cpus ? "needs two CPUs" : "";
}

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
inline uint64_t part(const StageRecord& r, Component c) {
  return r.component_ns[static_cast<size_t>(c)];
}

inline std::string describe(const StageRecord& r) {
  std::string s = "stage " + r.stage + " of " + r.id.tenant + " wall " +
                  std::to_string(seconds(r.wall_ns())) + " s:";
  for (size_t c = 0; c < core::kComponents; ++c) {
    s += " " + std::string(core::kComponentNames[c]) + "=" +
         std::to_string(seconds(r.component_ns[c]));
  }
  return s + " pcm=" + std::to_string(r.page_cache_misses) + " flags=" + std::to_string(r.flags);
}

class AttribTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    // Only the test target: discovery would also enable the probes of other SDK programs
    // running on the machine (other tests). The discovery test clears this.
    config.attrib.binary = kTarget;
    config.attrib.layers = true;  // the signals test checks the layer x batch heatmap
    probe = std::make_unique<probes::AttribProbe>();
    // Only this test's targets count: other SDK programs may run on the machine meanwhile.
    probe->set_observer([this](const core::Record& r) {
      auto* s = std::get_if<StageRecord>(&r);
      if (s && targets.count(s->id.pid)) stages.push_back(*s);
      auto* q = std::get_if<core::RequestRecord>(&r);
      if (q && targets.count(q->id.pid)) requests.push_back(*q);
    });
  }
  void TearDown() override {
    if (probe) {
      // (5) Every stage's components add up to its wall time, whatever the test did.
      const bool verbose = getenv("ATTRIB_VERBOSE") != nullptr;
      for (const auto& r : stages) {
        if (verbose) std::cout << "[ record   ] " << describe(r) << "\n";
        const double wall = static_cast<double>(r.wall_ns());
        EXPECT_NEAR(static_cast<double>(r.measured_ns()), wall, 0.02 * wall + 2000) << describe(r);
      }
      probe->stop();
    }
  }

  // Starts attrib_target with `args` (inside `cgroup` if given: it execs only once moved
  // there) and counts it as this test's; its stdout goes to `out_fd` when given.
  pid_t spawn_target(const std::vector<std::string>& args, TestCgroup* cgroup = nullptr,
                     int out_fd = -1) {
    int go[2];
    if (pipe(go) != 0) throw std::runtime_error("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(1);  // moved into the cgroup first
      if (out_fd >= 0) dup2(out_fd, 1);
      std::vector<char*> argv{const_cast<char*>(kTarget.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(kTarget.c_str(), argv.data());
      _exit(127);
    }
    close(go[0]);
    targets.insert(pid);
    if (cgroup) cgroup->add(pid);
    if (write(go[1], "g", 1) != 1) throw std::runtime_error("write");
    close(go[1]);
    return pid;
  }

  // Waits up to 10 s for a target that spawn_target started to exit, ticking the family
  // meanwhile, then drains what is left; returns its wait status.
  int reap_target(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
      probe->tick(ctx);
      std::this_thread::sleep_for(10ms);
    }
    probe->consume();
    return status;
  }

  // Runs attrib_target (inside `cgroup` if given) to completion while the family consumes;
  // returns what it printed.
  std::string run_target(const std::vector<std::string>& args, TestCgroup* cgroup = nullptr,
                         std::chrono::seconds timeout = 60s) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    const pid_t pid = spawn_target(args, cgroup, out[1]);
    close(out[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    std::string printed;
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto read_out = [&] {
      char buf[4096];
      for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) printed.append(buf, n);
    };
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << "attrib_target timed out";
        break;
      }
      // As the daemon's collector does: wait up to 10 ms for the ring buffer's wake-up, then
      // drain and tick.
      pollfd ring{probe->event_fd(), POLLIN, 0};
      if (ring.fd < 0 || poll(&ring, 1, 10) < 0) std::this_thread::sleep_for(10ms);
      const double cpu_before = thread_cpu_seconds();
      probe->tick(ctx);
      consume_cpu += thread_cpu_seconds() - cpu_before;
      read_out();
    }
    read_out();
    close(out[0]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "attrib_target " << args[0] << " status " << status << ": " << printed;
    probe->consume();
    return printed;
  }

  std::vector<StageRecord> stages_of(uint64_t request_id) const {
    std::vector<StageRecord> out;
    for (const auto& s : stages) {
      if (s.id.request_id == request_id) out.push_back(s);
    }
    return out;
  }
  // The one non-worker stage record of a request.
  StageRecord only_stage(uint64_t request_id) const {
    StageRecord found;
    int n = 0;
    for (const auto& s : stages_of(request_id)) {
      if (!s.worker()) {
        found = s;
        ++n;
      }
    }
    EXPECT_EQ(n, 1) << "stage records of request " << request_id;
    return found;
  }
  core::MetricSet scrape() {
    core::MetricSet m;
    probe->collect(m);
    return m;
  }

  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  std::unique_ptr<probes::AttribProbe> probe;
  std::vector<StageRecord> stages;
  std::vector<core::RequestRecord> requests;
  double consume_cpu = 0;      // CPU seconds this thread spent in tick() (draining, aggregating)
  std::set<uint32_t> targets;  // pids of the target processes this test started
};

}  // namespace tailcause::testing
