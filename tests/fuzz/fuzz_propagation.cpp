// SPDX-License-Identifier: Apache-2.0
// libFuzzer: propagation trees as the journal keeps them (`glitches --show` reads them back from
// a file anyone with access may have edited). A document is a tree or std::invalid_argument,
// never another exception or a crash; a tree it accepts renders, and survives the round trip
// through propagation_json unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/trace/propagation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  PropagationTree tree;
  try {
    tree = propagation_from_json(doc);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  (void)render_propagation(tree);
  if (propagation_from_json(propagation_json(tree)) != tree) std::abort();
  return 0;
}
