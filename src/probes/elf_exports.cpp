// SPDX-License-Identifier: Apache-2.0
#include "probes/elf_exports.h"

#include <gelf.h>

#include <string_view>

#include "probes/elf_file.h"

namespace tailcause::probes {

std::set<std::string> defined_functions(const std::string& path,
                                        const std::set<std::string, std::less<>>& wanted) {
  std::set<std::string> out;
  const ElfFile file(path);
  if (!file.elf || elf_kind(file.elf) != ELF_K_ELF || wanted.empty()) return out;
  for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || (shdr.sh_type != SHT_DYNSYM && shdr.sh_type != SHT_SYMTAB) ||
        shdr.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    const size_t count = shdr.sh_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
      const char* name = elf_strptr(file.elf, shdr.sh_link, sym.st_name);
      if (!name) continue;
      if (const auto it = wanted.find(std::string_view(name)); it != wanted.end()) out.insert(*it);
    }
  }
  return out;
}

}  // namespace tailcause::probes
