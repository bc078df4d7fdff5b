// SPDX-License-Identifier: Apache-2.0
// The example configuration shipped in deploy/ documents the defaults: it must parse and equal
// them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/config/config.h"

TEST(ShippedConfig, ParsesAndEqualsTheBuiltInDefaults) {
  const std::string path = std::string(TAILCAUSE_SOURCE_DIR) + "/deploy/tailcause.yaml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const auto config = tailcause::core::parse_config(text.str(), path);
  EXPECT_EQ(config, tailcause::core::Config{});
}
