// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_notes.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "probes/elf_file.h"

namespace tailcause::probes {
namespace {

constexpr uint32_t kNtStapsdt = 3;  // note type of SystemTap SDT notes

struct Note {
  uint64_t pc = 0, base = 0, semaphore = 0;
  std::string provider, name, args;
};

uint64_t read_address(const char* p, size_t address_size) {
  if (address_size == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// One note's descriptor: three addresses (pc, base, semaphore), then provider, name and
// argument strings, each NUL-terminated.
std::optional<Note> parse_note(const char* desc, size_t size, size_t address_size) {
  if (size < 3 * address_size) return std::nullopt;
  Note n;
  n.pc = read_address(desc, address_size);
  n.base = read_address(desc + address_size, address_size);
  n.semaphore = read_address(desc + 2 * address_size, address_size);
  size_t pos = 3 * address_size;
  for (std::string* s : {&n.provider, &n.name, &n.args}) {
    if (pos >= size) return std::nullopt;
    const size_t len = strnlen(desc + pos, size - pos);
    if (pos + len >= size) return std::nullopt;  // not terminated
    s->assign(desc + pos, len);
    pos += len + 1;
  }
  return n;
}

struct Segment {
  uint64_t vaddr, memsz, offset;
  bool exec;
};

std::vector<Segment> load_segments(Elf* elf) {
  std::vector<Segment> out;
  size_t n = 0;
  if (elf_getphdrnum(elf, &n) != 0) return out;
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    out.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, (ph.p_flags & PF_X) != 0});
  }
  return out;
}

const Segment* segment_of(const std::vector<Segment>& segs, uint64_t vaddr) {
  for (const auto& s : segs) {
    if (vaddr >= s.vaddr && vaddr < s.vaddr + s.memsz) return &s;
  }
  return nullptr;
}

}  // namespace

UsdtSites read_usdt_sites(const std::string& path, std::string_view provider) {
  UsdtSites out;
  ElfFile f(path);
  if (!f.elf || elf_kind(f.elf) != ELF_K_ELF) return out;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(f.elf, &shstrndx) != 0) return out;
  const size_t address_size = gelf_getclass(f.elf) == ELFCLASS32 ? 4 : 8;
  Elf_Data* notes = nullptr;
  // .stapsdt.base's address at link time; a note's `base` differs from it when the file was
  // prelinked (moved) after the notes were written, and its pc moved by as much.
  std::optional<uint64_t> base_section;
  for (Elf_Scn* scn = elf_nextscn(f.elf, nullptr); scn; scn = elf_nextscn(f.elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(f.elf, shstrndx, sh.sh_name);
    if (!name) continue;
    if (sh.sh_type == SHT_NOTE && std::strcmp(name, ".note.stapsdt") == 0) {
      notes = elf_getdata(scn, nullptr);
    } else if (std::strcmp(name, ".stapsdt.base") == 0) {
      base_section = sh.sh_addr;
    }
  }
  if (!notes || !notes->d_buf) return out;
  const auto segs = load_segments(f.elf);
  const char* buf = static_cast<const char*>(notes->d_buf);
  GElf_Nhdr nh;
  size_t name_off = 0, desc_off = 0;
  for (size_t off = 0; (off = gelf_getnote(notes, off, &nh, &name_off, &desc_off)) > 0;) {
    if (nh.n_type != kNtStapsdt || nh.n_namesz != 8 ||
        std::memcmp(buf + name_off, "stapsdt", 8) != 0) {
      continue;
    }
    auto note = parse_note(buf + desc_off, nh.n_descsz, address_size);
    if (!note) {
      out.problems.push_back("malformed SDT note");
      continue;
    }
    if (!provider.empty() && note->provider != provider) continue;
    const std::string what = note->provider + ":" + note->name;
    uint64_t pc = note->pc;
    if (base_section && note->base) pc += *base_section - note->base;
    const Segment* code = segment_of(segs, pc);
    if (!code || !code->exec) {
      out.problems.push_back(fmt::format("{}: pc {:#x} is in no executable segment", what, pc));
      continue;
    }
    UsdtSite site{note->provider, note->name, note->args, pc - code->vaddr + code->offset, 0};
    if (note->semaphore) {
      const Segment* data = segment_of(segs, note->semaphore);
      if (!data || data->exec) {
        out.problems.push_back(
            fmt::format("{}: semaphore {:#x} is in no data segment", what, note->semaphore));
        continue;
      }
      site.semaphore_offset = note->semaphore - data->vaddr + data->offset;
    }
    out.sites.push_back(std::move(site));
  }
  return out;
}

}  // namespace tailcause::probes
