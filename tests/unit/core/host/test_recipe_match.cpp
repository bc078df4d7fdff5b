// SPDX-License-Identifier: Apache-2.0
// Recipe libraries: the runtime a glob names, files that look like it, lists of libraries in
// one recipe, and the state names `probes` and tailcause_recipe_status use.
#include <gtest/gtest.h>

#include "core/config/config.h"
#include "core/host/recipe_match.h"

namespace tailcause::core {
namespace {

TEST(RecipeMatch, RuntimeOfALibraryGlobOrPath) {
  EXPECT_EQ(recipe_runtime("libfaiss*.so*"), "faiss");
  EXPECT_EQ(recipe_runtime("_swigfaiss*.so"), "swigfaiss");
  EXPECT_EQ(recipe_runtime("libtorch_cpu.so*"), "torch_cpu");
  EXPECT_EQ(recipe_runtime("/opt/x/libLLAMA.so.1"), "llama");
  EXPECT_EQ(recipe_runtime("libcuda.so*"), "cuda");
  EXPECT_EQ(recipe_runtime("lib*.so"), "") << "too vague to look for";
  EXPECT_EQ(recipe_runtime("libab.so"), "");
}

TEST(RecipeMatch, FilesThatLookLikeTheRuntime) {
  EXPECT_TRUE(looks_like(
      "faiss", "/usr/lib/python3/dist-packages/faiss/_swigfaiss.cpython-311-x86_64-linux-gnu.so"));
  EXPECT_TRUE(looks_like("faiss", "/opt/conda/lib/libFAISS_avx2.so"));
  EXPECT_FALSE(looks_like("faiss", "/usr/lib/faiss/libblas.so.3")) << "the file name only";
  EXPECT_FALSE(looks_like("", "/usr/lib/libfaiss.so"));
}

TEST(RecipeMatch, ALibraryListGivesOneRecipePerLibrary) {
  const auto recipes = parse_recipe_file(
      "recipes:\n"
      "  - {library: [libfaiss*.so*, _swigfaiss*.so], symbol: f, stage: retrieval}\n"
      "  - {library: liby.so, symbol: g, kind: count}\n",
      "r.yaml");
  ASSERT_EQ(recipes.size(), 3u);
  EXPECT_EQ(recipes[0].library, "libfaiss*.so*");
  EXPECT_EQ(recipes[1].library, "_swigfaiss*.so");
  EXPECT_EQ(recipes[1].symbol, "f");
  EXPECT_EQ(recipes[1].stage, "retrieval");
  EXPECT_EQ(recipes[1].source, "r.yaml:2");
  EXPECT_EQ(recipes[2].kind, "count");
  for (const char* bad : {"recipes:\n  - {library: [], symbol: f, stage: tool}\n",
                          "recipes:\n  - {library: [a.so, 'b c'], symbol: f, stage: tool}\n",
                          "recipes:\n  - {library: [a.so, rel/b.so], symbol: f, stage: tool}\n"}) {
    try {
      parse_recipe_file(bad, "r.yaml");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("r.yaml:2: recipes[0].library"), std::string::npos)
          << e.what();
    }
  }
}

TEST(RecipeMatch, StateNames) {
  EXPECT_STREQ(recipe_state_name(RecipeState::attached), "attached");
  EXPECT_STREQ(recipe_state_name(RecipeState::symbol_missing), "symbol_missing");
  EXPECT_STREQ(recipe_state_name(RecipeState::library_mismatch), "library_mismatch");
  EXPECT_STREQ(recipe_state_name(RecipeState::library_unmapped), "library_unmapped");
}

}  // namespace
}  // namespace tailcause::core
