// SPDX-License-Identifier: Apache-2.0
// The glitch journal on a real SQLite file under /tmp: round trip, filters, pruning bounds,
// reopen, refusing corrupt or newer files, and surviving kill -9 in the middle of appends.
#include "export/journal.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

namespace fs = std::filesystem;
using tailcause::exporter::GlitchRow;
using tailcause::exporter::Journal;
using tailcause::exporter::JournalError;
using tailcause::exporter::JournalFilter;
using tailcause::exporter::JournalLimits;

namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kSecond;  // a fixed "now" for the pruning tests

struct TempDir : tailcause::testing::TempDir {
  std::string file(const char* name = "journal.db") const { return (path / name).string(); }
};

GlitchRow make_row(int64_t time_ns, std::string tenant, std::string stage, std::string trace_id) {
  GlitchRow r;
  r.time_ns = time_ns;
  r.tenant = std::move(tenant);
  r.agent = "agent-7";
  r.stage = std::move(stage);
  r.wall_seconds = 1.25;
  r.components = {0.1, 0.6, 0.2, 0.05, 0.04, 0.03, 0.02, 0.01, 0.2};
  r.page_cache_misses = 42;
  r.cause = "runqueue";
  r.verdict = "runqueue: 0.60 s of 1.25 s waiting for a CPU";
  r.evidence = "run_delay p99 480ms; nr_running 9 on cpu 1";
  r.trace_id = std::move(trace_id);
  return r;
}

// A scalar from a raw SQLite connection, to check the file independently of Journal.
std::string raw_text(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_stmt* s = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

std::vector<GlitchRow> all_rows(const Journal& j) {
  JournalFilter f;
  f.limit = Journal::kMaxQueryLimit;
  return j.query(f);
}

}  // namespace

