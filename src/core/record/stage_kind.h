// SPDX-License-Identifier: Apache-2.0
// The fixed stage kinds of the SDK's stage_begin, spelled once on the C++ side: a kind's number
// is its place in TAILCAUSE_STAGE_KINDS (the SDK's enum tailcause_stage and bpf/attrib.h's
// ATTRIB_STAGE_* number them alike: stage_record.cpp asserts it against the BPF ABI,
// tests/unit/test_sdk_contract.cpp and tests/sdk/check_sdk_contract.py against the C, C++ and
// Python SDKs), its name the stage label the daemon shows. Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

// In the SDK's order; `other` (last) is named by stage_begin's name argument.
#define TAILCAUSE_STAGE_KINDS(X) \
  X(prompt)                      \
  X(embedding)                   \
  X(retrieval)                   \
  X(generation)                  \
  X(tool)                        \
  X(response)                    \
  X(other)

#define TAILCAUSE_STAGE_KIND_ENUM(name) name,
enum class StageKind : uint32_t { TAILCAUSE_STAGE_KINDS(TAILCAUSE_STAGE_KIND_ENUM) };
#undef TAILCAUSE_STAGE_KIND_ENUM

#define TAILCAUSE_STAGE_KIND_NAME(name) #name,
inline constexpr std::array kStageKindNames = {TAILCAUSE_STAGE_KINDS(TAILCAUSE_STAGE_KIND_NAME)};
#undef TAILCAUSE_STAGE_KIND_NAME
inline constexpr size_t kStageKinds = kStageKindNames.size();

// The number StageRecord::kind carries for a kind.
constexpr uint32_t stage_kind_value(StageKind k) { return static_cast<uint32_t>(k); }
constexpr const char* stage_kind_name(StageKind k) { return kStageKindNames[stage_kind_value(k)]; }
// The kind a name spells; nullopt for any other text.
constexpr std::optional<StageKind> stage_kind_from_name(std::string_view name) {
  for (size_t i = 0; i < kStageKinds; ++i)
    if (name == kStageKindNames[i]) return static_cast<StageKind>(i);
  return std::nullopt;
}

}  // namespace tailcause::core
