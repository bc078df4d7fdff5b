// SPDX-License-Identifier: Apache-2.0
#include "support.h"

#include <bpf/bpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "probes/memcg_pressure.h"

namespace fs = std::filesystem;

namespace tailcause::testing {
namespace {

void write_file(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + value + " to " + path);
}

}  // namespace

const probes::CgroupLayout& host_layout() {
  static const probes::CgroupLayout layout = probes::detect_cgroup_layout(core::CgroupConfig{});
  return layout;
}

const probes::Features& host_features() {
  static const probes::Features f = probes::probe_features("");
  return f;
}

TestCgroup::TestCgroup(const std::string& leaf) {
  const std::string parent = "/tailcause-test-" + std::to_string(getpid());
  name_ = parent + "/" + leaf;
  dir_ = host_layout().root + name_;
  fs::create_directories(dir_);
  if (host_layout().version == probes::CgroupLayout::Version::V2) {
    // Children of the parent need the cpu controller delegated to them.
    std::ofstream(host_layout().root + parent + "/cgroup.subtree_control") << "+cpu";
  }
}

MemoryCgroup::MemoryCgroup(const probes::CgroupLayout& layout, const std::string& leaf)
    : name_("/" + leaf + "-" + std::to_string(getpid())),
      dir_(layout.root + name_),
      v1_(layout.version == probes::CgroupLayout::Version::V1) {
  mkdir(dir_.c_str(), 0755);
}

MemoryCgroup::~MemoryCgroup() {
  for (int i = 0; i < 50 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool MemoryCgroup::limit(uint64_t bytes) {
  std::ofstream(dir_ + (v1_ ? "/memory.limit_in_bytes" : "/memory.max")) << bytes;
  return probes::read_memory_use(dir_).limit_bytes == bytes;
}

void MemoryCgroup::enter() { std::ofstream(dir_ + "/cgroup.procs") << getpid(); }

TestCgroup::~TestCgroup() {
  for (pid_t p : members_) stop_child(p);
  // A member's own children (the vfork test's) can outlive it for a moment, and a cgroup with
  // tasks cannot be removed: kill what is left and try again, for up to 2 s.
  std::error_code ec;
  for (int tries = 0; !fs::remove(dir_, ec) && ec && tries < 200; ++tries) {
    std::ifstream procs(dir_ + "/cgroup.procs");
    for (pid_t p; procs >> p;) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fs::remove(fs::path(dir_).parent_path(), ec);  // fails while siblings live: fine
}

void TestCgroup::set_cpu_quota(double cpus) {
  const long period = 100000;
  const long quota = std::lround(cpus * period);
  if (host_layout().version == probes::CgroupLayout::Version::V1) {
    write_file(dir_ + "/cpu.cfs_period_us", std::to_string(period));
    write_file(dir_ + "/cpu.cfs_quota_us", std::to_string(quota));
  } else {
    write_file(dir_ + "/cpu.max", std::to_string(quota) + " " + std::to_string(period));
  }
}

void TestCgroup::add(pid_t pid) {
  write_file(dir_ + "/cgroup.procs", std::to_string(pid));
  members_.push_back(pid);
}

pid_t spawn_child(const TestCgroup* cgroup, std::optional<int> cpu, std::function<void()> body) {
  int ready[2];
  if (pipe(ready) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    close(ready[1]);
    char c;
    // Wait until the parent has moved us into the cgroup, so all our work is accounted there.
    if (read(ready[0], &c, 1) != 1) _exit(1);
    if (cpu) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(*cpu, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    if (body) {
      body();
      _exit(0);
    }
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  close(ready[0]);
  if (cgroup) const_cast<TestCgroup*>(cgroup)->add(pid);
  if (write(ready[1], "g", 1) != 1) throw std::runtime_error("write");
  close(ready[1]);
  return pid;
}

void stop_child(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

const core::Sample* find_sample(const core::MetricSet& set, const std::string& name,
                                const core::Labels& want) {
  return set.find(name, want);
}

std::optional<double> sample_value(const core::MetricSet& set, const std::string& name,
                                   const core::Labels& want) {
  const core::Sample* s = set.find(name, want);
  if (!s) return std::nullopt;
  return s->value;
}

double value(const core::MetricSet& set, const std::string& name, const core::Labels& want) {
  if (auto v = sample_value(set, name, want)) return *v;
  std::string labels;
  for (const auto& [k, v] : want) labels += (labels.empty() ? "" : ",") + k + "=\"" + v + "\"";
  ADD_FAILURE() << "no series " << name << "{" << labels << "}";
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<core::Sample> samples_of(const core::MetricSet& set, const std::string& name) {
  for (const auto& f : set.families()) {
    if (f.name == name) return f.samples;
  }
  return {};
}

bpf_prog_info program_info(const bpf_program* prog) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  const int rc = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
  EXPECT_EQ(rc, 0) << "reading " << bpf_program__name(prog) << "'s info: " << strerror(errno);
  return rc == 0 ? info : bpf_prog_info{};
}

std::string disk_scratch_dir() {
  const std::string dir = std::string(TAILCAUSE_BUILD_DIR) + "/test-scratch";
  fs::create_directories(dir);
  return dir;
}

}  // namespace tailcause::testing
