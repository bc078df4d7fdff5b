// SPDX-License-Identifier: Apache-2.0
// Circuit-breaker persistence on real files in a temporary directory: atomic owner-only saves,
// round trips on the same boot, clock restarts after a reboot, missing and corrupt files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/host/clock.h"
#include "core/detect/circuit_breaker.h"
#include "export/breaker_store.h"
#include "temp_dir.h"

namespace tailcause::exporter {
namespace {

namespace fs = std::filesystem;
using core::BreakerState;
using core::CircuitBreaker;
constexpr uint64_t ms = 1'000'000;
constexpr uint64_t s = 1000 * ms;

struct TempDir : tailcause::testing::TempDir {
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename());
    return out;
  }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// "busy"/"rag" opened at 100 s; "old"/"rag" opened at 50 s (quiet by 80 s); "half"/"x" has two
// slow stages; default quiet period 30 s.
CircuitBreaker sample_breaker() {
  CircuitBreaker b;
  for (uint64_t t = 0; t < 3; t++) b.observe("busy", "rag", 500 * ms, 100 * s - 2 * s + t * s);
  for (uint64_t t = 0; t < 3; t++) b.observe("old", "rag", 500 * ms, 48 * s + t * s);
  b.observe("half", "x y%", 500 * ms, 90 * s);
  b.observe("half", "x y%", 500 * ms, 91 * s);
  return b;
}

TEST(BreakerClock, RestartClockReopensTheQuietPeriodAndCloseQuietSettles) {
  CircuitBreaker b = sample_breaker();
  EXPECT_EQ(b.open_breakers(110 * s).size(), 1u);  // "old" is quiet by now
  EXPECT_EQ(b.retry_after_ns("busy", "rag", 110 * s), 20 * s);
  b.close_quiet(110 * s);
  b.restart_clock(3 * s);  // a new boot: the clock is small again
  EXPECT_EQ(b.state("busy", "rag", 3 * s), BreakerState::open);
  EXPECT_EQ(b.retry_after_ns("busy", "rag", 3 * s), 30 * s);
  EXPECT_EQ(b.state("busy", "rag", 33 * s), BreakerState::closed);
  EXPECT_EQ(b.state("old", "rag", 3 * s), BreakerState::closed);  // settled before the restart
  EXPECT_EQ(b.consecutive_slow("half", "x y%"), 2u);              // counts survive
  EXPECT_EQ(b.observe("half", "x y%", 500 * ms, 4 * s), BreakerState::open);
  b.clear();
  EXPECT_EQ(b.keys(), 0u);
  EXPECT_EQ(b.trips(), 0u);
}

TEST(BreakerClock, WithoutRestartAnOldClockLooksLikeTheFuture) {
  // Why restart_clock exists: times from the old boot are far ahead of the new clock.
  CircuitBreaker b = sample_breaker();
  EXPECT_EQ(b.state("busy", "rag", 3 * s), BreakerState::open);
  EXPECT_EQ(b.retry_after_ns("busy", "rag", 3 * s), 127 * s);
}

TEST(BreakerStore, SavesAtomicallyOwnerOnlyAndLoadsOnTheSameBoot) {
  TempDir dir;
  const std::string path = (dir.path / "state" / "breaker.state").string();  // dir is created
  CircuitBreaker b = sample_breaker();
  save_breaker_state(b, path, 110 * s, "boot-a");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  const std::string text = read_text(path);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "tailcause-breaker-state v1 boot_id=boot-a monotonic_ns=110000000000");
  EXPECT_EQ(text.substr(text.find('\n') + 1), b.serialize());
  EXPECT_EQ(fs::directory_iterator(dir.path / "state")->path().filename().string(),
            "breaker.state");  // no temporary left

  CircuitBreaker loaded;
  ASSERT_TRUE(load_breaker_state(loaded, path, 115 * s, "boot-a"));
  EXPECT_EQ(loaded.serialize(), b.serialize());  // the clock continued: nothing moved
  EXPECT_EQ(loaded.retry_after_ns("busy", "rag", 115 * s), 15 * s);
  EXPECT_EQ(loaded.trips(), 2u);
}

TEST(BreakerStore, ASaveReplacesTheFileAndItsMode) {
  TempDir dir;
  const std::string path = (dir.path / "breaker.state").string();
  write_text(path, "old content\n");
  chmod(path.c_str(), 0644);
  CircuitBreaker b = sample_breaker();
  save_breaker_state(b, path, 110 * s, "boot-a");
  CircuitBreaker empty;
  save_breaker_state(empty, path, 120 * s, "boot-a");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(read_text(path),
            "tailcause-breaker-state v1 boot_id=boot-a monotonic_ns=120000000000\ntrips 0\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"breaker.state"});  // no temporary left
}

TEST(BreakerStore, AFailedSaveLeavesNothingBehind) {
  TempDir dir;
  const std::string path = (dir.path / "breaker.state").string();
  fs::create_directory(path);  // rename() over a directory fails
  CircuitBreaker b = sample_breaker();
  EXPECT_THROW(save_breaker_state(b, path, 1, "boot-a"), BreakerStoreError);
  EXPECT_EQ(dir.names(), std::vector<std::string>{"breaker.state"});
  EXPECT_TRUE(fs::is_directory(path));
  write_text((dir.path / "file").string(), "x");
  try {
    save_breaker_state(b, (dir.path / "file" / "breaker.state").string(), 1, "boot-a");
    FAIL() << "saved under a regular file";
  } catch (const BreakerStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("breaker.state"), std::string::npos) << e.what();
  }
}

