// SPDX-License-Identifier: Apache-2.0
#include "export/journal.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

namespace tailcause::exporter {
namespace {

// The component columns, "on_cpu_s REAL NOT NULL, runqueue_s REAL NOT NULL, ..." with `suffix`
// after each name ("" for a column list).
std::string component_columns(const char* suffix) {
  std::string out;
  for (core::Component c : core::kAllComponents)
    out += fmt::format("{}{}{}", out.empty() ? "" : ", ", journal_column(c), suffix);
  return out;
}

// Schema v1. A column per component keeps queries like "sum of runqueue by tenant" plain SQL.
std::string schema_v1() {
  return fmt::format(R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta VALUES('last_batch', 0);
CREATE TABLE glitches(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  batch INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  tenant TEXT NOT NULL, agent TEXT NOT NULL, stage TEXT NOT NULL,
  wall_s REAL NOT NULL,
  {},
  page_cache_misses INTEGER NOT NULL,
  cause TEXT NOT NULL, verdict TEXT NOT NULL, evidence TEXT NOT NULL, trace_id TEXT NOT NULL);
CREATE INDEX glitches_time ON glitches(time_ns);
CREATE INDEX glitches_tenant_time ON glitches(tenant, time_ns);
CREATE INDEX glitches_stage_time ON glitches(stage, time_ns);
)sql",
                     component_columns(" REAL NOT NULL"));
}

// Schema v2: v1 plus the incidents, one row each, rewritten by key as they grow.
constexpr const char* kIncidentsSchema = R"sql(
CREATE TABLE incidents(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  key TEXT NOT NULL UNIQUE,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, active INTEGER NOT NULL,
  tenant TEXT NOT NULL, stage TEXT NOT NULL, stages TEXT NOT NULL,
  cause TEXT NOT NULL, cause_share REAL NOT NULL, slowed INTEGER NOT NULL,
  peak_ratio REAL NOT NULL, median_ratio REAL NOT NULL, baseline_s REAL NOT NULL,
  summary TEXT NOT NULL);
CREATE INDEX incidents_start ON incidents(start_ns);
CREATE INDEX incidents_tenant_start ON incidents(tenant, start_ns);
)sql";

// Schema v3: v2 plus one propagation tree per glitched request, and glitches by trace id.
constexpr const char* kPropagationSchema = R"sql(
CREATE TABLE propagation(
  trace_id TEXT PRIMARY KEY, time_ns INTEGER NOT NULL, tree TEXT NOT NULL);
CREATE INDEX propagation_time ON propagation(time_ns);
CREATE INDEX glitches_trace ON glitches(trace_id);
)sql";

// Schema v4: v3 plus the incident baselines, one row per (tenant, stage).
constexpr const char* kBaselinesSchema = R"sql(
CREATE TABLE baselines(
  tenant TEXT NOT NULL, stage TEXT NOT NULL, saved_ns INTEGER NOT NULL, count INTEGER NOT NULL,
  weights BLOB NOT NULL, mix BLOB NOT NULL, PRIMARY KEY(tenant, stage));
)sql";

constexpr const char* kIncidentColumns =
    "key, start_ns, end_ns, active, tenant, stage, stages, cause, cause_share, slowed, "
    "peak_ratio, median_ratio, baseline_s, summary";

// The columns a row is written from and read into, in this order (query() reads by position).
std::string row_columns() {
  return fmt::format(
      "batch, time_ns, tenant, agent, stage, wall_s, {}, page_cache_misses, cause, "
      "verdict, evidence, trace_id",
      component_columns(""));
}
constexpr int kRowColumns = 6 + static_cast<int>(core::kComponents) + 5;

std::string insert_sql() {
  std::string params;
  for (int i = 1; i <= kRowColumns; ++i) params += fmt::format("{}?{}", i > 1 ? "," : "", i);
  return fmt::format("INSERT INTO glitches({}) VALUES({})", row_columns(), params);
}

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

