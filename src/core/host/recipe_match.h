// SPDX-License-Identifier: Apache-2.0
// Which running processes a uprobe recipe is for, beyond the files its library glob matches:
// the runtime's name (the glob's stem: "faiss" for libfaiss*.so*), so that a process mapping
// a file that looks like that runtime (FAISS linked into _swigfaiss.so, a renamed or statically
// linked copy) while no recipe library matches is reported instead of silently missed. Also the
// state a recipe is in, as `probes` and tailcause_recipe_status show it. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>

namespace tailcause::core {

// The runtime a library glob or path names: its file name without directory, a leading "lib"
// or '_', and everything from the first wildcard, '.', or "-so" on; lower case; "" when
// shorter than 3 characters (too vague to look for). "libfaiss*.so*" -> "faiss",
// "/opt/x/libtorch_cpu.so" -> "torch_cpu", "_swigfaiss*.so" -> "swigfaiss".
std::string recipe_runtime(std::string_view library);

// Does the file at `path` look like `runtime` (its file name contains it, ignoring case)?
bool looks_like(std::string_view runtime, std::string_view path);

// Where a recipe stands, most useful first.
enum class RecipeState {
  attached,          // its symbol is attached in at least one library file
  symbol_missing,    // a matching library is mapped but does not have the symbol
  library_mismatch,  // no file matches, but a running process maps one that looks like it
  library_unmapped,  // no running process maps a matching (or similar) file
};
const char* recipe_state_name(RecipeState s);

}  // namespace tailcause::core
