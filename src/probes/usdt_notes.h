// SPDX-License-Identifier: Apache-2.0
// Reads the SystemTap SDT notes (.note.stapsdt) of an ELF file: every probe site with its
// argument specification, and where it lies in the file, which is what a uprobe is placed by
// (the note holds link-time addresses; uprobes take file offsets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tailcause::probes {

struct UsdtSite {
  std::string provider;
  std::string name;
  std::string args;               // e.g. "8@%rdi -4@-20(%rbp)"
  uint64_t offset = 0;            // file offset of the probe's instruction
  uint64_t semaphore_offset = 0;  // file offset of its semaphore (is-enabled counter), 0: none
};

struct UsdtSites {
  std::vector<UsdtSite> sites;
  std::vector<std::string> problems;  // notes that were skipped, and why
};

// The sites of `provider` (every provider when empty) in the ELF file at `path`; none when the
// file is not ELF, cannot be read or has no notes.
UsdtSites read_usdt_sites(const std::string& path, std::string_view provider = {});

}  // namespace tailcause::probes