std::string column_text(sqlite3_stmt* s, int col) {
  const auto* text = sqlite3_column_text(s, col);
  return text ? std::string(reinterpret_cast<const char*>(text),
                            static_cast<size_t>(sqlite3_column_bytes(s, col)))
              : std::string();
}

void bind_text(sqlite3_stmt* s, int index, const std::string& value) {
  sqlite3_bind_text(s, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

}  // namespace

std::string journal_column(core::Component c) {
  return fmt::format("{}_s", core::component_name(c));
}

Journal::Journal(std::string path, JournalLimits limits) : path_(std::move(path)), limits_(limits) {
  if (limits_.max_age.count() <= 0 || limits_.max_rows < 0 || limits_.max_bytes < 0)
    throw std::invalid_argument(
        fmt::format("journal {}: max_age must be > 0, max_rows and max_bytes >= 0", path_));
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw JournalError(fmt::format("journal {}: cannot open: {}", path_, why));
  }
  try {
    sqlite3_busy_timeout(db_, 5000);
    // auto_vacuum only takes effect before the first table exists; pruned pages then shrink the
    // file.
    exec("PRAGMA auto_vacuum=INCREMENTAL");
    Stmt wal(prepare("PRAGMA journal_mode=WAL"));
    if (sqlite3_step(wal.get()) != SQLITE_ROW || column_text(wal.get(), 0) != "wal")
      fail("cannot switch to WAL mode");
    wal.reset();
    // NORMAL in WAL mode: a commit survives a process crash (kill -9); power loss may drop the
    // last commits but never corrupts the database.
    exec("PRAGMA synchronous=NORMAL");

    Stmt check(prepare("PRAGMA quick_check"));
    std::string problems;
    while (sqlite3_step(check.get()) == SQLITE_ROW) {
      std::string line = column_text(check.get(), 0);
      if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
    }
    if (sqlite3_errcode(db_) != SQLITE_DONE && sqlite3_errcode(db_) != SQLITE_OK)
      fail("integrity check could not run");
    if (!problems.empty())
      throw JournalError(fmt::format("journal {}: integrity check failed: {}", path_, problems));
    check.reset();

    int64_t version = scalar("PRAGMA user_version");
    if (version == 0) {
      create_schema();
    } else if (version > kSchemaVersion) {
      throw JournalError(fmt::format("journal {}: schema version {} is newer than this build ({})",
                                     path_, version, kSchemaVersion));
    } else if (version < kSchemaVersion) {
      migrate(version);
    }
    insert_ = prepare(insert_sql().c_str());
    next_batch_ =
        prepare("UPDATE meta SET value = value + 1 WHERE key = 'last_batch' RETURNING value");
  } catch (...) {
    sqlite3_finalize(insert_);
    sqlite3_finalize(next_batch_);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Journal::~Journal() {
  sqlite3_finalize(insert_);
  sqlite3_finalize(next_batch_);
  sqlite3_close_v2(db_);
}

void Journal::fail(const std::string& what) const {
  throw JournalError(fmt::format("journal {}: {}: {}", path_, what, sqlite3_errmsg(db_)));
}

void Journal::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw JournalError(fmt::format("journal {}: {}: {}", path_, sql, why));
  }
}

sqlite3_stmt* Journal::prepare(const char* sql) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK)
    fail(fmt::format("cannot prepare \"{}\"", sql));
  return stmt;
}

int64_t Journal::scalar(const char* sql) const {
  Stmt stmt(prepare(sql));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) fail(fmt::format("no result from \"{}\"", sql));
  return sqlite3_column_int64(stmt.get(), 0);
}

