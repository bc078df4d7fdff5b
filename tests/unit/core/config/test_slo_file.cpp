// SPDX-License-Identifier: Apache-2.0
// glitch.slo_file: the daemon reads its glitch SLOs from the thresholds file the alert rules are
// generated from (deploy/prometheus/thresholds.yaml), so an alert's SLO is the daemon's.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/config/config.h"
#include "temp_dir.h"

using namespace tailcause::core;
using tailcause::testing::TempDir;

namespace {

std::string error_of(const std::string& path) {
  try {
    load_config_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << path;
  return "";
}

}  // namespace

TEST(SloFile, ItsGlitchSectionSetsTheSlosAndTheRestIsIgnored) {
  TempDir dir;
  {
    std::ofstream(dir.file("thresholds.yaml")) << "window: 5m\n"
                                                  "diagnostics: {gpu_sync: {for: 5m}}\n"
                                                  "glitch:\n"
                                                  "  request_slo_ms: 1500\n"
                                                  "  stage_slo_ms: 300\n"
                                                  "  stage_slos_ms: {generation: 900}\n";
  }
  // Relative to the configuration's directory; the file's SLOs replace the configuration's.
  {
    std::ofstream(dir.file("t.yaml")) << "glitch:\n"
                                         "  slo_file: thresholds.yaml\n"
                                         "  stage_slo_ms: 50\n"
                                         "  stage_slos_ms: {tool: 10}\n"
                                         "  p99_factor: 3\n";
  }
  const Config c = load_config_file(dir.file("t.yaml"));
  EXPECT_EQ(c.glitch.request_slo_ms, 1500u);
  EXPECT_EQ(c.glitch.stage_slo_ms, 300u);
  EXPECT_EQ(c.glitch.stage_slos_ms, (std::map<std::string, uint32_t>{{"generation", 900}}));
  EXPECT_EQ(c.glitch.p99_factor, 3.0);  // not an SLO: the configuration's own

  // The daemon loads over a base (the OTEL_* variables): the SLO file applies there too.
  Config base;
  base.otlp.service_name = "from-env";
  const Config d = load_config_file(dir.file("t.yaml"), base);
  EXPECT_EQ(d.glitch.stage_slo_ms, 300u);
  EXPECT_EQ(d.otlp.service_name, "from-env");
}

TEST(SloFile, KeysItLeavesOutKeepTheConfigurationsValue) {
  GlitchSettings g;
  g.request_slo_ms = 999;
  apply_slo_file("glitch: {stage_slo_ms: 77}\n", "t.yaml", g);
  EXPECT_EQ(g.request_slo_ms, 999u);
  EXPECT_EQ(g.stage_slo_ms, 77u);
}

TEST(SloFile, BadFilesAreErrorsNamingFileLineAndKey) {
  TempDir dir;
  { std::ofstream(dir.file("t.yaml")) << "glitch: {slo_file: missing.yaml}\n"; }
  std::string msg = error_of(dir.file("t.yaml"));
  EXPECT_NE(msg.find(dir.file("t.yaml") + ": glitch.slo_file: " + dir.file("missing.yaml")),
            std::string::npos)
      << msg;

  GlitchSettings g;
  auto apply_error = [&](const std::string& text) {
    try {
      apply_slo_file(text, "th.yaml", g);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted " << text;
    return std::string();
  };
  msg = apply_error("window: 5m\n");
  EXPECT_NE(msg.find("th.yaml:1: glitch: no glitch: section"), std::string::npos) << msg;
  msg = apply_error("window: 5m\nglitch:\n  stage_slo_ms: 0\n");
  EXPECT_NE(msg.find("th.yaml:3: glitch.stage_slo_ms"), std::string::npos) << msg;
  msg = apply_error("glitch: {p99_factor: 2}\n");  // only the SLOs belong to the file
  EXPECT_NE(msg.find("glitch.p99_factor: unknown key"), std::string::npos) << msg;
  EXPECT_EQ(g.stage_slo_ms, GlitchSettings{}.stage_slo_ms);  // nothing applied by a bad file
}

TEST(SloFile, TheShippedThresholdsHoldTheDaemonsDefaultSlos) {
  GlitchSettings g;
  g.request_slo_ms = g.stage_slo_ms = 1;
  const std::string path = std::string(TAILCAUSE_SOURCE_DIR) + "/deploy/prometheus/thresholds.yaml";
  apply_slo_file(read_config_file(path), path, g);
  const GlitchSettings defaults;
  EXPECT_EQ(g.request_slo_ms, defaults.request_slo_ms);
  EXPECT_EQ(g.stage_slo_ms, defaults.stage_slo_ms);
  EXPECT_EQ(g.stage_slos_ms, defaults.stage_slos_ms);
}
