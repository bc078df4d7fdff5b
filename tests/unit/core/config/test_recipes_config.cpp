// SPDX-License-Identifier: Apache-2.0
// probes.attrib.recipes / recipe_files and recipe files: syntax and validation.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "core/config/config.h"

namespace tailcause::core {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(RecipesConfig, DefaultsHaveNone) {
  const Config c = parse_config("", "t.yaml");
  EXPECT_TRUE(c.attrib.recipes.empty());
  EXPECT_TRUE(c.attrib.recipe_files.empty());
}

TEST(RecipesConfig, ParsesInlineRecipesAndFiles) {
  const Config c = parse_config(
      "probes:\n  attrib:\n    recipes:\n"
      "      - {library: libllama.so*, symbol: llama_decode, stage: generation}\n"
      "      - library: /usr/lib/libcuda.so.1\n        symbol: cuStreamSynchronize\n"
      "        kind: gpu_sync\n"
      "      - {library: libfoo.so, symbol: f, stage: my-stage.v2, kind: span, request: call}\n"
      "    recipe_files: [/etc/tailcause/recipes/llama_cpp.yaml]\n",
      "t.yaml");
  ASSERT_EQ(c.attrib.recipes.size(), 3u);
  EXPECT_EQ(c.attrib.recipes[0].library, "libllama.so*");
  EXPECT_EQ(c.attrib.recipes[0].stage, "generation");
  EXPECT_EQ(c.attrib.recipes[0].kind, "span");
  EXPECT_EQ(c.attrib.recipes[0].source, "t.yaml:4");
  EXPECT_EQ(c.attrib.recipes[1].kind, "gpu_sync");
  EXPECT_TRUE(c.attrib.recipes[1].stage.empty());
  EXPECT_EQ(c.attrib.recipes[2].stage, "my-stage.v2");
  EXPECT_FALSE(c.attrib.recipes[0].whole_request);
  EXPECT_TRUE(c.attrib.recipes[2].whole_request);
  EXPECT_EQ(c.attrib.recipe_files,
            std::vector<std::string>{"/etc/tailcause/recipes/llama_cpp.yaml"});
}

TEST(RecipesConfig, RejectsBadRecipesNamingLineAndKey) {
  const std::string head = "probes:\n  attrib:\n    recipes:\n";
  struct Case {
    std::string item, key, words;
  };
  for (const Case& c : std::vector<Case>{
           {"      - {symbol: f, stage: tool}\n", "recipes[0].library", "missing"},
           {"      - {library: libx.so, stage: tool}\n", "recipes[0].symbol", "missing"},
           {"      - {library: libx.so, symbol: f}\n", "recipes[0].stage", "missing"},
           {"      - {library: libx.so, symbol: f, stage: tool, kind: gpu_sync}\n",
            "recipes[0].stage", "only span recipes"},
           {"      - {library: libx.so, symbol: f, stage: tool, kind: launch}\n", "recipes[0].kind",
            "expected one of span, gpu_sync, count"},
           {"      - {library: libx.so, symbol: f, stage: 'two words'}\n", "recipes[0].stage",
            "expected prompt"},
           {"      - {library: libx.so, symbol: f, stage: "
            "abcdefghijabcdefghijabcdefghijabc}\n",
            "recipes[0].stage", "1-32"},
           {"      - {library: lib/x.so, symbol: f, stage: tool}\n", "recipes[0].library",
            "absolute"},
           {"      - {library: libx.so, symbol: 'a b', stage: tool}\n", "recipes[0].symbol",
            "ELF symbol"},
           {"      - {library: libx.so, symbol: f, stage: tool, colour: red}\n",
            "recipes[0].colour", "unknown key"},
           {"      - just-a-string\n", "recipes[0]", "expected a mapping"},
           {"      - {library: libx.so, symbol: f, stage: tool, request: each}\n",
            "recipes[0].request", "expected one of call, grouped"},
           {"      - {library: libx.so, symbol: f, kind: count, request: call}\n",
            "recipes[0].request", "only span recipes make requests"},
       }) {
    const std::string e = error_of(head + c.item);
    EXPECT_NE(e.find("t.yaml:4: probes.attrib." + c.key), std::string::npos) << e;
    EXPECT_NE(e.find(c.words), std::string::npos) << e;
  }
  EXPECT_NE(error_of("probes:\n  attrib:\n    recipes: {a: b}\n")
                .find("t.yaml:3: probes.attrib.recipes: expected a list"),
            std::string::npos);
  EXPECT_NE(error_of("probes:\n  attrib:\n    recipe_files: ['']\n")
                .find("t.yaml:3: probes.attrib.recipe_files[0]: expected a path"),
            std::string::npos);
}

TEST(RecipesConfig, RecipeFilesParseAndABadOneIsAConfigurationError) {
  EXPECT_EQ(parse_recipe_file("recipes:\n  - {library: a.so, symbol: f, kind: count}\n", "r.yaml")
                .at(0)
                .kind,
            "count");
  try {
    parse_recipe_file("recipes:\n  - {library: a.so, symbol: f, kind: nope}\n", "r.yaml");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("r.yaml:2: recipes[0].kind"), std::string::npos);
  }
  const std::string good = ::testing::TempDir() + "/good_recipes.yaml";
  const std::string bad = ::testing::TempDir() + "/bad_recipes.yaml";
  std::ofstream(good) << "recipes:\n  - {library: a.so, symbol: f, stage: tool}\n";
  std::ofstream(bad) << "recipes:\n  - {library: a.so}\n";
  AttribConfig config;
  config.recipes.push_back({"b.so", "g", "prompt", "span", false, "x:1"});
  config.recipe_files = {good};
  load_recipe_files(config, "t.yaml");
  const auto recipes = all_recipes(config);
  ASSERT_EQ(recipes.size(), 2u);
  EXPECT_EQ(recipes[0].symbol, "g");
  EXPECT_EQ(recipes[1].source, good + ":2");
  // Each kind of bad file is an error naming the configuration, the key, the file and why.
  const std::string dir = ::testing::TempDir() + "/recipe_files_bad";
  ::mkdir(dir.c_str(), 0755);
  const std::string fifo = dir + "/fifo.yaml";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> cases[] = {
      {bad, bad + ":2: recipes[0].symbol: missing"},
      {"/nonexistent/r.yaml", "/nonexistent/r.yaml: cannot read the configuration file: No such"},
      {dir, "it is a directory"},
      {"/dev/zero", "/dev/zero: cannot read the configuration file: not a regular file"},
      {fifo, "not a regular file"},
  };
  for (const auto& [file, why] : cases) {
    config.recipe_files = {good, file};
    try {
      load_recipe_files(config, "t.yaml");
      ADD_FAILURE() << file << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("t.yaml: probes.attrib.recipe_files[1]: "),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  ::unlink(fifo.c_str());
}

TEST(RecipesConfig, ShippedRecipeFilesParse) {
  for (const char* name : {"llama_cpp", "onnxruntime", "pytorch", "faiss", "cuda", "python"}) {
    const std::string path =
        std::string(TAILCAUSE_SOURCE_DIR) + "/deploy/recipes/" + name + ".yaml";
    AttribConfig config;
    config.recipe_files = {path};
    EXPECT_NO_THROW(load_recipe_files(config, "t.yaml")) << path;
    const auto recipes = all_recipes(config);
    // python.yaml only documents why the interpreter has no recipes.
    EXPECT_EQ(recipes.empty(), std::string(name) == "python") << path;
  }
}

}  // namespace
}  // namespace tailcause::core
