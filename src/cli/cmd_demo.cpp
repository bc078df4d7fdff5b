// SPDX-License-Identifier: Apache-2.0
// `tailcause demo --fault quota`: the first thing a newcomer runs. Attaches the probes and the
// analysis like `diagnose`, runs the example agent (two tenants, ta and tb, the fault on ta) for
// a short while with a progress indicator, then prints the diagnosis headed by one sentence:
// which tenant and stage glitched most, and why.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/config/duration.h"
#include "daemon/collection.h"
#include "daemon/signals.h"

namespace tailcause::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kAgentName = "rag-agent";
constexpr double kAgentRate = 5;         // requests per second per tenant
constexpr int kTermGraceSeconds = 10;    // after SIGTERM, before SIGKILL
constexpr double kOverrunSeconds = 120;  // index preparation and shutdown, beyond --duration

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// Next to this executable (the build tree: build/tailcause, build/examples/rag-agent), then in
// PATH.
std::optional<fs::path> find_agent(std::vector<std::string>& looked) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = self.parent_path();
    for (const fs::path& p :
         {dir / "examples" / kAgentName, dir / ".." / "examples" / kAgentName, dir / kAgentName}) {
      looked.push_back(p.lexically_normal().string());
      if (executable(p)) return fs::canonical(p, ec);
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string dir = dirs.substr(start, end - start);
      if (!dir.empty() && executable(fs::path(dir) / kAgentName))
        return fs::canonical(fs::path(dir) / kAgentName, ec);
      start = end + 1;
    }
    looked.push_back("PATH");
  }
  return std::nullopt;
}

// The agent runs in its own process group (a terminal's Ctrl-C reaches only us, and we stop it
// once, cleanly) and gets SIGTERM if we die. Its output goes to an anonymous file, shown when
// it fails.
class AgentProcess {
 public:
  AgentProcess(const fs::path& binary, const std::vector<std::string>& args) {
    log_fd_ = ::memfd_create("rag-agent-log", MFD_CLOEXEC);
    if (log_fd_ < 0)
      throw daemon::StartupError(fmt::format("memfd_create: {}", std::strerror(errno)));
    std::vector<std::string> argv_s{binary.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw daemon::StartupError(fmt::format("fork: {}", std::strerror(errno)));
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(log_fd_, STDOUT_FILENO);
      ::dup2(log_fd_, STDERR_FILENO);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGPIPE, SIG_DFL);
      ::execv(argv[0], argv.data());
      static const char kExecFailed[] = "tailcause demo: cannot execute the agent\n";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // also here: no race with the child's own call
  }

  ~AgentProcess() {
    if (running()) {
      stop();
      wait_for(std::chrono::seconds(kTermGraceSeconds));
    }
    if (running()) kill_now();
    if (log_fd_ >= 0) ::close(log_fd_);
  }

