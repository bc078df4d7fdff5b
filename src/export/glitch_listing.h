// SPDX-License-Identifier: Apache-2.0
// `tailcause glitches`: journal rows as a table people read (newest first, each explained by
// its verdict's evidence line) or as JSON for machines. Pure: no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export/journal.h"

namespace tailcause::exporter {

// "2024-05-01T14:03:07.412+02:00" in the process's local time zone (TZ).
std::string format_local_time(int64_t unix_ns);

// A header, then two lines per row: time, tenant, stage, wall time and cause, and under it the
// evidence (the verdict when the row has no evidence). "no glitches ..." when `rows` is empty;
// `what` describes the query there ("in the last 1h for tenant ta").
std::string render_glitch_table(const std::vector<GlitchRow>& rows, const std::string& what);

// One object per row with every GlitchRow field; components as an object of seconds keyed by
// core::component_name().
nlohmann::json glitch_rows_json(const std::vector<GlitchRow>& rows);

}  // namespace tailcause::exporter