TEST(Journal, RoundTripKeepsEveryFieldAndUsesWal) {
  TempDir dir;
  Journal j(dir.file(), JournalLimits{});
  GlitchRow older = make_row(kNow, "tenant-a", "retrieve", "trace-1");
  GlitchRow newer = make_row(kNow + kSecond, "tenant-b", "generate", "trace-2");
  newer.components[tailcause::core::Component::gpu] = 0.9;
  newer.cause = "gpu";
  newer.evidence = "quote ' and \"double\" and unicode µs";
  const int64_t batch = j.append({older, newer});
  EXPECT_GT(j.append({}), batch);  // an empty batch still gets its own id

  auto rows = all_rows(j);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].trace_id, "trace-2");  // newest first
  for (auto [got, want] : {std::pair{rows[0], newer}, std::pair{rows[1], older}}) {
    EXPECT_EQ(got.batch, batch);
    EXPECT_EQ(got.time_ns, want.time_ns);
    EXPECT_EQ(got.tenant, want.tenant);
    EXPECT_EQ(got.agent, want.agent);
    EXPECT_EQ(got.stage, want.stage);
    EXPECT_EQ(got.wall_seconds, want.wall_seconds);
    EXPECT_EQ(got.components, want.components);
    EXPECT_EQ(got.page_cache_misses, want.page_cache_misses);
    EXPECT_EQ(got.cause, want.cause);
    EXPECT_EQ(got.verdict, want.verdict);
    EXPECT_EQ(got.evidence, want.evidence);
    EXPECT_EQ(got.trace_id, want.trace_id);
  }
  EXPECT_NE(rows[0].id, rows[1].id);
  EXPECT_EQ(raw_text(dir.file(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_text(dir.file(), "PRAGMA user_version"), std::to_string(Journal::kSchemaVersion));
}

// Every component (core/record/schema.h) has its own column, "<name>_s", that holds its seconds and
// reads back into the same component; v1's column names stay what existing journals hold.
TEST(Journal, EveryComponentHasItsOwnColumn) {
  using tailcause::core::Component;
  EXPECT_EQ(tailcause::exporter::journal_column(Component::runqueue), "runqueue_s");
  EXPECT_EQ(tailcause::exporter::journal_column(Component::unattributed), "unattributed_s");
  TempDir dir;
  Journal j(dir.file(), JournalLimits{});
  std::set<std::string> columns;
  for (Component c : tailcause::core::kAllComponents) {
    const std::string column = tailcause::exporter::journal_column(c);
    SCOPED_TRACE(column);
    EXPECT_TRUE(columns.insert(column).second);
    GlitchRow row = make_row(kNow, "tenant-a", column, "trace");
    row.components = {};
    row.components[c] = 0.25;
    j.append({row});
    EXPECT_EQ(
        raw_text(dir.file(),
                 fmt::format("SELECT {} FROM glitches WHERE stage = '{}'", column, column).c_str()),
        "0.25");
    JournalFilter f;
    f.stage = column;
    const auto rows = j.query(f);
    ASSERT_EQ(rows.size(), 1u);
    for (Component other : tailcause::core::kAllComponents)
      EXPECT_EQ(rows[0].components[other], other == c ? 0.25 : 0.0)
          << tailcause::core::component_name(other);
  }
}

TEST(Journal, FiltersBySinceTenantStageAndLimit) {
  TempDir dir;
  Journal j(dir.file(), JournalLimits{});
  std::vector<GlitchRow> batch;
  for (int i = 0; i < 40; ++i)
    batch.push_back(make_row(kNow + i * kSecond, i % 2 ? "a" : "b", i % 4 < 2 ? "x" : "y",
                             fmt::format("t{}", i)));
  j.append(batch);

  JournalFilter f;
  f.limit = 1000;
  f.since_ns = kNow + 30 * kSecond;
  auto rows = j.query(f);
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows.front().trace_id, "t39");
  EXPECT_EQ(rows.back().trace_id, "t30");

  f = {};
  f.limit = 1000;
  f.tenant = "a";
  rows = j.query(f);
  ASSERT_EQ(rows.size(), 20u);
  for (const auto& r : rows) EXPECT_EQ(r.tenant, "a");

  f.stage = "y";  // tenant a (odd i) and stage y (i % 4 in {2,3}): i % 4 == 3
  rows = j.query(f);
  ASSERT_EQ(rows.size(), 10u);
  for (size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(rows[k].tenant, "a");
    EXPECT_EQ(rows[k].stage, "y");
    EXPECT_EQ(rows[k].trace_id, fmt::format("t{}", 39 - 4 * static_cast<int>(k)));
  }

  f = {};
  f.limit = 3;
  rows = j.query(f);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].trace_id, "t37");

  // Values are bound, never spliced into SQL: an injection attempt matches nothing.
  f = {};
  f.tenant = "a' OR '1'='1";
  EXPECT_TRUE(j.query(f).empty());
  EXPECT_EQ(j.row_count(), 40);
}

TEST(Journal, RejectsBadFilterAndLimitValues) {
  TempDir dir;
  Journal j(dir.file(), JournalLimits{});
  JournalFilter f;
  f.since_ns = -1;
  EXPECT_THROW(j.query(f), std::invalid_argument);
  f = {};
  f.tenant = "";
  EXPECT_THROW(j.query(f), std::invalid_argument);
  f = {};
  f.stage = "";
  EXPECT_THROW(j.query(f), std::invalid_argument);
  f = {};
  f.limit = 0;
  EXPECT_THROW(j.query(f), std::invalid_argument);
  f.limit = Journal::kMaxQueryLimit + 1;
  EXPECT_THROW(j.query(f), std::invalid_argument);

  EXPECT_THROW(Journal(dir.file("b.db"), JournalLimits{std::chrono::seconds(0), 0, 0}),
               std::invalid_argument);
  EXPECT_THROW(Journal(dir.file("c.db"), JournalLimits{std::chrono::hours(1), -1, 0}),
               std::invalid_argument);
}

TEST(Journal, PrunesByAge) {
  TempDir dir;
  Journal j(dir.file(), JournalLimits{std::chrono::hours(1), 0, 0});
  j.append({make_row(kNow - 7200 * kSecond, "a", "x", "two-hours"),
            make_row(kNow - 1800 * kSecond, "a", "x", "half-hour"),
            make_row(kNow, "a", "x", "now")});
  EXPECT_EQ(j.prune(kNow), 1);
  auto rows = all_rows(j);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].trace_id, "now");
  EXPECT_EQ(rows[1].trace_id, "half-hour");
  EXPECT_EQ(j.prune(kNow), 0);  // idempotent
}

