// SPDX-License-Identifier: Apache-2.0
// The per-tenant table printed at the end of a run, from the same JSON as --report.
#pragma once

#include <nlohmann/json.hpp>

namespace rag {

void print_summary(const nlohmann::json& report);

}  // namespace rag