TEST(BreakerStore, AnotherBootRestartsTheOpenBreakersQuietPeriod) {
  TempDir dir;
  const std::string path = (dir.path / "breaker.state").string();
  save_breaker_state(sample_breaker(), path, 110 * s, "boot-a");
  CircuitBreaker loaded;
  ASSERT_TRUE(load_breaker_state(loaded, path, 2 * s, "boot-b"));
  EXPECT_EQ(loaded.state("busy", "rag", 2 * s), BreakerState::open);
  EXPECT_EQ(loaded.retry_after_ns("busy", "rag", 2 * s), 30 * s);  // a whole quiet period
  EXPECT_EQ(loaded.state("busy", "rag", 32 * s), BreakerState::closed);
  EXPECT_EQ(loaded.state("old", "rag", 2 * s), BreakerState::closed);  // was quiet at the save
  EXPECT_EQ(loaded.consecutive_slow("half", "x y%"), 2u);
  EXPECT_EQ(loaded.trips(), 2u);
  // A save from "the future" of this clock on the same boot id is treated the same way.
  CircuitBreaker odd;
  ASSERT_TRUE(load_breaker_state(odd, path, 100 * s, "boot-a"));
  EXPECT_EQ(odd.retry_after_ns("busy", "rag", 100 * s), 30 * s);
}

TEST(BreakerStore, AMissingFileIsAFirstStart) {
  TempDir dir;
  CircuitBreaker b = sample_breaker();
  EXPECT_FALSE(load_breaker_state(b, (dir.path / "none").string(), 1, "boot-a"));
  EXPECT_EQ(b.keys(), 0u);
}

TEST(BreakerStore, CorruptFilesAreClearErrorsAndLeaveTheBreakerEmpty) {
  TempDir dir;
  const std::string path = (dir.path / "breaker.state").string();
  save_breaker_state(sample_breaker(), path, 110 * s, "boot-a");
  const std::string good = read_text(path);
  const std::string header = good.substr(0, good.find('\n') + 1);
  const std::vector<std::string> corrupt = {
      "",
      "garbage\n",
      std::string("\0\0\0\xff\xfe", 5),
      "tailcause-breaker-state v2 boot_id=a monotonic_ns=1\ntrips 0\n",
      "tailcause-breaker-state v1 boot_id=a monotonic_ns=x\ntrips 0\n",
      "tailcause-breaker-state v1 boot_id= monotonic_ns=1\ntrips 0\n",
      "tailcause-breaker-state v1 monotonic_ns=1 boot_id=a\ntrips 0\n",
      header,                                     // no breaker state at all
      header + "trips 1\nv1 busy rag 1 3\n",      // a field missing
      header + "trips 1\nv1 busy rag%2 1 3 1\n",  // bad encoding
      good.substr(0, good.find("v1 half") + 6),   // torn (what atomic saves prevent)
      std::string(17 << 20, 'x'),                 // far too large
  };
  for (const auto& text : corrupt) {
    write_text(path, text);
    CircuitBreaker b = sample_breaker();
    try {
      load_breaker_state(b, path, 120 * s, "boot-a");
      ADD_FAILURE() << "accepted: " << text.substr(0, 100);
    } catch (const BreakerStoreError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_EQ(b.keys(), 0u) << text.substr(0, 100);
  }
  // The good text still loads: the cases above fail for their own reason.
  write_text(path, good);
  CircuitBreaker b;
  EXPECT_TRUE(load_breaker_state(b, path, 120 * s, "boot-a"));
}

TEST(BreakerStore, TheRealBootIdAndClockByDefault) {
  const std::string id = current_boot_id();
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string expected;
  in >> expected;
  EXPECT_EQ(id, expected);
  EXPECT_EQ(id.size(), 36u);
  const uint64_t t0 = core::monotonic_ns();
  EXPECT_GT(t0, 0u);
  EXPECT_GE(core::monotonic_ns(), t0);

  TempDir dir;
  const std::string path = (dir.path / "breaker.state").string();
  CircuitBreaker b;
  for (int i = 0; i < 3; i++) b.observe("t", "a", 500 * ms, core::monotonic_ns());
  save_breaker_state(b, path);
  EXPECT_NE(read_text(path).find("boot_id=" + id + " "), std::string::npos);
  CircuitBreaker loaded;
  ASSERT_TRUE(load_breaker_state(loaded, path, core::monotonic_ns()));
  EXPECT_EQ(loaded.serialize(), b.serialize());  // same boot: no clock restart
  EXPECT_EQ(loaded.state("t", "a", core::monotonic_ns()), BreakerState::open);
}

}  // namespace
}  // namespace tailcause::exporter
