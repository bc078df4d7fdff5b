// SPDX-License-Identifier: Apache-2.0
// The glitch journal: every glitch with its breakdown, evidence and trace id, kept in SQLite
// (WAL mode, synchronous=NORMAL) so it survives kill -9 with at most the last uncommitted batch
// lost. Bounded by age and by rows or bytes via prune(). One Journal is one connection: use it
// from one thread at a time (a second process may open the same file; WAL serialises writers).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/record/schema.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tailcause::exporter {

struct JournalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Seconds each kernel cause explained, in core::Component order; a column each
// (journal_column()).
struct GlitchComponents {
  std::array<double, core::kComponents> seconds{};
  double& operator[](core::Component c) { return seconds[core::index_of(c)]; }
  double operator[](core::Component c) const { return seconds[core::index_of(c)]; }
  bool operator==(const GlitchComponents&) const = default;
};

// The journal column of a component: its name with the unit, "runqueue_s". Renaming a
// component renames its column, which needs a schema version and a migration.
std::string journal_column(core::Component c);

struct GlitchRow {
  int64_t id = 0;       // assigned by the journal on append (read back by query)
  int64_t batch = 0;    // the append() call that wrote it: a batch is all present or all absent
  int64_t time_ns = 0;  // ns since the Unix epoch
  std::string tenant, agent, stage;
  double wall_seconds = 0;
  GlitchComponents components;
  int64_t page_cache_misses = 0;
  std::string cause;  // the leading component
  std::string verdict, evidence, trace_id;
};

// A sustained slowdown (core::Incident) as the journal keeps it: one row per incident,
// written when it opens and rewritten as it grows and when it ends.
struct IncidentRow {
  int64_t id = 0;   // assigned by the journal (read back by query_incidents)
  std::string key;  // the writer's unique name for it: a rewrite replaces the row with this key
  int64_t start_ns = 0, end_ns = 0;  // ns since the Unix epoch: first and last slowed stage
  bool active = false;               // still under way when last written
  std::string tenant;
  std::string stage;   // the stage it slowed most
  std::string stages;  // every stage it slowed, comma-separated, in the order they shifted
  std::string cause;   // the component that grew most, or "slow"
  double cause_share = 0;
  int64_t slowed = 0;  // stages at factor x their baseline median or more
  double peak_ratio = 0, median_ratio = 0;
  double baseline_seconds = 0;  // the leading stage's baseline median
  std::string summary;          // core::Incident::describe()
};

// One glitched request's propagation tree (core::propagation_json), keyed by its trace id.
struct PropagationRow {
  std::string trace_id;  // 32 hex digits
  int64_t time_ns = 0;   // ns since the Unix epoch: the request's end
  std::string tree;      // JSON
};

// An incident baseline of a (tenant, stage), kept so that a restarted daemon judges at once
// (core::SavedBaseline, as blobs of host-order doubles).
struct BaselineRow {
  std::string tenant, stage;
  int64_t saved_ns = 0;  // ns since the Unix epoch
  int64_t count = 0;     // samples it learned
  std::vector<double> weights, mix;
};

struct JournalLimits {
  std::chrono::seconds max_age{std::chrono::hours(24 * 7)};
  int64_t max_rows = 0;   // 0: no row bound
  int64_t max_bytes = 0;  // 0: no size bound (bytes of live database pages, approximate)
};

struct JournalFilter {
  int64_t since_ns = 0;                      // rows with time_ns >= since_ns; negative is rejected
  std::optional<std::string> tenant, stage;  // exact match; an empty string is rejected
  std::optional<std::string> trace_id;       // glitches only: exact match, non-empty
  int limit = 100;                           // 1..kMaxQueryLimit
};

class Journal {
 public:
  // 1: glitches; 2: incidents added; 3: propagation trees and a trace id index added (an older
  // journal is upgraded when opened).
  static constexpr int kSchemaVersion = 4;
  static constexpr int kMaxQueryLimit = 100000;

  // Opens or creates `path`; throws JournalError when it cannot, when the integrity check fails
  // or when the schema is newer than this build knows.
  Journal(std::string path, JournalLimits limits);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Writes `rows` in one transaction (callers batch about once a second); returns the batch id.
  // The rows' id and batch fields are ignored.
  int64_t append(const std::vector<GlitchRow>& rows);

  // Inserts incidents, or rewrites those whose key is already there, in one transaction.
  void write_incidents(const std::vector<IncidentRow>& rows);
  // Newest start first; `since_ns` keeps incidents that ended (or are active) at or after it;
  // `stage` matches any stage an incident slowed. Throws std::invalid_argument like query().
  std::vector<IncidentRow> query_incidents(const JournalFilter& filter) const;
  // Marks incidents left active by a writer that is gone (a daemon killed mid-incident) as
  // ended at their last slowed stage. Returns how many.
  int64_t close_stale_incidents();
  int64_t incident_count() const;

  // Inserts propagation trees, replacing one with the same trace id, in one transaction.
  void write_propagation(const std::vector<PropagationRow>& rows);
  // The trees whose trace id starts with `prefix` (1..32 hex digits, else std::invalid_argument),
  // newest first, at most `limit`.
  std::vector<PropagationRow> find_propagation(const std::string& prefix, int limit = 2) const;
  int64_t propagation_count() const;

  // The incident baselines: all of them replaced by `rows`; and read back (at start).
  void write_baselines(const std::vector<BaselineRow>& rows);
  std::vector<BaselineRow> read_baselines() const;

  // Deletes rows older than now - max_age, then the oldest rows beyond max_rows / max_bytes,
  // then the propagation trees no glitch row refers to. Returns how many glitch rows went.
  int64_t prune();
  int64_t prune(int64_t now_ns);

  // Newest first (by time, then by id). Throws std::invalid_argument on bad filter values.
  std::vector<GlitchRow> query(const JournalFilter& filter) const;

  int64_t row_count() const;
  // Bytes held by live pages ((page_count - freelist_count) * page_size).
  int64_t live_bytes() const;
  const std::string& path() const { return path_; }

 private:
  void exec(const char* sql) const;
  // Runs `body` in one write transaction (BEGIN IMMEDIATE .. COMMIT), rolled back if it throws.
  template <class Body>
  void in_transaction(Body&& body);
  int64_t scalar(const char* sql) const;
  void create_schema();
  void migrate(int64_t from_version);
  sqlite3_stmt* prepare(const char* sql) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  JournalLimits limits_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* next_batch_ = nullptr;
};

}  // namespace tailcause::exporter
