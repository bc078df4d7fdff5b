// SPDX-License-Identifier: Apache-2.0
// The agent's child processes (tool server, hogs, tenant workers): forked from the
// single-threaded supervisor, killed with the supervisor (PR_SET_PDEATHSIG), and killed and
// reaped when the set is destroyed, so no path out of the supervisor leaves one behind.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rag {

class ChildSet {
 public:
  ChildSet() = default;
  ~ChildSet();
  ChildSet(const ChildSet&) = delete;
  ChildSet& operator=(const ChildSet&) = delete;

  // Forks a child that keeps only fds 0-2 and keep_fd (-1: none), ignores SIGINT (the
  // supervisor decides how to stop), keeps SIGTERM/SIGCHLD blocked until `body` unblocks them
  // (unblock_signals) and runs `body`, which must not return.
  pid_t spawn(const std::string& role, int keep_fd, const std::function<void()>& body);
  struct Exit {
    pid_t pid;
    int status;  // as waitpid reports it
    std::string role;
  };
  // Reaps the children that exited, without blocking.
  std::vector<Exit> reap();
  void signal(pid_t pid, int sig) const;
  // SIGKILLs and reaps the children with role `only_role` (all of them when empty).
  void kill_all(const std::string& only_role = "");
  bool running(pid_t pid) const { return running_.count(pid) != 0; }

 private:
  std::map<pid_t, std::string> running_;
};

// In a child: restores the default SIGTERM and unblocks SIGINT/SIGTERM/SIGCHLD.
void unblock_signals();

}  // namespace rag
