// SPDX-License-Identifier: Apache-2.0
// The SDK contract, C and C++ sides: what the SDK's headers (sdk.h, sdk.hpp, sdk_lib.h), its
// breaker client (sdk/src/breaker.c), the BPF ABI (bpf/attrib.h) and the daemon's core each
// spell must agree: stage kinds and their names, string limits, the breaker socket's default
// path and its line limit. The Python SDK is held to the same by tests/sdk/check_sdk_contract.py.
#include <gtest/gtest.h>
#include <tailcause/sdk.hpp>
#include <tailcause/sdk_lib.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "bpf/attrib.h"
#include "core/config/config.h"
#include "core/detect/breaker_protocol.h"
#include "core/record/stage_kind.h"
#include "core/record/stage_record.h"

namespace {

namespace core = tailcause::core;
using core::StageKind;
using SdkKind = tailcause::StageKind;  // the C++ SDK's (sdk.hpp)

// The value of `#define NAME <number>` in a source file of this tree; -1 when absent.
long define_in(const std::string& relative_path, const std::string& name) {
  std::ifstream in(std::string(TAILCAUSE_SOURCE_DIR) + "/" + relative_path);
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  if (!std::regex_search(s, m, std::regex("#define[ \\t]+" + name + "[ \\t]+(\\d+)"))) return -1;
  return std::stol(m[1]);
}

TEST(SdkContract, StageKindsAreNumberedAlikeEverywhere) {
  // The C SDK, the C++ SDK and the core, kind by kind.
  const struct {
    long c_sdk;
    SdkKind cpp_sdk;
    StageKind core;
  } kinds[] = {
      {TAILCAUSE_STAGE_PROMPT, SdkKind::prompt, StageKind::prompt},
      {TAILCAUSE_STAGE_EMBEDDING, SdkKind::embedding, StageKind::embedding},
      {TAILCAUSE_STAGE_RETRIEVAL, SdkKind::retrieval, StageKind::retrieval},
      {TAILCAUSE_STAGE_GENERATION, SdkKind::generation, StageKind::generation},
      {TAILCAUSE_STAGE_TOOL, SdkKind::tool, StageKind::tool},
      {TAILCAUSE_STAGE_RESPONSE, SdkKind::response, StageKind::response},
      {TAILCAUSE_STAGE_OTHER, SdkKind::other, StageKind::other},
  };
  ASSERT_EQ(std::size(kinds), core::kStageKinds) << "a kind the contract test does not name";
  for (const auto& k : kinds) {
    const char* name = core::stage_kind_name(k.core);
    EXPECT_EQ(k.c_sdk, static_cast<long>(core::stage_kind_value(k.core))) << name;
    EXPECT_EQ(static_cast<long>(k.cpp_sdk), k.c_sdk) << name;
    // The name the C++ SDK passes for a fixed stage is the label the daemon shows.
    EXPECT_EQ(tailcause::stage_name(k.cpp_sdk), name);
    EXPECT_TRUE(core::stage_kind_from_name(name) == k.core) << name;
    if (k.core != StageKind::other) {
      EXPECT_EQ(core::stage_label(core::stage_kind_value(k.core), "", false, nullptr), name);
    }
  }
  // The BPF ABI: as many kinds, `other` last, the worker and follows markers alike.
  EXPECT_EQ(core::kStageKinds, static_cast<size_t>(ATTRIB_STAGE_KINDS));
  EXPECT_EQ(core::stage_kind_value(StageKind::other), static_cast<uint32_t>(ATTRIB_STAGE_OTHER));
  EXPECT_EQ(static_cast<long>(TAILCAUSE_STAGE_OTHER), static_cast<long>(ATTRIB_STAGE_OTHER));
  EXPECT_EQ(core::StageRecord::kWorkerSpanKind, static_cast<uint32_t>(ATTRIB_STAGE_NONE));
  EXPECT_EQ(TAILCAUSE_STAGE_FOLLOWS, ATTRIB_STAGE_FOLLOWS);
  EXPECT_GT(ATTRIB_STAGE_FOLLOWS, ATTRIB_STAGE_NONE) << "the follows bit must not hide a kind";
}

TEST(SdkContract, StringLimitsAreTheKernelsAndTheConfigurations) {
  EXPECT_EQ(TAILCAUSE_MAX_TENANT, ATTRIB_MAX_TENANT);
  EXPECT_EQ(TAILCAUSE_MAX_NAME, ATTRIB_MAX_NAME);
  // The kernel's fields hold the limit and one byte more (how it tells "too long").
  EXPECT_GT(ATTRIB_TENANT_SIZE, ATTRIB_MAX_TENANT);
  EXPECT_GT(ATTRIB_NAME_SIZE, ATTRIB_MAX_NAME);
  EXPECT_EQ(TAILCAUSE_TRACEPARENT_CHARS, ATTRIB_TRACE_ID_CHARS);
  // A uprobe recipe's stage name may be as long as an SDK stage name, and no longer.
  const auto recipe = [](size_t bytes) {
    return "probes:\n  attrib:\n    recipes:\n      - {library: libfoo.so, symbol: f, stage: " +
           std::string(bytes, 's') + "}\n";
  };
  EXPECT_NO_THROW(core::parse_config(recipe(TAILCAUSE_MAX_NAME), "t.yaml"));
  EXPECT_THROW(core::parse_config(recipe(TAILCAUSE_MAX_NAME + 1), "t.yaml"), core::ConfigError);
}

TEST(SdkContract, BreakerSocketPathAndLineLimit) {
  EXPECT_EQ(core::Config{}.breaker.socket, TAILCAUSE_SDK_BREAKER_SOCKET_DEFAULT);
  // The C client's limit is private to breaker.c: read from its source.
  EXPECT_EQ(define_in("sdk/src/breaker.c", "BREAKER_MAX_LINE"),
            static_cast<long>(core::kBreakerMaxLine));
}

}  // namespace
