// SPDX-License-Identifier: Apache-2.0
#include "probes/recipe_attach.h"

#include "probes/elf_exports.h"
#include "probes/exec_mappings.h"
#include "probes/usdt_discovery.h"

#include <bpf/libbpf.h>
#include <fnmatch.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace tailcause::probes {
namespace {

// Files whose defined symbols are remembered, at most; then they are read again as needed.
constexpr size_t kDefinedFiles = 65536;

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The mapped file from the daemon's mount namespace: its own path when that is the same
// inode, else through the process's root.
std::string reachable_path(pid_t pid, const MapsEntry& e) {
  struct stat st {};
  if (stat(e.path.c_str(), &st) == 0 && st.st_ino == e.id.inode) return e.path;
  std::string alt = "/proc/" + std::to_string(pid) + "/root" + e.path;
  return stat(alt.c_str(), &st) == 0 ? alt : std::string();
}

}  // namespace

bool recipe_matches(const std::string& library, const std::string& path) {
  if (library.find('/') != std::string::npos) return fnmatch(library.c_str(), path.c_str(), 0) == 0;
  return fnmatch(library.c_str(), base_name(path).c_str(), 0) == 0;
}

void RecipeAttacher::configure(bpf_program* entry, bpf_program* ret,
                               std::vector<core::Recipe> recipes) {
  detach_all();
  entry_ = entry;
  ret_ = ret;
  recipes_ = std::move(recipes);
  ever_matched_.assign(recipes_.size(), false);
  symbol_problem_.assign(recipes_.size(), "");
  lookalike_.assign(recipes_.size(), "");
  symbols_.clear();
  for (const auto& r : recipes_) symbols_.insert(r.symbol);
  defined_.clear();
  files_read_ = read_ns_ = 0;
  first_sync_done_ = false;
  for (const auto& r : recipes_) {
    if (r.library.front() == '/' && !has_glob(r.library) && access(r.library.c_str(), R_OK) != 0) {
      report(fmt::format("recipe {}: library {}: {}", r.source, r.library, strerror(errno)));
    }
  }
}

void RecipeAttacher::sync(pid_t only_pid) {
  if (recipes_.empty() || !entry_) return;
  Found found;
  std::vector<std::string> runtimes;
  for (const auto& r : recipes_) runtimes.push_back(core::recipe_runtime(r.library));
  if (!only_pid) lookalike_.assign(recipes_.size(), "");  // a full scan sees every process
  bool listed = false;
  const std::vector<pid_t> pids = only_pid ? std::vector<pid_t>{only_pid} : maps_.scan_list(listed);
  for (pid_t pid : pids) scan_process(pid, runtimes, found);
  if (listed) maps_.keep_only(pids);
  for (const auto& [id, target] : found) {
    if (!libraries_.count(id)) attach(id, target);
  }
  release_unmapped(found);
  if (!first_sync_done_) {
    first_sync_done_ = true;
    spdlog::info("attrib: recipes: looked for {} symbol(s) in {} mapped file(s) ({:.1f} ms)",
                 symbols_.size(), files_read_, static_cast<double>(read_ns_) / 1e6);
    say_unmatched();
  }
}

void RecipeAttacher::scan_process(pid_t pid, const std::vector<std::string>& runtimes,
                                  Found& found) {
  std::vector<bool> matched_here(recipes_.size(), false);
  std::vector<std::string> similar_here(recipes_.size());
  for (const MapsEntry& e : maps_.of(pid)) {
    const std::set<size_t> wanted = recipes_for(e, defined_in(pid, e));
    for (size_t i = 0; i < recipes_.size(); ++i) {
      if (wanted.count(i)) {
        ever_matched_[i] = matched_here[i] = true;
      } else if (similar_here[i].empty() && core::looks_like(runtimes[i], e.path)) {
        similar_here[i] = e.path;
      }
    }
    if (wanted.empty()) continue;
    auto it = found.find(e.id);
    if (it == found.end()) {
      std::string path = reachable_path(pid, e);
      if (path.empty()) continue;
      it = found.emplace(e.id, Target{std::move(path), {}}).first;
    }
    it->second.recipes.insert(wanted.begin(), wanted.end());
  }
  note_lookalikes(pid, runtimes, matched_here, similar_here);
}

// The recipes whose glob matches the file, and those whose symbol it defines; of several for one
// symbol and kind only one (a glob's first), so that no call is probed twice (faiss.yaml names
// the same symbol in libfaiss*.so* and in _swigfaiss*.so).
std::set<size_t> RecipeAttacher::recipes_for(const MapsEntry& e,
                                             const std::set<std::string>& defined) const {
  std::set<size_t> out;
  std::set<std::pair<std::string_view, std::string_view>> taken;  // (symbol, kind)
  auto take = [&](size_t i) {
    if (taken.emplace(recipes_[i].symbol, recipes_[i].kind).second) out.insert(i);
  };
  for (size_t i = 0; i < recipes_.size(); ++i) {
    if (recipe_matches(recipes_[i].library, e.path)) take(i);
  }
  for (size_t i = 0; i < recipes_.size(); ++i) {
    if (defined.count(recipes_[i].symbol)) take(i);
  }
  return out;
}

const std::set<std::string>& RecipeAttacher::defined_in(pid_t pid, const MapsEntry& e) {
  if (const auto it = defined_.find(e.id); it != defined_.end()) return it->second;
  if (defined_.size() >= kDefinedFiles) defined_.clear();
  const auto started = std::chrono::steady_clock::now();
  const std::string path = reachable_path(pid, e);
  auto defined = path.empty() ? std::set<std::string>{} : defined_functions(path, symbols_);
  ++files_read_;
  read_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count());
  return defined_.emplace(e.id, std::move(defined)).first->second;
}

