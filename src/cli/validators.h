// SPDX-License-Identifier: Apache-2.0
// CLI11 validators for tailcause's flags, so that every bad flag is a CLI::ValidationError
// ("--since: invalid duration '5x': unknown unit 'x'") and main maps it to exit 2 in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tailcause::cli {

// A duration as core::parse_duration_ns reads it, within [min_ns, max_ns]; `range` says the
// bound in words for the message ("at least 1s", "between 1s and 1h").
CLI::Validator duration_within(uint64_t min_ns, uint64_t max_ns, const std::string& range);
// HOST:PORT as the configuration's listen: takes it.
CLI::Validator listen_address();
// http://HOST[:PORT] of a daemon's endpoint, for the JSON API's clients (top, heatmap).
CLI::Validator api_url();
// A heatmap as `heatmap --metric` names it: stage:NAME, tcp_rtt, tcp_duration or layers.
CLI::Validator heatmap_metric();
// A file name ending in one of `suffixes` (".svg", ".png").
CLI::Validator file_suffix(const std::vector<std::string>& suffixes);
// A regular file this process may execute.
CLI::Validator executable_file();
// Anything but ""; `hint` ends the message ("omit --tenant for all tenants").
CLI::Validator non_empty(const std::string& what, const std::string& hint);
// A W3C trace id or a prefix of one: 8 to 32 hex digits, taken in lower case.
CLI::Validator trace_id_prefix();
// A whole number in [lo, hi]: "`what` must be in lo..hi, got X".
CLI::Validator integer_within(int64_t lo, int64_t hi, const std::string& what);

}  // namespace tailcause::cli
