// SPDX-License-Identifier: Apache-2.0
// Which functions an ELF file defines, as the recipes find a runtime by it: defined functions
// in .dynsym and .symtab count; imports, data and files that are not ELF do not.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "probes/elf_exports.h"
#include "temp_dir.h"

// A defined object, not a function: never a recipe's runtime.
extern "C" {
__attribute__((visibility("default"), used)) int tailcause_test_data_symbol = 1;
}

namespace tailcause::probes {
namespace {

std::string library_of(const void* address) {
  Dl_info info{};
  EXPECT_NE(dladdr(address, &info), 0);
  return info.dli_fname ? info.dli_fname : "";
}

TEST(ElfExports, ALibraryDefinesWhatItExports) {
  // getpid is libc's own (no sanitizer intercepts it).
  const std::string libc = library_of(reinterpret_cast<const void*>(&getpid));
  ASSERT_NE(libc.find("libc"), std::string::npos) << libc;
  EXPECT_EQ(defined_functions(libc, {"getpid", "no_such_function_at_all"}),
            std::set<std::string>{"getpid"});
}

TEST(ElfExports, AnExecutablesOwnFunctionsCountAndItsImportsDoNot) {
  const auto defined = defined_functions(
      "/proc/self/exe", {"main", "getpid", "tailcause_test_data_symbol", "no_such_function"});
  EXPECT_EQ(defined, std::set<std::string>{"main"});  // getpid: imported; the symbol: data
}

TEST(ElfExports, NotElfOrNotThereIsNothing) {
  const testing::TempDir dir;
  const std::string text = dir.file("not_elf.so");
  std::ofstream(text) << "main getpid\n";
  EXPECT_TRUE(defined_functions(text, {"main"}).empty());
  EXPECT_TRUE(defined_functions(dir.file("missing.so"), {"main"}).empty());
  EXPECT_TRUE(defined_functions(dir.path.string(), {"main"}).empty());  // a directory
  EXPECT_TRUE(defined_functions("/proc/self/exe", {}).empty());
}

}  // namespace
}  // namespace tailcause::probes
