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

#include "core/schema.h"

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

struct JournalLimits {
  std::chrono::seconds max_age{std::chrono::hours(24 * 7)};
  int64_t max_rows = 0;   // 0: no row bound
  int64_t max_bytes = 0;  // 0: no size bound (bytes of live database pages, approximate)
};

struct JournalFilter {
  int64_t since_ns = 0;                      // rows with time_ns >= since_ns; negative is rejected
  std::optional<std::string> tenant, stage;  // exact match; an empty string is rejected
  int limit = 100;                           // 1..kMaxQueryLimit
};

class Journal {
 public:
  static constexpr int kSchemaVersion = 1;
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

  // Deletes rows older than now - max_age, then the oldest rows beyond max_rows / max_bytes.
  // Returns how many rows went.
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
  int64_t scalar(const char* sql) const;
  void create_schema();
  sqlite3_stmt* prepare(const char* sql) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  JournalLimits limits_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* next_batch_ = nullptr;
};

}  // namespace tailcause::exporter