// A process of the recipe's runtime that no recipe for the same symbol covers: said once.
void RecipeAttacher::note_lookalikes(pid_t pid, const std::vector<std::string>& runtimes,
                                     const std::vector<bool>& matched_here,
                                     const std::vector<std::string>& similar_here) {
  for (size_t i = 0; i < recipes_.size(); ++i) {
    if (similar_here[i].empty() || matched_here[i]) continue;
    bool covered = false;
    for (size_t j = 0; j < recipes_.size() && !covered; ++j) {
      covered = matched_here[j] && recipes_[j].symbol == recipes_[i].symbol;
    }
    if (covered) continue;
    if (reported_.insert("lookalike " + recipes_[i].source + " " + similar_here[i]).second) {
      spdlog::warn(
          "attrib: recipe {}: process {} maps {}, which looks like {}, but no file it maps "
          "matches {}: its calls are not traced (add the file to the recipe's library list)",
          recipes_[i].source, pid, similar_here[i], runtimes[i], recipes_[i].library);
    }
    lookalike_[i] = fmt::format("process {} maps {}", pid, similar_here[i]);
  }
}

void RecipeAttacher::release_unmapped(const Found& found) {
  for (auto it = libraries_.begin(); it != libraries_.end();) {
    if (found.count(it->first)) {
      ++it;
      continue;
    }
    spdlog::info("attrib: released recipes in {} (no process maps it)", it->second.path);
    it = libraries_.erase(it);
  }
}

// After the first scan: the recipes whose library no running process maps yet.
void RecipeAttacher::say_unmatched() const {
  for (size_t i = 0; i < recipes_.size(); ++i) {
    if (!ever_matched_[i]) {
      spdlog::info("attrib: recipe {}: no running process maps {} yet; attached when one does",
                   recipes_[i].source, recipes_[i].library);
    }
  }
}

void RecipeAttacher::attach(const BinaryId& id, const Target& target) {
  const std::string& path = target.path;
  Library lib{path, {}, {}, {}, {}};
  for (const size_t i : target.recipes) {
    const core::Recipe& r = recipes_[i];
    lib.matched.insert(i);
    // The return first, then the entry: a call that enters between the two attaches is then
    // seen returning without having entered (ignored), never entering without a return (the
    // BPF side heals that case too, at the thread's next call). Released in the other order.
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = i, .retprobe = true,
                .func_name = r.symbol.c_str());
    LinkHandle ret;
    if (r.kind != "count") {
      ret = LinkHandle(bpf_program__attach_uprobe_opts(ret_, -1, path.c_str(), 0, &opts));
      if (!ret) {
        const int err = errno;
        symbol_problem_[i] =
            fmt::format("cannot attach {} in {}: {}", r.symbol, path,
                        err == ENOENT || err == ESRCH ? "no such symbol exported" : strerror(err));
        report(fmt::format("recipe {}: {}", r.source, symbol_problem_[i]));
        continue;
      }
    }
    opts.retprobe = false;
    LinkHandle entry(bpf_program__attach_uprobe_opts(entry_, -1, path.c_str(), 0, &opts));
    if (!entry) {
      const int err = errno;
      symbol_problem_[i] =
          fmt::format("cannot attach {} in {}: {}", r.symbol, path,
                      err == ENOENT || err == ESRCH ? "no such symbol exported" : strerror(err));
      report(fmt::format("recipe {}: {}", r.source, symbol_problem_[i]));
      continue;  // `ret` goes with it
    }
    lib.links.push_back(std::move(entry));  // destroyed first
    if (ret) lib.links.push_back(std::move(ret));
    lib.symbols.insert(r.symbol);
    lib.attached.insert(i);
  }
  if (!lib.symbols.empty()) {
    spdlog::info("attrib: attached {} recipe symbol(s) in {}", lib.symbols.size(), path);
  }
  libraries_[id] = std::move(lib);
}

void RecipeAttacher::detach_all() { libraries_.clear(); }

void RecipeAttacher::report(const std::string& problem) {
  if (!reported_.insert(problem).second) return;
  spdlog::warn("attrib: {}", problem);
  problems_.push_back(problem);
}

size_t RecipeAttacher::attached_libraries() const {
  size_t n = 0;
  for (const auto& [id, lib] : libraries_) n += lib.symbols.empty() ? 0 : 1;
  return n;
}

RecipeAttacher::Status RecipeAttacher::status(size_t index) const {
  Status st;
  for (const auto& [id, lib] : libraries_) {
    st.attached_files += lib.attached.count(index);
    st.matched_files += lib.matched.count(index);
    if (lib.attached.count(index)) st.files.push_back(lib.path);
  }
  if (st.attached_files) {
    st.state = core::RecipeState::attached;
  } else if (st.matched_files) {
    st.state = core::RecipeState::symbol_missing;
    st.detail = index < symbol_problem_.size() ? symbol_problem_[index] : "";
  } else if (index < lookalike_.size() && !lookalike_[index].empty()) {
    st.state = core::RecipeState::library_mismatch;
    st.detail = lookalike_[index] + ", no file matches " + recipes_[index].library;
  } else {
    st.detail =
        "no running process maps " + (index < recipes_.size() ? recipes_[index].library : "");
  }
  return st;
}

bool RecipeAttacher::attached(const std::string& path, const std::string& symbol) const {
  for (const auto& [id, lib] : libraries_) {
    if (lib.path == path && lib.symbols.count(symbol)) return true;
  }
  return false;
}

}  // namespace tailcause::probes
