// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_binaries.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace tailcause::probes {

using Clock = std::chrono::steady_clock;

UsdtBinaries::UsdtBinaries(ProgramsFor programs_for, int specs_fd, uint32_t specs_max, bool multi,
                           std::chrono::milliseconds release_grace)
    : programs_for_(std::move(programs_for)),
      multi_(multi),
      release_grace_(release_grace),
      spec_ids_(specs_fd, specs_max) {}

UsdtBinaries::~UsdtBinaries() {
  release_all();
  reaper_.drain();
}

bool UsdtBinaries::attach(const MappedBinary& binary, pid_t pid) {
  if (!binary.sites) return false;
  const std::vector<UsdtProgram> programs = programs_for_(binary);
  std::vector<std::string> problems;
  UsdtLinks links =
      attach_usdt(binary.path, *binary.sites, programs, pid, multi_, spec_ids_, problems);
  for (const auto& p : problems) spdlog::warn("attrib: cannot attach {}: {}", binary.path, p);
  if (links.count() == 0) return false;
  spdlog::info("attrib: attached {} probe(s) in {} ({} sites, {} {})", programs.size(), binary.path,
               links.sites, links.count(), multi_ ? "uprobe_multi links" : "perf-event uprobes");
  attached_[binary.id] = Attachment{binary.path, std::move(links), std::nullopt};
  ++attaches_;
  return true;
}

void UsdtBinaries::mapped(const MappedBinary& binary) {
  auto it = attached_.find(binary.id);
  if (it == attached_.end()) {
    attach(binary, -1);
  } else {
    it->second.unmapped_since.reset();  // mapped again within the grace period
  }
}

void UsdtBinaries::sync(const std::map<BinaryId, MappedBinary>& found, pid_t pid) {
  for (const auto& [id, b] : found) {
    if (!attached_.count(id)) attach(b, pid);
  }
  const auto now = Clock::now();
  std::vector<BinaryId> gone;
  for (auto& [id, a] : attached_) {
    if (found.count(id)) {
      a.unmapped_since.reset();
      continue;
    }
    if (!a.unmapped_since) a.unmapped_since = now;
    if (pid > 0 || now - *a.unmapped_since >= release_grace_) gone.push_back(id);
  }
  for (const auto& id : gone) release(id);
}

void UsdtBinaries::release(const BinaryId& id) {
  auto it = attached_.find(id);
  if (it == attached_.end()) return;
  spdlog::info("attrib: released {} (no process maps it)", it->second.path);
  reap(std::move(it->second.links));
  attached_.erase(it);
  ++releases_;
}

void UsdtBinaries::release_all() {
  // Not counted as releases: nothing was unmapped.
  for (auto& [id, a] : attached_) reap(std::move(a.links));
  attached_.clear();
}

// The links close on the reaper's threads; their argument specs are freed after that.
void UsdtBinaries::reap(UsdtLinks links) {
  reaper_.reap(
      std::move(links.multi), std::move(links.perf),
      [ids = &spec_ids_, spec_ids = std::move(links.spec_ids)] { ids->release(spec_ids); });
}

size_t UsdtBinaries::links() const {
  size_t n = 0;
  for (const auto& [id, a] : attached_) n += a.links.count();
  return n;
}

bool UsdtBinaries::attached_to(const std::string& path) const {
  for (const auto& [id, a] : attached_) {
    if (a.path == path) return true;
  }
  return false;
}

}  // namespace tailcause::probes
