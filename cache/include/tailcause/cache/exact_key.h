// SPDX-License-Identifier: Apache-2.0
// The exact key of a query: the model version and the unit vector quantised to a grid of
// `step`, hashed. Float noise well below the step (re-running the same embedding, a different
// summation order) gives the same key; a new model version gives different keys.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tailcause::cache {

uint64_t exact_key(std::string_view model_version, std::span<const float> unit_vector, float step);

}  // namespace tailcause::cache
