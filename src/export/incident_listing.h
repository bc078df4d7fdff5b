// SPDX-License-Identifier: Apache-2.0
// `tailcause glitches --incidents`: the journal's incidents (sustained slowdowns) as a table
// people read, newest first, or as JSON for machines. Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export/journal.h"

namespace tailcause::exporter {

// A header, then two lines per incident: start, end (or "ongoing"), tenant, stages, cause,
// slowed stages and ratios, and under it its summary. "no incidents ..." when `rows` is empty;
// `what` describes the query ("in the last 1h for tenant ta").
std::string render_incident_table(const std::vector<IncidentRow>& rows, const std::string& what);

// One object per incident with every IncidentRow field (stages as an array).
nlohmann::json incident_rows_json(const std::vector<IncidentRow>& rows);

}  // namespace tailcause::exporter
