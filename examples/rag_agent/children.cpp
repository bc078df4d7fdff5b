// SPDX-License-Identifier: Apache-2.0
#include "children.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace rag {

ChildSet::~ChildSet() { kill_all(); }

pid_t ChildSet::spawn(const std::string& role, int keep_fd, const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork {}: {}", role, std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the supervisor died before prctl took effect
    if (keep_fd < 0) {
      ::close_range(3, ~0U, 0);
    } else {
      if (keep_fd > 3) ::close_range(3, static_cast<unsigned>(keep_fd) - 1, 0);
      ::close_range(static_cast<unsigned>(keep_fd) + 1, ~0U, 0);
    }
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGCHLD, SIG_DFL);
    body();
    ::_exit(1);
  }
  running_[pid] = role;
  return pid;
}

std::vector<ChildSet::Exit> ChildSet::reap() {
  std::vector<Exit> out;
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    auto it = running_.find(pid);
    out.push_back(Exit{pid, status, it == running_.end() ? "?" : it->second});
    if (it != running_.end()) running_.erase(it);
  }
  return out;
}

void ChildSet::signal(pid_t pid, int sig) const {
  if (running(pid)) ::kill(pid, sig);
}

void ChildSet::kill_all(const std::string& only_role) {
  for (auto it = running_.begin(); it != running_.end();) {
    if (!only_role.empty() && it->second != only_role) {
      ++it;
      continue;
    }
    ::kill(it->first, SIGKILL);
    while (::waitpid(it->first, nullptr, 0) < 0 && errno == EINTR) {
    }
    it = running_.erase(it);
  }
}

void unblock_signals() {
  ::signal(SIGTERM, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace rag