TEST(Journal, PrunesOldestBeyondMaxRows) {
  TempDir dir;
  Journal j(dir.file(), JournalLimits{std::chrono::hours(24), 50, 0});
  std::vector<GlitchRow> batch;
  for (int i = 0; i < 120; ++i)
    batch.push_back(make_row(kNow - (120 - i) * kSecond, "a", "x", fmt::format("t{}", i)));
  j.append(batch);
  EXPECT_EQ(j.prune(kNow), 70);
  auto rows = all_rows(j);
  ASSERT_EQ(rows.size(), 50u);
  EXPECT_EQ(rows.front().trace_id, "t119");
  EXPECT_EQ(rows.back().trace_id, "t70");
}

TEST(Journal, PrunesOldestBeyondMaxBytesAndShrinksTheFile) {
  TempDir dir;
  constexpr int64_t kMaxBytes = 256 * 1024;
  constexpr int kRows = 2000;  // ~1 KiB of evidence each: ~2 MiB, well over the bound
  {
    Journal j(dir.file(), JournalLimits{std::chrono::hours(24), 0, kMaxBytes});
    std::vector<GlitchRow> batch;
    for (int i = 0; i < kRows; ++i) {
      batch.push_back(make_row(kNow - (kRows - i) * kSecond, "a", "x", fmt::format("t{}", i)));
      batch.back().evidence = std::string(1024, 'e');
    }
    j.append(batch);
    ASSERT_GT(j.live_bytes(), 4 * kMaxBytes);
    const int64_t pruned = j.prune(kNow);
    EXPECT_GT(pruned, 0);
    EXPECT_LE(j.live_bytes(), kMaxBytes);
    auto rows = all_rows(j);
    ASSERT_FALSE(rows.empty());
    ASSERT_EQ(static_cast<int64_t>(rows.size()), kRows - pruned);
    // The newest rows survive, contiguously.
    for (size_t k = 0; k < rows.size(); ++k)
      EXPECT_EQ(rows[k].trace_id, fmt::format("t{}", kRows - 1 - static_cast<int>(k)));
  }
  // Closing checkpoints the WAL; incremental vacuum has handed the freed pages back.
  EXPECT_LE(static_cast<int64_t>(fs::file_size(dir.file())), 2 * kMaxBytes);
}

TEST(Journal, ReopenKeepsRowsAndContinuesBatchIds) {
  TempDir dir;
  int64_t first_batch;
  {
    Journal j(dir.file(), JournalLimits{});
    first_batch = j.append({make_row(kNow, "a", "x", "before-close")});
  }
  Journal j(dir.file(), JournalLimits{});
  auto rows = all_rows(j);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].trace_id, "before-close");
  EXPECT_EQ(rows[0].batch, first_batch);
  EXPECT_GT(j.append({make_row(kNow + 1, "a", "x", "after")}), first_batch);
  EXPECT_EQ(j.row_count(), 2);
}

TEST(Journal, RefusesNewerSchemaAndNonDatabaseFiles) {
  TempDir dir;
  { Journal j(dir.file(), JournalLimits{}); }
  ASSERT_EQ(raw_text(dir.file(), "PRAGMA user_version=99"), "<error>");  // no row: ran it
  EXPECT_EQ(raw_text(dir.file(), "PRAGMA user_version"), "99");
  try {
    Journal j(dir.file(), JournalLimits{});
    FAIL() << "opened a journal with a newer schema";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }

  const std::string junk = dir.file("junk.db");
  std::ofstream(junk) << std::string(8192, 'x');
  try {
    Journal j(junk, JournalLimits{});
    FAIL() << "opened a file that is not a database";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find(junk), std::string::npos) << e.what();
  }
}

