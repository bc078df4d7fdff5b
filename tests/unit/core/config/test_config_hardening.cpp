// SPDX-License-Identifier: Apache-2.0
// Hostile configuration text and files: each reproducer of the hardening issue is a clear
// ConfigError, never a crash, a hang or unbounded memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/config/config.h"
#include "core/config/config_yaml.h"
#include "temp_dir.h"

using namespace tailcause::core;
using tailcause::testing::TempDir;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "/etc/tailcause.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << yaml.substr(0, 200);
  return "";
}

std::string file_error_of(const std::string& path) {
  try {
    load_config_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << path;
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// The millisecond settings once segfaulted on any value (a handler called a lambda that had
// gone out of scope); each now reads its value, and 0 or over an hour is an error naming it.
TEST(ConfigHardening, MillisecondSettingsAreReadAndRangeChecked) {
  const std::pair<std::string, std::function<uint32_t(const Config&)>> cases[] = {
      {"glitch.request_slo_ms", [](const Config& c) { return c.glitch.request_slo_ms; }},
      {"glitch.stage_slo_ms", [](const Config& c) { return c.glitch.stage_slo_ms; }},
      {"breaker.slow_ms", [](const Config& c) { return c.breaker.slow_ms; }},
      {"otlp.timeout_ms", [](const Config& c) { return c.otlp.timeout_ms; }},
      {"entropy.correlation_ms", [](const Config& c) { return c.entropy.correlation_ms; }},
  };
  for (const auto& [dotted, get] : cases) {
    const auto dot = dotted.find('.');
    const std::string yaml_prefix = dotted.substr(0, dot) + ":\n  " + dotted.substr(dot + 1) + ": ";
    EXPECT_EQ(get(parse_config(yaml_prefix + "7\n", "f")), 7u) << dotted;
    EXPECT_EQ(get(parse_config(yaml_prefix + "3600000\n", "f")), 3600000u) << dotted;
    for (const char* bad : {"0", "-1", "3600001", "99999999999999999999", "1.5", "ms"}) {
      const std::string msg = error_of(yaml_prefix + bad + "\n");
      EXPECT_EQ(msg.rfind("/etc/tailcause.yaml:2: " + dotted +
                              ": expected an integer from 1 to "
                              "3600000",
                          0),
                0u)
          << msg;
    }
  }
  EXPECT_EQ(
      parse_config("glitch:\n  stage_slos_ms:\n    tool: 9\n", "f").glitch.stage_slos_ms.at("tool"),
      9u);
  EXPECT_TRUE(
      contains(error_of("glitch:\n  stage_slos_ms:\n    tool: 0\n"), "glitch.stage_slos_ms.tool"));
}

// yaml-cpp 0.7's LoadAll() produced empty documents forever from a stray ',' (1.9 GB in 6 s).
TEST(ConfigHardening, AStrayFlowIndicatorIsInvalidYaml) {
  for (const char* text : {",", ",\n", "top_k: 3\n,\n", "---\n,", ",,,,", "]", "}", "? ,"}) {
    const std::string msg = error_of(text);
    EXPECT_TRUE(contains(msg, "invalid YAML")) << text << " -> " << msg;
  }
  // A recipe file goes through the same gate.
  EXPECT_THROW(parse_recipe_file(",", "r.yaml"), ConfigError);
}

TEST(ConfigHardening, DepthSizeAndNodeCountAreBounded) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_TRUE(contains(error_of(deep), "nested deeper than 32 levels")) << error_of(deep);
  const std::string deep_maps = [] {
    std::string s;
    for (int i = 0; i < 40; ++i) s += std::string(i * 2, ' ') + "a:\n";
    return s;
  }();
  EXPECT_TRUE(contains(error_of(deep_maps), "nested deeper"));
  const std::string big = "top_k: 3\n" + std::string(kMaxConfigBytes, '#');
  EXPECT_TRUE(contains(error_of(big), "more than the 1048576")) << error_of(big).substr(0, 200);
  std::string many = "glitch:\n  stage_slos_ms: {";
  while (many.size() < kMaxConfigBytes - 16) many += "a: 1, ";
  many += "}\n";
  EXPECT_TRUE(contains(error_of(many), "too many YAML nodes")) << error_of(many).substr(0, 200);
}

TEST(ConfigHardening, OnlyOneDocumentAndAnEmptyTrailingOneIsFine) {
  EXPECT_EQ(parse_config("top_k: 4\n---\n", "f").top_k, 4u);
  EXPECT_EQ(parse_config("top_k: 4\n...\n", "f").top_k, 4u);
  EXPECT_TRUE(contains(error_of("top_k: 3\n--- 5\n"), "one YAML document"));
}

TEST(ConfigHardening, TheFileMustBeARegularFileOfBoundedSize) {
  TempDir dir;
  const std::string path = dir.file("tailcause.yaml");
  { std::ofstream(path) << "top_k: 9\n"; }
  EXPECT_EQ(load_config_file(path).top_k, 9u);

  // Replaced by a directory: once read as an empty file, every default applied on SIGHUP.
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  std::string msg = file_error_of(path);
  EXPECT_EQ(msg.rfind(path + ": cannot read the configuration file: it is a directory", 0), 0u)
      << msg;
  std::filesystem::remove(path);

  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);  // would block a plain open() for ever
  EXPECT_TRUE(contains(file_error_of(path), "not a regular file"));
  std::filesystem::remove(path);

  EXPECT_TRUE(contains(file_error_of("/dev/zero"), "not a regular file"));
  EXPECT_TRUE(contains(file_error_of(dir.file("missing.yaml")), "No such file"));

  { std::ofstream(path) << "top_k: 9\n" << std::string(kMaxConfigBytes, '#'); }
  EXPECT_TRUE(contains(file_error_of(path), "more than the 1048576"));
  { std::ofstream(path, std::ios::trunc) << ","; }
  EXPECT_TRUE(contains(file_error_of(path), "invalid YAML"));
}
