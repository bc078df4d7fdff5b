// SPDX-License-Identifier: Apache-2.0
// `tailcause glitches`: lists the journal's glitches, newest first, each explained by its
// verdict; with --incidents, its incidents (sustained slowdowns), newest first; with --show
// TRACE, one glitched request's propagation tree (who waited on whom, for how long and why). Reads
// the journal a running daemon may be writing (SQLite WAL allows it); never creates one.
#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/config/duration.h"
#include "core/host/clock.h"
#include "core/trace/propagation.h"
#include "daemon/startup.h"
#include "export/glitch_listing.h"
#include "export/incident_listing.h"
#include "export/journal.h"

namespace tailcause::cli {
namespace {

// "in the last 1h for tenant ta, stage generation": what the listing covers.
std::string describe(const GlitchesOptions& o) {
  std::string out;
  if (o.since) out += fmt::format("in the last {}", *o.since);
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  if (o.tenant) add(fmt::format("for tenant {}", *o.tenant));
  if (o.stage) add(fmt::format("{}stage {}", o.tenant ? "" : "for ", *o.stage));
  return out;
}

// `--show TRACE`: the propagation tree the daemon kept for one glitched request, then the
// request's glitch rows.
int show_propagation(const std::string& path, const std::string& prefix, bool json) {
  std::vector<exporter::PropagationRow> trees;
  std::vector<exporter::GlitchRow> rows;
  try {
    exporter::Journal journal(path, exporter::JournalLimits{});
    trees = journal.find_propagation(prefix, 2);
    exporter::JournalFilter filter;
    filter.trace_id = trees.size() == 1 ? trees[0].trace_id : prefix;
    filter.limit = exporter::Journal::kMaxQueryLimit;
    if (trees.size() <= 1) rows = journal.query(filter);
  } catch (const std::exception& e) {  // JournalError, or invalid_argument
    fmt::print(stderr, "tailcause glitches: {}\n", e.what());
    return 1;
  }
  if (trees.size() > 1) {
    fmt::print(stderr,
               "tailcause glitches: trace id prefix {} is ambiguous ({}, {}, ...): give more "
               "digits\n",
               prefix, trees[0].trace_id, trees[1].trace_id);
    return 1;
  }
  if (trees.empty()) {
    fmt::print(stderr,
               "tailcause glitches: no propagation tree for trace {} in {}{} (one is kept for "
               "each glitched request that ended; `tailcause glitches` lists their trace ids)\n",
               prefix, path,
               rows.empty() ? "" : fmt::format(", though it has {} glitch row(s)", rows.size()));
    return 1;
  }
  core::PropagationTree tree;
  try {
    tree = core::propagation_from_json(nlohmann::json::parse(trees[0].tree));
  } catch (const std::exception& e) {  // json::parse_error, or invalid_argument
    fmt::print(stderr, "tailcause glitches: {}: the tree of trace {} is damaged: {}\n", path,
               trees[0].trace_id, e.what());
    return 1;
  }
  if (json) {
    nlohmann::json out = {{"trace_id", trees[0].trace_id},
                          {"time", exporter::format_local_time(trees[0].time_ns)},
                          {"tree", core::propagation_json(tree)},
                          {"glitches", exporter::glitch_rows_json(rows)}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("{}  {}", exporter::format_local_time(trees[0].time_ns),
             core::render_propagation(tree));
  fmt::print("\n{}", exporter::render_glitch_table(rows, "in this request"));
  return 0;
}

// The rows the flags ask for (--since, --tenant, --stage, --limit).
exporter::JournalFilter journal_filter(const GlitchesOptions& o) {
  exporter::JournalFilter filter;
  if (o.since) {  // validated: more than zero
    const uint64_t back = core::parse_duration_ns(*o.since);
    const int64_t now = core::realtime_ns();
    filter.since_ns = static_cast<int64_t>(back) >= now ? 0 : now - static_cast<int64_t>(back);
  }
  filter.tenant = o.tenant;
  filter.stage = o.stage;
  filter.limit = o.limit;
  return filter;
}

// The journal to read: --journal, else the configuration's journal.path; nothing (and why, on
// stderr) when the journal is disabled or the file is missing.
std::optional<std::string> journal_path(const GlitchesOptions& o) {
  std::string path = o.journal_path;
  if (path.empty()) {
    try {
      daemon::StartOptions from;
      from.config_path = o.config_path;
      path = daemon::load_config(from).journal.path;
    } catch (const core::ConfigError& e) {
      throw daemon::StartupError(fmt::format("configuration error: {}", e.what()));
    }
    if (path.empty()) {
      fmt::print(stderr,
                 "tailcause glitches: the journal is disabled (journal.path is empty in {}); "
                 "pass --journal PATH to read one\n",
                 o.config_path.empty() ? "the defaults" : o.config_path);
      return std::nullopt;
    }
  }
  // Opening would create an empty journal: a missing file is reported instead.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    fmt::print(stderr,
               "tailcause glitches: no journal at {}{} (the daemon creates it when it runs with "
               "journal.path set; pass --journal PATH or --config FILE to read another)\n",
               path, ec && ec != std::errc::no_such_file_or_directory ? ": " + ec.message() : "");
    return std::nullopt;
  }
  return path;
}

}  // namespace

int list_glitches(const GlitchesOptions& o) {
  const exporter::JournalFilter filter = journal_filter(o);
  const std::optional<std::string> found = journal_path(o);
  if (!found) return 1;
  const std::string& path = *found;

  if (o.show) return show_propagation(path, *o.show, o.json);

  std::vector<exporter::GlitchRow> rows;
  std::vector<exporter::IncidentRow> incidents;
  try {
    exporter::Journal journal(path, exporter::JournalLimits{});
    if (o.incidents || !o.json) incidents = journal.query_incidents(filter);
    if (!o.incidents) rows = journal.query(filter);
  } catch (const std::exception& e) {  // JournalError, or invalid_argument from the filter
    fmt::print(stderr, "tailcause glitches: {}\n", e.what());
    return 1;
  }
  if (o.incidents) {
    if (o.json) {
      fmt::print("{}\n", exporter::incident_rows_json(incidents).dump(2));
    } else {
      fmt::print("{}", exporter::render_incident_table(incidents, describe(o)));
    }
    return 0;
  }
  if (o.json) {
    fmt::print("{}\n", exporter::glitch_rows_json(rows).dump(2));
  } else {
    fmt::print("{}", exporter::render_glitch_table(rows, describe(o)));
    // Sustained slowdowns are listed apart: say so when the range holds some.
    if (!incidents.empty()) {
      fmt::print(
          "\n{} incident{} (sustained slowdown{}) in this range: tailcause glitches "
          "--incidents\n",
          incidents.size(), incidents.size() == 1 ? "" : "s", incidents.size() == 1 ? "" : "s");
    }
  }
  return 0;
}

}  // namespace tailcause::cli
