// SPDX-License-Identifier: Apache-2.0
// Relative recipe file names: next to the configuration file first, then the installed recipes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "core/config/config.h"
#include "core/config/recipe_path.h"

namespace tailcause::core {
namespace {

TEST(RecipePath, AbsoluteIsKeptBesideTheConfigWinsThenTheInstallDir) {
  std::set<std::string> files;
  auto exists = [&](const std::string& p) { return files.count(p) > 0; };
  EXPECT_EQ(
      resolve_recipe_file("/opt/r.yaml", "/etc/tailcause/tailcause.yaml", "/usr/share/r", exists),
      "/opt/r.yaml");
  // Neither exists: the path beside the configuration, so the error names it.
  EXPECT_EQ(
      resolve_recipe_file("cuda.yaml", "/etc/tailcause/tailcause.yaml", "/usr/share/r", exists),
      "/etc/tailcause/cuda.yaml");
  files.insert("/usr/share/r/cuda.yaml");
  EXPECT_EQ(
      resolve_recipe_file("cuda.yaml", "/etc/tailcause/tailcause.yaml", "/usr/share/r", exists),
      "/usr/share/r/cuda.yaml");
  files.insert("/etc/tailcause/cuda.yaml");
  EXPECT_EQ(
      resolve_recipe_file("cuda.yaml", "/etc/tailcause/tailcause.yaml", "/usr/share/r/", exists),
      "/etc/tailcause/cuda.yaml");
  // A configuration named without a directory: relative to the working directory.
  EXPECT_EQ(resolve_recipe_file("recipes/x.yaml", "t.yaml", "", exists), "recipes/x.yaml");
}

TEST(RecipePath, InstalledDirIsBesideTheBinDirectory) {
  EXPECT_EQ(installed_recipe_dir("/usr/bin/tailcause"), "/usr/share/tailcause/recipes");
  EXPECT_EQ(installed_recipe_dir("/opt/tc/bin/tailcause"), "/opt/tc/share/tailcause/recipes");
  EXPECT_EQ(installed_recipe_dir("tailcause"), "");
}

TEST(RecipePath, TheShippedConfigDirectoryFindsTheShippedRecipes) {
  // The source tree's layout: deploy/tailcause.yaml beside deploy/recipes/.
  const std::string deploy = std::string(TAILCAUSE_SOURCE_DIR) + "/deploy";
  const Config c = parse_config("probes:\n  attrib:\n    recipe_files: [recipes/cuda.yaml]\n",
                                deploy + "/tailcause.yaml");
  ASSERT_EQ(c.attrib.recipe_files, std::vector<std::string>{deploy + "/recipes/cuda.yaml"});
  AttribConfig a = c.attrib;
  load_recipe_files(a, "t.yaml");
  EXPECT_FALSE(all_recipes(a).empty());
}

TEST(RecipePath, LoadedFromAConfigFileInAnotherDirectory) {
  const std::string dir = ::testing::TempDir() + "/recipe_path_cfg";
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/mine.yaml") << "recipes:\n  - {library: a.so, symbol: f, stage: tool}\n";
  std::ofstream(dir + "/tailcause.yaml") << "probes:\n  attrib:\n    recipe_files: [mine.yaml]\n";
  const Config c = load_config_file(dir + "/tailcause.yaml");
  ASSERT_EQ(c.attrib.recipe_files.size(), 1u);
  EXPECT_EQ(c.attrib.recipe_files[0], dir + "/mine.yaml");
  const auto recipes = all_recipes(c.attrib);
  ASSERT_EQ(recipes.size(), 1u);
  EXPECT_EQ(recipes[0].symbol, "f");
  // A file next to it that is not there: the configuration is refused, naming the file.
  std::ofstream(dir + "/tailcause.yaml")
      << "probes:\n  attrib:\n    recipe_files: [mine.yaml, missing.yaml]\n";
  try {
    load_config_file(dir + "/tailcause.yaml");
    ADD_FAILURE() << "a missing recipe file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/missing.yaml: cannot read"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tailcause::core
