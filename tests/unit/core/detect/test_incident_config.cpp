// SPDX-License-Identifier: Apache-2.0
// glitch.incident: every key parsed, the defaults as shipped, bad values refused with the file,
// line and key, and the detector's settings derived from it.
#include <gtest/gtest.h>

#include <string>

#include "config_error.h"
#include "core/config/config.h"
#include "core/detect/incident_detector.h"

using namespace tailcause::core;
using tailcause::testing::config_error;

namespace {

TEST(IncidentConfig, EveryKeyIsParsed) {
  Config c = parse_config(R"(
top_k: 7
glitch:
  incident:
    enabled: false
    factor: 3
    min_samples: 50
    horizon: 1000
    window: 9
    min_excess_ms: 2.5
    quiet_s: 12
)",
                          "f.yaml");
  const IncidentSettings& i = c.glitch.incident;
  EXPECT_FALSE(i.enabled);
  EXPECT_DOUBLE_EQ(i.factor, 3.0);
  EXPECT_EQ(i.min_samples, 50u);
  EXPECT_EQ(i.horizon, 1000u);
  EXPECT_EQ(i.window, 9u);
  EXPECT_DOUBLE_EQ(i.min_excess_ms, 2.5);
  EXPECT_EQ(i.quiet_s, 12u);
  const IncidentConfig d = incident_config(c);
  EXPECT_FALSE(d.enabled);
  EXPECT_DOUBLE_EQ(d.factor, 3.0);
  EXPECT_EQ(d.min_samples, 50u);
  EXPECT_EQ(d.horizon, 1000u);
  EXPECT_EQ(d.window, 9u);
  EXPECT_EQ(d.quiet_ns, 12'000'000'000u);
  EXPECT_EQ(d.min_excess_ns, 2'500'000u);
  EXPECT_EQ(d.top_k, 7u);
}

TEST(IncidentConfig, DefaultsMatchTheDetectors) {
  const Config c = parse_config("glitch:\n  incident: {}\n", "f.yaml");
  EXPECT_EQ(c.glitch.incident, IncidentSettings{});
  const IncidentConfig d = incident_config(c);
  const IncidentConfig plain;
  EXPECT_EQ(d.factor, plain.factor);
  EXPECT_EQ(d.min_samples, plain.min_samples);
  EXPECT_EQ(d.horizon, plain.horizon);
  EXPECT_EQ(d.window, plain.window);
  EXPECT_EQ(d.quiet_ns, plain.quiet_ns);
  EXPECT_EQ(d.min_excess_ns, plain.min_excess_ns);
}

TEST(IncidentConfig, BadValuesNameFileLineAndKey) {
  auto starts = [](const std::string& error, const std::string& prefix) {
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
  };
  starts(config_error("glitch:\n  incident:\n    factor: 1.0\n"),
         "f.yaml:3: glitch.incident.factor: expected a number from 1.2 to 100");
  starts(config_error("glitch:\n  incident:\n    factor: fast\n"),
         "f.yaml:3: glitch.incident.factor:");
  starts(config_error("glitch:\n  incident:\n    window: 2\n"),
         "f.yaml:3: glitch.incident.window: expected 3 to 1001, got 2");
  starts(config_error("glitch:\n  incident:\n    window: 5000\n"),
         "f.yaml:3: glitch.incident.window:");
  starts(config_error("glitch:\n  incident:\n    min_samples: 5\n"),
         "f.yaml:3: glitch.incident.min_samples: expected 20 to 1000000, got 5");
  starts(config_error("glitch:\n  incident:\n    horizon: 10\n"),
         "f.yaml:3: glitch.incident.horizon: expected 100 to 10000000, got 10");
  starts(config_error("glitch:\n  incident:\n    min_excess_ms: -1\n"),
         "f.yaml:3: glitch.incident.min_excess_ms: expected a number from 0 to 60000");
  starts(config_error("glitch:\n  incident:\n    quiet_s: 0\n"),
         "f.yaml:3: glitch.incident.quiet_s:");
  starts(config_error("glitch:\n  incident:\n    enabled: maybe\n"),
         "f.yaml:3: glitch.incident.enabled: expected true or false");
  starts(config_error("glitch:\n  incident:\n    sensitivity: 2\n"),
         "f.yaml:3: glitch.incident.sensitivity: unknown key");
  starts(config_error("glitch:\n  incident: 2\n"), "f.yaml:2: glitch.incident: expected a mapping");
}

}  // namespace