TEST(Journal, IntegrityCheckOnOpenCatchesCorruptPages) {
  TempDir dir;
  {
    Journal j(dir.file(), JournalLimits{});
    std::vector<GlitchRow> batch;
    for (int i = 0; i < 3000; ++i) batch.push_back(make_row(kNow + i, "a", "x", std::to_string(i)));
    j.append(batch);
  }
  const auto size = fs::file_size(dir.file());
  ASSERT_GT(size, 64u * 4096);
  {  // scribble over pages in the middle of the file (b-tree pages of the table and indexes)
    std::fstream f(dir.file(), std::ios::in | std::ios::out | std::ios::binary);
    for (uint64_t off = size / 4; off < size * 3 / 4; off += 4096 * 3) {
      f.seekp(static_cast<std::streamoff>(off));
      f << std::string(512, '\xA5');
    }
  }
  EXPECT_THROW(Journal(dir.file(), JournalLimits{}), JournalError);
}

// A child appends 200-row batches as fast as it can and reports each committed batch id on a
// pipe; the parent SIGKILLs it mid-batch (eight rounds on the same file). After each kill the
// file must pass integrity_check, every reported batch must be complete and present exactly once,
// and at most one more batch (the one in flight) may exist.
TEST(Journal, SurvivesKill9MidAppend) {
  TempDir dir;
  constexpr int kRowsPerBatch = 200;
  int64_t next_batch = 1;
  for (int round = 0; round < 8; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      try {
        Journal j(dir.file(), JournalLimits{});
        for (int64_t b = next_batch;; ++b) {
          std::vector<GlitchRow> rows;
          for (int i = 0; i < kRowsPerBatch; ++i) {
            rows.push_back(
                make_row(kNow + b * kSecond + i, "t", "s", fmt::format("b{}-r{}", b, i)));
            rows.back().evidence = std::string(300, 'v');
          }
          if (j.append(rows) != b) _exit(3);  // batch ids must follow the committed ones
          if (write(fds[1], &b, sizeof b) != sizeof b) _exit(4);
        }
      } catch (...) {
        _exit(2);
      }
    }
    close(fds[1]);
    // Let it commit a few batches (a round-dependent number so the kill lands at varied points).
    int64_t last_reported = next_batch - 1;
    const int64_t wait_for = 3 + round * 3;
    while (last_reported < next_batch - 1 + wait_for) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 60'000) <= 0) break;
      int64_t b;
      if (read(fds[0], &b, sizeof b) != sizeof b) break;
      last_reported = b;
    }
    // Kill at a varied point inside the next batch (a batch takes a few milliseconds here).
    usleep(static_cast<useconds_t>(300 + (round * 1733) % 4000));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    // Drain reports written just before the kill: those batches were committed too.
    for (int64_t b; read(fds[0], &b, sizeof b) == sizeof b;) last_reported = b;
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child exited on its own with status " << WEXITSTATUS(status);
    ASSERT_GE(last_reported, next_batch - 1 + wait_for) << "child stalled";

    Journal j(dir.file(), JournalLimits{});  // throws if the quick check fails
    EXPECT_EQ(raw_text(dir.file(), "PRAGMA integrity_check"), "ok");
    std::map<int64_t, std::set<std::string>> by_batch;
    std::set<int64_t> ids;
    for (const GlitchRow& r : all_rows(j)) {
      EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
      const std::string prefix = fmt::format("b{}-r", r.batch);
      EXPECT_EQ(r.trace_id.rfind(prefix, 0), 0u) << r.trace_id << " in batch " << r.batch;
      EXPECT_TRUE(by_batch[r.batch].insert(r.trace_id).second) << "duplicate " << r.trace_id;
    }
    ASSERT_FALSE(by_batch.empty());
    const int64_t last_present = by_batch.rbegin()->first;
    EXPECT_GE(last_present, last_reported) << "a committed batch was lost";
    EXPECT_LE(last_present, last_reported + 1) << "more than the in-flight batch appeared";
    for (int64_t b = 1; b <= last_present; ++b)
      EXPECT_EQ(by_batch[b].size(), static_cast<size_t>(kRowsPerBatch)) << "torn batch " << b;
    EXPECT_EQ(static_cast<int64_t>(by_batch.size()), last_present);
    next_batch = last_present + 1;
  }
}
