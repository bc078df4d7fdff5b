// SPDX-License-Identifier: Apache-2.0
// The probes.attrib configuration section.
#include <gtest/gtest.h>

#include "core/config/config.h"

namespace tailcause::core {
namespace {

TEST(StageConfig, DefaultsAttachToEveryProcess) {
  const Config c = parse_config("", "t.yaml");
  EXPECT_TRUE(c.attrib.enabled);
  EXPECT_EQ(c.attrib.pid, 0u);
  EXPECT_TRUE(c.attrib.binary.empty());
}

TEST(StageConfig, NarrowsToOneProcessOrBinary) {
  const Config c = parse_config(
      "probes:\n  attrib:\n    enabled: false\n    pid: 1234\n    binary: /opt/agent/bin/agent\n",
      "t.yaml");
  EXPECT_FALSE(c.attrib.enabled);
  EXPECT_EQ(c.attrib.pid, 1234u);
  EXPECT_EQ(c.attrib.binary, "/opt/agent/bin/agent");
  EXPECT_EQ(parse_config("probes:\n  attrib:\n    pid: 0\n", "t.yaml").attrib.pid, 0u);
}

TEST(StageConfig, RejectsBadValuesNamingTheKey) {
  for (const char* bad : {"probes:\n  attrib:\n    pid: -1\n", "probes:\n  attrib:\n    pid: abc\n",
                          "probes:\n  attrib:\n    pid: 99999999\n",
                          "probes:\n  attrib:\n    binary: relative/path\n",
                          "probes:\n  attrib:\n    colour: blue\n"}) {
    try {
      parse_config(bad, "t.yaml");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("probes.attrib."), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("t.yaml:3"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tailcause::core
