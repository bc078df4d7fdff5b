// SPDX-License-Identifier: Apache-2.0
// Attaches the attribution family's uprobe recipes (bpf/attrib_recipe.bpf.h): a recipe is for
// every file running processes map that its library glob matches or that defines its symbol
// (elf_exports.h: a versioned soname, a vendored copy, a static link), and its symbol is
// attached there by path for every process (pid -1), the recipe index as BPF cookie. Which
// recipe symbols a file defines is read once per file (by device and inode). Follows process churn
// like the USDT discovery: sync() attaches libraries newly mapped and releases those no
// process maps any more. Bad recipes (a library path that does not exist, a symbol the
// library does not export) are reported once each and skipped; the others keep working.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/host/recipe_match.h"
#include "probes/handles.h"
#include "probes/usdt_discovery.h"

struct bpf_program;

namespace tailcause::probes {

class ExecMappings;

// Does `library` (a recipe's path or file-name glob) name the file at `path`?
bool recipe_matches(const std::string& library, const std::string& path);

class RecipeAttacher {
 public:
  explicit RecipeAttacher(ExecMappings& maps) : maps_(maps) {}
  RecipeAttacher(const RecipeAttacher&) = delete;
  RecipeAttacher& operator=(const RecipeAttacher&) = delete;
  ~RecipeAttacher() { detach_all(); }

  // The programs and the recipes (index = BPF cookie = attrib_recipes index).
  void configure(bpf_program* entry, bpf_program* ret, std::vector<core::Recipe> recipes);
  // Scans /proc/*/maps (or one process's) and attaches/releases accordingly.
  void sync(pid_t only_pid);
  void detach_all();

  const std::vector<core::Recipe>& recipes() const { return recipes_; }
  // Problems found so far, one line each, naming the recipe's file:line.
  const std::vector<std::string>& problems() const { return problems_; }
  size_t attached_libraries() const;
  // Uprobes attached for `symbol` (entry and return count as one) in the file at `path`.
  bool attached(const std::string& path, const std::string& symbol) const;

  // Where recipe `index` stands now, and the library files it is attached in / matches.
  struct Status {
    core::RecipeState state = core::RecipeState::library_unmapped;
    size_t attached_files = 0, matched_files = 0;
    std::vector<std::string> files;  // where it is attached
    std::string detail;              // the problem or the similar-looking file, when not attached
  };
  Status status(size_t index) const;

 private:
  struct Library {
    std::string path;
    std::vector<LinkHandle> links;
    std::set<std::string> symbols;  // attached ones
    std::set<size_t> attached;      // recipe indexes attached here
    std::set<size_t> matched;       // recipe indexes whose library glob matches it
  };
  // A file some recipes are for.
  struct Target {
    std::string path;  // reaches it from here
    std::set<size_t> recipes;
  };
  using Found = std::map<BinaryId, Target>;
  std::set<size_t> recipes_for(const MapsEntry& e, const std::set<std::string>& defined) const;
  // The recipe symbols a file `pid` maps defines, read on its first sight only.
  const std::set<std::string>& defined_in(pid_t pid, const MapsEntry& e);
  // The pieces of sync(): one process's maps into `found`, its look-alike files (`runtimes`:
  // each recipe's runtime), libraries no process maps any more, recipes never matched.
  void scan_process(pid_t pid, const std::vector<std::string>& runtimes, Found& found);
  void note_lookalikes(pid_t pid, const std::vector<std::string>& runtimes,
                       const std::vector<bool>& matched_here,
                       const std::vector<std::string>& similar_here);
  void release_unmapped(const Found& found);
  void say_unmatched() const;
  void attach(const BinaryId& id, const Target& target);
  void report(const std::string& problem);

  ExecMappings& maps_;  // shared with the USDT discovery: one reading of each process's maps
  bpf_program* entry_ = nullptr;
  bpf_program* ret_ = nullptr;
  std::vector<core::Recipe> recipes_;
  std::map<BinaryId, Library> libraries_;       // files that match a recipe (links may be empty)
  std::vector<bool> ever_matched_;              // per recipe
  std::vector<std::string> symbol_problem_;     // per recipe: why its symbol did not attach
  std::vector<std::string> lookalike_;          // per recipe: a similar file no glob matched
  std::set<std::string, std::less<>> symbols_;  // every recipe's
  std::map<BinaryId, std::set<std::string>> defined_;  // per file read: the symbols_ it defines
  uint64_t files_read_ = 0, read_ns_ = 0;              // what reading them cost
  bool first_sync_done_ = false;
  std::vector<std::string> problems_;
  std::set<std::string> reported_;
};

}  // namespace tailcause::probes
