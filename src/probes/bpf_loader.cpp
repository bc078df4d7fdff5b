// SPDX-License-Identifier: Apache-2.0
#include "probes/bpf_loader.h"

#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstring>
#include <deque>
#include <mutex>

#include "core/record/schema.h"

namespace tailcause::probes {
namespace {

std::mutex log_mu;
std::deque<std::string> recent;  // last libbpf lines, for error messages

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, args);
  std::string line(buf);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  if (line.empty()) return 0;
  if (level == LIBBPF_DEBUG) {
    spdlog::trace("libbpf: {}", line);
    return 0;
  }
  spdlog::debug("libbpf: {}", line);
  std::lock_guard lock(log_mu);
  recent.push_back(line);
  if (recent.size() > 8) recent.pop_front();
  return 0;
}

bool ends_with(const char* s, const char* suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

}  // namespace

void install_libbpf_logger() { libbpf_set_print(libbpf_print); }

std::string last_libbpf_messages() {
  std::lock_guard lock(log_mu);
  std::string out;
  for (const auto& l : recent) out += (out.empty() ? "" : " | ") + l;
  recent.clear();
  return out;
}

bpf_object_open_opts open_options(const Features& features) {
  bpf_object_open_opts opts{};
  opts.sz = sizeof(opts);
  if (!features.btf_path.empty() && features.btf_path != "/sys/kernel/btf/vmlinux") {
    opts.btf_custom_path = features.btf_path.c_str();
  }
  return opts;
}

void select_tracepoint_flavour(bpf_object* obj, const Features& features) {
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    const char* name = bpf_program__name(prog);
    if (ends_with(name, "_btf")) bpf_program__set_autoload(prog, features.tp_btf);
    if (ends_with(name, "_raw")) bpf_program__set_autoload(prog, !features.tp_btf);
  }
}

void check(int err, const char* family, const std::string& what) {
  if (err >= 0) return;
  std::string msg = std::string(family) + ": " + what + ": " + strerror(-err);
  const std::string said = last_libbpf_messages();
  if (!said.empty()) msg += " (libbpf: " + said + ")";
  throw ProbeError(msg);
}

int possible_cpus() {
  static const int n = libbpf_num_possible_cpus();
  return n;
}

uint64_t percpu_sum(int fd, uint32_t key) {
  uint64_t sum = 0;
  for (uint64_t v : percpu_values<uint64_t>(fd, &key)) sum += v;
  return sum;
}

void add_events_lost(core::MetricSet& out, const char* source, uint64_t lost) {
  out.add(core::metric::kEventsLost, core::MetricType::Counter,
          "Events dropped because a BPF map or ring buffer was full", {{"source", source}},
          static_cast<double>(lost));
}

std::vector<const bpf_program*> loaded_programs(const bpf_object* obj) {
  std::vector<const bpf_program*> out;
  if (!obj) return out;
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    if (bpf_program__autoload(prog)) out.push_back(prog);
  }
  return out;
}

}  // namespace tailcause::probes