  bool running() {
    if (exited_) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) exited_ = true, status_ = status;
    return !exited_;
  }
  // SIGTERM: the agent stops its tenants early, removes its cgroups and exits. When it has not
  // within the grace period, SIGKILL.
  void stop() {
    if (!stop_sent_ && running()) {
      ::kill(pid_, SIGTERM);
      stop_sent_at_ = Clock::now();
    }
    stop_sent_ = true;
    if (Clock::now() - stop_sent_at_ > std::chrono::seconds(kTermGraceSeconds)) kill_now();
  }
  bool wait_for(Clock::duration limit) {
    const auto deadline = Clock::now() + limit;
    while (running() && Clock::now() < deadline) ::usleep(50'000);
    return !running();
  }
  // The agent's children die with it (PR_SET_PDEATHSIG); its cgroups are removed by its next run.
  void kill_now() {
    if (!running()) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
    status_ = status;
  }

  pid_t pid() const { return pid_; }
  bool succeeded() const { return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }
  bool stopped_by_us() const { return stop_sent_; }
  std::string describe_exit() const {
    if (WIFEXITED(status_)) return fmt::format("exited with status {}", WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) return fmt::format("was killed by signal {}", WTERMSIG(status_));
    return "ended";
  }
  // The last `lines` lines of the agent's output.
  std::string log_tail(size_t lines) const {
    std::string text;
    char buf[65536];
    ssize_t n;
    off_t off = 0;
    while ((n = ::pread(log_fd_, buf, sizeof buf, off)) > 0)
      text.append(buf, static_cast<size_t>(n)), off += n;
    size_t pos = text.size();
    for (size_t i = 0; i <= lines && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
    return pos == std::string::npos ? text : text.substr(pos + 1);
  }

 private:
  pid_t pid_ = -1;
  int log_fd_ = -1;
  bool exited_ = false, stop_sent_ = false;
  Clock::time_point stop_sent_at_{};
  int status_ = 0;
};

// --agent, or the example agent found next to this executable or in PATH.
fs::path locate_agent(const DemoOptions& o) {
  if (!o.agent.empty()) return fs::absolute(o.agent);  // validated: an executable file
  std::vector<std::string> looked;
  auto found = find_agent(looked);
  if (!found) {
    throw daemon::StartupError(
        fmt::format("cannot find the example agent {} (looked in {}); build it with "
                    "`cmake --build build --target rag-agent` or pass --agent PATH",
                    kAgentName, fmt::join(looked, ", ")));
  }
  return *found;
}

// Two tenants, ta and tb, for `seconds`; the fault (if any) on ta.
std::vector<std::string> agent_args(const DemoOptions& o, double seconds) {
  std::vector<std::string> args{
      "--tenants",     "ta,tb", "--rate",     fmt::format("{}", kAgentRate),
      "--concurrency", "2",     "--duration", fmt::format("{}", seconds)};
  if (o.fault != "none") args.insert(args.end(), {"--fault", o.fault + ":ta"});
  return args;
}

// Collects while the agent runs; stops it on Ctrl-C or once it overran --duration by
// kOverrunSeconds. Returns whether it overran.
bool collect_while_running(AgentProcess& process, daemon::Collection& collection,
                           Progress& progress, const daemon::RunFlags& flags, double seconds) {
  bool overran = false;
  double next_checkpoint = 1.0;
  while (process.running()) {
    if (flags.stop) process.stop();
    if (collection.elapsed_seconds() > seconds + kOverrunSeconds) {
      if (!overran)
        spdlog::error("demo: the agent overran --duration by {:.0f} s: stopping it",
                      kOverrunSeconds);
      overran = true;
      process.stop();
    }
    collection.poll(100);
    const uint64_t g = collection.glitches();
    const double elapsed = collection.elapsed_seconds();
    if (elapsed >= next_checkpoint) {  // the agent's cgroups go when it exits
      collection.checkpoint();
      next_checkpoint = elapsed + 1.0;
    }
    progress.update(elapsed,
                    fmt::format("{}{} glitch{}", elapsed > seconds ? "agent finishing, " : "", g,
                                g == 1 ? "" : "es"));
  }
  return overran;
}

// The diagnosis on stdout: the headline and tables, or JSON with what the demo ran.
void print_report(const DemoOptions& o, const core::Diagnosis& d, const AgentProcess& process,
                  const fs::path& agent, double seconds) {
  if (!o.json) {
    fmt::print("{}\n\n{}", core::diagnosis_headline(d), core::render_diagnosis_text(d));
    return;
  }
  auto j = core::diagnosis_json(d);
  j["demo"] = {{"fault", o.fault},
               {"fault_tenant", o.fault == "none" ? nlohmann::json(nullptr) : nlohmann::json("ta")},
               {"tenants", {"ta", "tb"}},
               {"duration_seconds", seconds},
               {"agent", agent.string()},
               {"agent_pid", process.pid()},
               {"agent_exit", process.describe_exit()},
               {"interrupted", process.stopped_by_us()}};
  fmt::print("{}\n", j.dump(2));
}

}  // namespace

int run_demo(const CommonOptions& common, const DemoOptions& o) {
  const uint64_t duration_ns = core::parse_duration_ns(o.duration);  // validated
  const fs::path agent = locate_agent(o);
  // Attribute only the agent's processes, whatever else carries the SDK on this host.
  CommonOptions options = common;
  if (options.pid == 0 && options.binary.empty()) options.binary = agent.string();
  const auto startup = daemon::prepare(options);

  const double seconds = static_cast<double>(duration_ns) * 1e-9;
  const std::vector<std::string> args = agent_args(o, seconds);
  daemon::RunFlags flags;
  daemon::SignalRouting signals(flags, /*reload=*/false);
  std::optional<AgentProcess> process;  // outlives the collection: stopped after it ends
  bool agent_failed = false;
  {
    daemon::Collection collection(startup,
                                  duration_ns + static_cast<uint64_t>(kOverrunSeconds * 1e9));
    collection.begin();
    spdlog::info("demo: {} {} (fault {} on tenant ta)", agent.string(), fmt::join(args, " "),
                 o.fault);
    process.emplace(agent, args);
    Progress progress(fmt::format("demo, fault {}", o.fault), seconds);
    const bool overran = collect_while_running(*process, collection, progress, flags, seconds);
    // Records of the last requests may still sit in the ring buffer.
    for (int i = 0; i < 5; ++i) collection.poll(100);
    agent_failed = overran || (!process->succeeded() && !process->stopped_by_us());
    const bool complete = process->succeeded() && !process->stopped_by_us();
    core::Diagnosis d = collection.finish(complete ? seconds : 0);
    progress.finish(fmt::format("demo ran {:.1f} s{}", d.duration_seconds,
                                process->stopped_by_us() ? " (stopped early)" : ""));
    if (agent_failed) {
      fmt::print(stderr, "tailcause demo: the agent {}; its last output:\n{}\n",
                 process->describe_exit(), process->log_tail(15));
    }
    print_report(o, d, *process, agent, seconds);
  }
  return agent_failed ? 1 : 0;
}

}  // namespace tailcause::cli
