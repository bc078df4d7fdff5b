// SPDX-License-Identifier: Apache-2.0
// An ELF file opened for libelf, read with pread() as sections are asked for, not mapped: the
// discovery and the recipes open every library a new process maps (hundreds for PyTorch, some
// of them hundreds of MiB), and unmapping each again flushed the TLBs of every CPU the daemon's
// threads ran on, the traced agents' included. `elf` is null when the file cannot be opened or
// is not ELF.
#pragma once

#include <fcntl.h>
#include <libelf.h>

#include <string>

#include "probes/handles.h"

namespace tailcause::probes {

struct ElfFile {
  Fd fd;  // declared first: outlives the Elf that reads it
  Elf* elf = nullptr;
  explicit ElfFile(const std::string& path) : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (!fd) return;
    elf_version(EV_CURRENT);
    elf = elf_begin(fd.get(), ELF_C_READ, nullptr);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() {
    if (elf) elf_end(elf);
  }
};

}  // namespace tailcause::probes