template <class Body>
void Journal::in_transaction(Body&& body) {
  exec("BEGIN IMMEDIATE");
  try {
    body();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Journal::create_schema() {
  in_transaction([&] {
    // Another process may have created it while we waited for the write lock.
    if (scalar("PRAGMA user_version") == 0) {
      exec(schema_v1().c_str());
      exec(kIncidentsSchema);
      exec(kPropagationSchema);
      exec(kBaselinesSchema);
      exec(fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str());
    }
  });
}

void Journal::migrate(int64_t from_version) {
  in_transaction([&] {
    // Another process may have upgraded it while we waited for the write lock.
    if (scalar("PRAGMA user_version") == from_version) {
      if (from_version < 2) exec(kIncidentsSchema);
      if (from_version < 3) exec(kPropagationSchema);
      if (from_version < 4) exec(kBaselinesSchema);
      exec(fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str());
    }
  });
}

void Journal::write_incidents(const std::vector<IncidentRow>& rows) {
  if (rows.empty()) return;
  const std::string sql = fmt::format(
      "INSERT INTO incidents({}) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14) "
      "ON CONFLICT(key) DO UPDATE SET start_ns=excluded.start_ns, end_ns=excluded.end_ns, "
      "active=excluded.active, stage=excluded.stage, stages=excluded.stages, "
      "cause=excluded.cause, cause_share=excluded.cause_share, slowed=excluded.slowed, "
      "peak_ratio=excluded.peak_ratio, median_ratio=excluded.median_ratio, "
      "baseline_s=excluded.baseline_s, summary=excluded.summary",
      kIncidentColumns);
  in_transaction([&] {
    Stmt stmt(prepare(sql.c_str()));
    sqlite3_stmt* s = stmt.get();
    for (const IncidentRow& row : rows) {
      if (row.key.empty()) throw std::invalid_argument("journal: an incident needs a key");
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      bind_text(s, 1, row.key);
      sqlite3_bind_int64(s, 2, row.start_ns);
      sqlite3_bind_int64(s, 3, row.end_ns);
      sqlite3_bind_int(s, 4, row.active ? 1 : 0);
      bind_text(s, 5, row.tenant);
      bind_text(s, 6, row.stage);
      bind_text(s, 7, row.stages);
      bind_text(s, 8, row.cause);
      sqlite3_bind_double(s, 9, row.cause_share);
      sqlite3_bind_int64(s, 10, row.slowed);
      sqlite3_bind_double(s, 11, row.peak_ratio);
      sqlite3_bind_double(s, 12, row.median_ratio);
      sqlite3_bind_double(s, 13, row.baseline_seconds);
      bind_text(s, 14, row.summary);
      if (sqlite3_step(s) != SQLITE_DONE) fail("cannot write an incident");
    }
    stmt.reset();
  });
}

void Journal::write_propagation(const std::vector<PropagationRow>& rows) {
  if (rows.empty()) return;
  in_transaction([&] {
    Stmt stmt(
        prepare("INSERT OR REPLACE INTO propagation(trace_id, time_ns, tree) VALUES(?1,?2,?3)"));
    sqlite3_stmt* s = stmt.get();
    for (const PropagationRow& row : rows) {
      if (row.trace_id.empty()) throw std::invalid_argument("journal: a tree needs a trace id");
      sqlite3_reset(s);
      bind_text(s, 1, row.trace_id);
      sqlite3_bind_int64(s, 2, row.time_ns);
      bind_text(s, 3, row.tree);
      if (sqlite3_step(s) != SQLITE_DONE) fail("cannot write a propagation tree");
    }
    stmt.reset();
  });
}

std::vector<PropagationRow> Journal::find_propagation(const std::string& prefix, int limit) const {
  const bool hex = !prefix.empty() && prefix.size() <= 32 &&
                   std::all_of(prefix.begin(), prefix.end(), [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (!hex)
    throw std::invalid_argument(
        fmt::format("journal: a trace id is 1 to 32 lower-case hex digits, got \"{}\"", prefix));
  if (limit < 1 || limit > kMaxQueryLimit)
    throw std::invalid_argument(fmt::format("journal: limit must be in 1..{}", kMaxQueryLimit));
  // A range on the primary key: every id from the prefix up to the prefix followed by 'g'.
  Stmt stmt(
      prepare("SELECT trace_id, time_ns, tree FROM propagation WHERE trace_id >= ?1 "
              "AND trace_id < ?2 ORDER BY time_ns DESC LIMIT ?3"));
  sqlite3_stmt* s = stmt.get();
  bind_text(s, 1, prefix);
  bind_text(s, 2, prefix + "g");
  sqlite3_bind_int(s, 3, limit);
  std::vector<PropagationRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    rows.push_back({column_text(s, 0), sqlite3_column_int64(s, 1), column_text(s, 2)});
  }
  if (rc != SQLITE_DONE) fail("propagation query failed");
  return rows;
}

int64_t Journal::propagation_count() const { return scalar("SELECT COUNT(*) FROM propagation"); }

namespace {
// Doubles as a blob (an empty one too: a null pointer would bind SQL NULL).
void bind_doubles(sqlite3_stmt* s, int col, const std::vector<double>& v) {
  if (v.empty()) {
    sqlite3_bind_zeroblob(s, col, 0);
  } else {
    sqlite3_bind_blob(s, col, v.data(), static_cast<int>(v.size() * sizeof(double)),
                      SQLITE_TRANSIENT);
  }
}
}  // namespace

void Journal::write_baselines(const std::vector<BaselineRow>& rows) {
  in_transaction([&] {
    exec("DELETE FROM baselines");
    Stmt stmt(
        prepare("INSERT INTO baselines(tenant, stage, saved_ns, count, weights, mix) "
                "VALUES(?1,?2,?3,?4,?5,?6)"));
    sqlite3_stmt* s = stmt.get();
    for (const BaselineRow& row : rows) {
      sqlite3_reset(s);
      bind_text(s, 1, row.tenant);
      bind_text(s, 2, row.stage);
      sqlite3_bind_int64(s, 3, row.saved_ns);
      sqlite3_bind_int64(s, 4, row.count);
      bind_doubles(s, 5, row.weights);
      bind_doubles(s, 6, row.mix);
      if (sqlite3_step(s) != SQLITE_DONE) fail("cannot write a baseline");
    }
    stmt.reset();
  });
}

namespace {
// A blob of doubles; a size that is not a whole number of them reads as none.
std::vector<double> column_doubles(sqlite3_stmt* s, int col) {
  const auto bytes = static_cast<size_t>(sqlite3_column_bytes(s, col));
  const void* blob = sqlite3_column_blob(s, col);
  if (!blob || bytes % sizeof(double) != 0) return {};
  std::vector<double> v(bytes / sizeof(double));
  std::memcpy(v.data(), blob, bytes);
  return v;
}
}  // namespace

std::vector<BaselineRow> Journal::read_baselines() const {
  Stmt stmt(prepare("SELECT tenant, stage, saved_ns, count, weights, mix FROM baselines"));
  sqlite3_stmt* s = stmt.get();
  std::vector<BaselineRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    rows.push_back({column_text(s, 0), column_text(s, 1), sqlite3_column_int64(s, 2),
                    sqlite3_column_int64(s, 3), column_doubles(s, 4), column_doubles(s, 5)});
  }
  if (rc != SQLITE_DONE) fail("baselines query failed");
  return rows;
}

namespace {

// Both queries take the same filter; refused before any SQL is prepared.
void check_filter(const JournalFilter& filter) {
  if (filter.since_ns < 0)
    throw std::invalid_argument(
        fmt::format("journal query: since must be >= 0, got {}", filter.since_ns));
  if (filter.tenant && filter.tenant->empty())
    throw std::invalid_argument("journal query: tenant must not be empty (omit it for all)");
  if (filter.stage && filter.stage->empty())
    throw std::invalid_argument("journal query: stage must not be empty (omit it for all)");
  if (filter.trace_id && filter.trace_id->empty())
    throw std::invalid_argument("journal query: trace_id must not be empty (omit it for all)");
  if (filter.limit < 1 || filter.limit > Journal::kMaxQueryLimit)
    throw std::invalid_argument(fmt::format("journal query: limit must be in 1..{}, got {}",
                                            Journal::kMaxQueryLimit, filter.limit));
}

}  // namespace

std::vector<IncidentRow> Journal::query_incidents(const JournalFilter& filter) const {
  check_filter(filter);
  const std::string sql = fmt::format(
      "SELECT id, {} FROM incidents WHERE (end_ns >= ?1 OR active = 1) "
      "AND (?2 IS NULL OR tenant = ?2) "
      "AND (?3 IS NULL OR instr(',' || stages || ',', ',' || ?3 || ',') > 0) "
      "ORDER BY start_ns DESC, id DESC LIMIT ?4",
      kIncidentColumns);
  Stmt stmt(prepare(sql.c_str()));
  sqlite3_stmt* s = stmt.get();
  sqlite3_bind_int64(s, 1, filter.since_ns);
  if (filter.tenant) bind_text(s, 2, *filter.tenant);
  if (filter.stage) bind_text(s, 3, *filter.stage);
  sqlite3_bind_int(s, 4, filter.limit);
  std::vector<IncidentRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    IncidentRow r;
    r.id = sqlite3_column_int64(s, 0);
    r.key = column_text(s, 1);
    r.start_ns = sqlite3_column_int64(s, 2);
    r.end_ns = sqlite3_column_int64(s, 3);
    r.active = sqlite3_column_int(s, 4) != 0;
    r.tenant = column_text(s, 5);
    r.stage = column_text(s, 6);
    r.stages = column_text(s, 7);
    r.cause = column_text(s, 8);
    r.cause_share = sqlite3_column_double(s, 9);
    r.slowed = sqlite3_column_int64(s, 10);
    r.peak_ratio = sqlite3_column_double(s, 11);
    r.median_ratio = sqlite3_column_double(s, 12);
    r.baseline_seconds = sqlite3_column_double(s, 13);
    r.summary = column_text(s, 14);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("incident query failed");
  return rows;
}

int64_t Journal::close_stale_incidents() {
  exec("UPDATE incidents SET active = 0 WHERE active = 1");
  return sqlite3_changes(db_);
}

int64_t Journal::incident_count() const { return scalar("SELECT COUNT(*) FROM incidents"); }

int64_t Journal::append(const std::vector<GlitchRow>& rows) {
  exec("BEGIN IMMEDIATE");
  try {
    sqlite3_reset(next_batch_);
    if (sqlite3_step(next_batch_) != SQLITE_ROW) fail("cannot allocate a batch id");
    const int64_t batch = sqlite3_column_int64(next_batch_, 0);
    sqlite3_reset(next_batch_);
    for (const GlitchRow& row : rows) {
      sqlite3_stmt* s = insert_;
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      const GlitchComponents& c = row.components;
      sqlite3_bind_int64(s, 1, batch);
      sqlite3_bind_int64(s, 2, row.time_ns);
      bind_text(s, 3, row.tenant);
      bind_text(s, 4, row.agent);
      bind_text(s, 5, row.stage);
      sqlite3_bind_double(s, 6, row.wall_seconds);
      int i = 7;
      for (double v : c.seconds) sqlite3_bind_double(s, i++, v);
      sqlite3_bind_int64(s, i++, row.page_cache_misses);
      bind_text(s, i++, row.cause);
      bind_text(s, i++, row.verdict);
      bind_text(s, i++, row.evidence);
      bind_text(s, i++, row.trace_id);
      if (sqlite3_step(s) != SQLITE_DONE) fail("cannot insert a glitch");
    }
    sqlite3_reset(insert_);
    exec("COMMIT");
    return batch;
  } catch (...) {
    sqlite3_reset(insert_);
    sqlite3_reset(next_batch_);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t Journal::prune() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return prune(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

int64_t Journal::prune(int64_t now_ns) {
  const int64_t before = row_count();
  in_transaction([&] {
    const int64_t cutoff =
        now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.max_age).count();
    Stmt by_age(prepare("DELETE FROM glitches WHERE time_ns < ?1"));
    sqlite3_bind_int64(by_age.get(), 1, cutoff);
    if (sqlite3_step(by_age.get()) != SQLITE_DONE) fail("cannot prune by age");
    Stmt incidents_by_age(prepare("DELETE FROM incidents WHERE active = 0 AND end_ns < ?1"));
    sqlite3_bind_int64(incidents_by_age.get(), 1, cutoff);
    if (sqlite3_step(incidents_by_age.get()) != SQLITE_DONE) fail("cannot prune incidents");

    // Oldest first: by time, then by insertion order.
    Stmt oldest(
        prepare("DELETE FROM glitches WHERE id IN "
                "(SELECT id FROM glitches ORDER BY time_ns ASC, id ASC LIMIT ?1)"));
    auto drop_oldest = [&](int64_t n) {
      sqlite3_reset(oldest.get());
      sqlite3_bind_int64(oldest.get(), 1, n);
      if (sqlite3_step(oldest.get()) != SQLITE_DONE) fail("cannot prune by size");
    };
    if (limits_.max_rows > 0) {
      const int64_t excess = row_count() - limits_.max_rows;
      if (excess > 0) drop_oldest(excess);
    }
    if (limits_.max_bytes > 0) {
      // Freed pages go to the freelist, so live bytes fall as rows go; a tenth at a time keeps
      // the loop short while not deleting much more than needed.
      for (int64_t rows = row_count(); rows > 0 && live_bytes() > limits_.max_bytes;
           rows = row_count())
        drop_oldest(std::max<int64_t>(1, rows / 10));
    }
    // A tree goes with the last glitch row of its request.
    exec("DELETE FROM propagation WHERE trace_id NOT IN (SELECT trace_id FROM glitches)");
  });
  exec("PRAGMA incremental_vacuum");  // hand freed pages back so the file shrinks
  return before - row_count();
}

std::vector<GlitchRow> Journal::query(const JournalFilter& filter) const {
  check_filter(filter);

  const std::string sql = fmt::format(
      "SELECT id, {} FROM glitches WHERE time_ns >= ?1 AND (?2 IS NULL OR tenant = ?2) "
      "AND (?3 IS NULL OR stage = ?3) AND (?5 IS NULL OR trace_id = ?5) "
      "ORDER BY time_ns DESC, id DESC LIMIT ?4",
      row_columns());
  Stmt stmt(prepare(sql.c_str()));
  sqlite3_stmt* s = stmt.get();
  sqlite3_bind_int64(s, 1, filter.since_ns);
  if (filter.tenant) bind_text(s, 2, *filter.tenant);  // unbound parameters are NULL
  if (filter.stage) bind_text(s, 3, *filter.stage);
  sqlite3_bind_int(s, 4, filter.limit);
  if (filter.trace_id) bind_text(s, 5, *filter.trace_id);

  std::vector<GlitchRow> rows;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    GlitchRow r;
    r.id = sqlite3_column_int64(s, 0);
    r.batch = sqlite3_column_int64(s, 1);
    r.time_ns = sqlite3_column_int64(s, 2);
    r.tenant = column_text(s, 3);
    r.agent = column_text(s, 4);
    r.stage = column_text(s, 5);
    r.wall_seconds = sqlite3_column_double(s, 6);
    GlitchComponents& c = r.components;
    int col = 7;
    for (double& v : c.seconds) v = sqlite3_column_double(s, col++);
    r.page_cache_misses = sqlite3_column_int64(s, col++);
    r.cause = column_text(s, col++);
    r.verdict = column_text(s, col++);
    r.evidence = column_text(s, col++);
    r.trace_id = column_text(s, col++);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) fail("query failed");
  return rows;
}

int64_t Journal::row_count() const { return scalar("SELECT COUNT(*) FROM glitches"); }

int64_t Journal::live_bytes() const {
  return (scalar("PRAGMA page_count") - scalar("PRAGMA freelist_count")) *
         scalar("PRAGMA page_size");
}

}  // namespace tailcause::exporter
