// SPDX-License-Identifier: Apache-2.0
// The error parse_config() gives for `yaml` (read as file "f.yaml"); a test failure when it
// accepts it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/config/config.h"

namespace tailcause::testing {

inline std::string config_error(const std::string& yaml) {
  try {
    core::parse_config(yaml, "f.yaml");
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return "";
}

}  // namespace tailcause::testing
