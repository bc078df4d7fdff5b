#include "probes/link_teardown.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace tailcause::probes {
namespace {

constexpr size_t kMaxThreads = 64;

// Descriptors of this process that are perf events (/proc/self/fd/N -> anon_inode:[perf_event]).
std::vector<int> perf_events() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end) continue;
    char target[64];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    if (std::string(target, n) == "anon_inode:[perf_event]") fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

}  // namespace

size_t perf_event_fds() { return perf_events().size(); }

void destroy_links(std::vector<LinkHandle>& links) {
  if (links.empty()) return;
  // Other families' events are held too: closing our copy of one they keep costs nothing.
  std::vector<int> held;
  for (int fd : perf_events()) {
    const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) held.push_back(copy);  // else (EMFILE) libbpf's close waits, slower only
  }
  links.clear();
  const size_t n = std::min(held.size(), kMaxThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) {
    threads.emplace_back([&held, t, n] {
      for (size_t i = t; i < held.size(); i += n) close(held[i]);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace tailcause::probes
