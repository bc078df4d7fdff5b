// SPDX-License-Identifier: Apache-2.0
// Which of some function names an ELF file defines: what a uprobe recipe's runtime is found by,
// whatever the file is called (a versioned soname such as libllama.v0.4.0.so, a copy vendored
// under node_modules/ or site-packages/, an executable linked with the runtime). Read from
// .dynsym and, when the file has one, .symtab: libbpf resolves a uprobe's function name in
// both. Only defined functions count (an undefined entry is an import, not the runtime).
#pragma once

#include <set>
#include <string>

namespace tailcause::probes {

// The names of `wanted` that the file at `path` defines as functions; none when the file
// cannot be read or is not ELF.
std::set<std::string> defined_functions(const std::string& path,
                                        const std::set<std::string, std::less<>>& wanted);

}  // namespace tailcause::probes
