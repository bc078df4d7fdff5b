// SPDX-License-Identifier: Apache-2.0
// Root tests of the throttle family: real cgroups with real CFS quotas, real busy loops.
#include <gtest/gtest.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "core/config/config.h"
#include "core/host/cpu_stat.h"
#include "probes/throttle_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

using namespace std::chrono_literals;
using core::MetricSet;

constexpr const char* kThrottledSeconds = "tailcause_cpu_throttled_seconds";
constexpr const char* kThrottledPeriods = "tailcause_cpu_throttled_periods";
constexpr const char* kPeriods = "tailcause_cpu_periods";
constexpr const char* kQuota = "tailcause_cpu_quota_seconds";
constexpr const char* kPeriod = "tailcause_cpu_period_seconds";
constexpr const char* kWeight = "tailcause_cpu_weight";
const char* const kCounters[] = {kThrottledSeconds, kThrottledPeriods, kPeriods};

// The value of `family`{cgroup=name}, or nullopt when there is no such series.
std::optional<double> value_of(const MetricSet& set, const char* family, const std::string& name) {
  const core::Sample* s = find_sample(set, family, {{"cgroup", name}});
  if (!s) return std::nullopt;
  return s->value;
}

// Fails the test when a watched counter series goes down between two collects.
class MonotonicWatch {
 public:
  explicit MonotonicWatch(std::vector<std::string> names) : names_(std::move(names)) {}
  void check(const MetricSet& set) {
    for (const char* family : kCounters) {
      for (const auto& name : names_) {
        const auto v = value_of(set, family, name);
        if (!v) continue;
        auto& last = last_[{family, name}];
        EXPECT_GE(*v, last) << family << "{cgroup=" << name << "} went down";
        last = *v;
      }
    }
  }

 private:
  std::vector<std::string> names_;
  std::map<std::pair<std::string, std::string>, double> last_;
};

// A light load that never uses its (absent) quota: 1 ms of work every 20 ms.
void light_load() {
  for (;;) {
    const auto until = std::chrono::steady_clock::now() + 1ms;
    volatile unsigned long x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
    std::this_thread::sleep_for(20ms);
  }
}

// Everything a family needs to start, as the daemon builds it.
struct Harness {
  explicit Harness(uint32_t top_k, uint32_t interval_ms,
                   const probes::CgroupLayout& layout = host_layout())
      : names(layout) {
    config.top_k = top_k;
    config.throttle.interval_ms = interval_ms;
  }
  core::Config config;
  probes::CgroupNames names;
  probes::NodeSignals signals;
  probes::ProbeContext ctx{host_features(), config, names, signals};
  probes::ThrottleProbe probe;
};

core::CpuBandwidthStats read_cpu_stat_file(const TestCgroup& cg) {
  std::ifstream in(cg.dir() + "/cpu.stat");
  std::stringstream text;
  text << in.rdbuf();
  auto stats = core::parse_cpu_stat(text.str());
  if (!stats) ADD_FAILURE() << cg.dir() << "/cpu.stat has no bandwidth data: " << text.str();
  return stats.value_or(core::CpuBandwidthStats{});
}

TEST(Throttle, QuotaLimitedBusyLoopIsThrottledAndUnlimitedSiblingIsNot) {
  REQUIRE_ROOT();
  TestCgroup limited("throttled");
  limited.set_cpu_quota(0.1);  // 10 ms per 100 ms period
  TestCgroup unlimited("unlimited");
  spawn_child(&limited, std::nullopt);
  spawn_child(&unlimited, std::nullopt, light_load);

  Harness h(/*top_k=*/10000, /*interval_ms=*/100);  // room for every cgroup on a busy host
  h.probe.start(h.ctx);
  MonotonicWatch watch({limited.name(), unlimited.name()});
  bool saw_throttling_signal = false;
  MetricSet set;
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < 25; ++i) {  // about 2.5 s of load
    std::this_thread::sleep_for(110ms);
    h.probe.tick(h.ctx);
    saw_throttling_signal = saw_throttling_signal || h.signals.cgroup_throttling;
    set = MetricSet{};
    h.probe.collect(set);
    watch.check(set);
  }
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  const auto throttled = value_of(set, kThrottledPeriods, limited.name());
  const auto throttled_s = value_of(set, kThrottledSeconds, limited.name());
  const auto periods = value_of(set, kPeriods, limited.name());
  ASSERT_TRUE(throttled && throttled_s && periods) << "no counters for " << limited.name();
  EXPECT_GT(*throttled, 0);
  EXPECT_GT(*throttled_s, 0);
  EXPECT_GE(*periods, *throttled);
  // Units check, not timing: throttled time accrues at most once per CPU per wall second.
  EXPECT_LT(*throttled_s, (elapsed_s + 1) * get_nprocs());
  EXPECT_DOUBLE_EQ(value_of(set, kQuota, limited.name()).value_or(-1), 0.01);
  EXPECT_DOUBLE_EQ(value_of(set, kPeriod, limited.name()).value_or(-1), 0.1);
  EXPECT_DOUBLE_EQ(value_of(set, kWeight, limited.name()).value_or(-1), 100);  // the default
  EXPECT_TRUE(saw_throttling_signal);

  // The sibling has bandwidth data (counters) but never ran out of a quota it does not have.
  EXPECT_EQ(value_of(set, kThrottledPeriods, unlimited.name()), 0.0);
  EXPECT_EQ(value_of(set, kThrottledSeconds, unlimited.name()), 0.0);
  EXPECT_FALSE(value_of(set, kQuota, unlimited.name())) << "unlimited cgroup has a quota gauge";
  EXPECT_DOUBLE_EQ(value_of(set, kPeriod, unlimited.name()).value_or(-1), 0.1);
  EXPECT_DOUBLE_EQ(value_of(set, kWeight, unlimited.name()).value_or(-1), 100);

  // The root is not a cgroup "below the root".
  EXPECT_FALSE(value_of(set, kPeriods, "/"));
  h.probe.stop();
  EXPECT_FALSE(h.signals.cgroup_throttling) << "a stopped family still signals throttling";
  h.probe.stop();  // idempotent
  MetricSet after;
  h.probe.collect(after);
  EXPECT_TRUE(samples_of(after, kPeriods).empty());
}

TEST(Throttle, VanishedFoldedCgroupDoesNotMakeOtherGoDown) {
  REQUIRE_ROOT();
  std::unique_ptr<TestCgroup> a = std::make_unique<TestCgroup>("fold-a");
  std::unique_ptr<TestCgroup> b = std::make_unique<TestCgroup>("fold-b");
  for (auto* cg : {a.get(), b.get()}) {
    cg->set_cpu_quota(0.1);
    spawn_child(cg, std::nullopt);
  }
  Harness h(/*top_k=*/1, /*interval_ms=*/100);
  h.probe.start(h.ctx);
  MonotonicWatch watch({core::kOtherLabel});
  MetricSet set;
  auto tick_and_collect = [&] {
    std::this_thread::sleep_for(110ms);
    h.probe.tick(h.ctx);
    set = MetricSet{};
    h.probe.collect(set);
    watch.check(set);
  };
  for (int i = 0; i < 20; ++i) tick_and_collect();

  // With one slot, at least one of the two is folded into __other__ (both may be, when
  // another cgroup on the host took the slot first).
  std::unique_ptr<TestCgroup>& folded = value_of(set, kPeriods, a->name()) ? b : a;
  ASSERT_FALSE(value_of(set, kPeriods, folded->name())) << "top_k = 1 kept both cgroups";
  const std::string folded_name = folded->name();
  const std::string folded_dir = folded->dir();
  EXPECT_FALSE(value_of(set, kQuota, core::kOtherLabel)) << "a quota gauge for __other__";

  // __other__ holds at least what the folded cgroup has counted (read just before the tick).
  const core::CpuBandwidthStats in_file = read_cpu_stat_file(*folded);
  ASSERT_GT(in_file.nr_throttled, 0u) << folded_name << " was never throttled";
  tick_and_collect();
  const auto other_throttled = value_of(set, kThrottledPeriods, core::kOtherLabel);
  ASSERT_TRUE(other_throttled) << "no __other__ series";
  EXPECT_GE(*other_throttled, static_cast<double>(in_file.nr_throttled));
  EXPECT_GE(value_of(set, kThrottledSeconds, core::kOtherLabel).value_or(-1),
            in_file.throttled_ns / 1e9);

  folded.reset();  // kills its busy loop and removes the cgroup
  ASSERT_FALSE(std::filesystem::exists(folded_dir)) << "cgroup " << folded_dir << " not removed";
  for (int i = 0; i < 5; ++i) tick_and_collect();  // the watch fails if __other__ goes down
  EXPECT_FALSE(value_of(set, kPeriods, folded_name));
  // Still at least what the vanished cgroup had counted, though it no longer exists.
  EXPECT_GE(value_of(set, kThrottledPeriods, core::kOtherLabel).value_or(-1),
            static_cast<double>(in_file.nr_throttled));
  h.probe.stop();
}

TEST(Throttle, ReadsAtMostEveryInterval) {
  REQUIRE_ROOT();
  Harness h(/*top_k=*/10000, /*interval_ms=*/60000);
  h.probe.start(h.ctx);
  h.probe.tick(h.ctx);  // the first tick reads the baseline, then not for a minute
  TestCgroup late("late");
  late.set_cpu_quota(0.1);
  spawn_child(&late, std::nullopt);
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(100ms);
    h.probe.tick(h.ctx);
  }
  MetricSet set;
  h.probe.collect(set);
  EXPECT_FALSE(value_of(set, kPeriods, late.name())) << "read before the interval elapsed";
  EXPECT_FALSE(h.signals.cgroup_throttling);             // no read since the baseline
  ASSERT_GT(read_cpu_stat_file(late).nr_throttled, 0u);  // though it is being throttled

  // Restarting reads at its first tick: the cgroup shows up.
  h.probe.start(h.ctx);
  h.probe.tick(h.ctx);
  set = MetricSet{};
  h.probe.collect(set);
  EXPECT_TRUE(value_of(set, kPeriods, late.name()));
  h.probe.stop();
}

TEST(Throttle, StartRefusesAHierarchyWithoutCpuController) {
  // On this hybrid host the unified hierarchy really has no cpu controller; elsewhere the
  // same layout is described by hand.
  probes::CgroupLayout layout;
  try {
    core::CgroupConfig v2;
    v2.version = "v2";
    layout = probes::detect_cgroup_layout(v2);
  } catch (const std::exception&) {
    layout.version = probes::CgroupLayout::Version::V2;
    layout.root = host_layout().root;
  }
  layout.has_cpu_stats = false;
  Harness h(50, 1000, layout);
  try {
    h.probe.start(h.ctx);
    FAIL() << "start() accepted a layout without cpu statistics";
  } catch (const probes::ProbeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no cpu controller enabled"), std::string::npos) << what;
    EXPECT_NE(what.find(layout.root), std::string::npos) << what;
    EXPECT_NE(what.find("+cpu"), std::string::npos) << what;
  }
  MetricSet set;
  h.probe.collect(set);  // not started: nothing
  EXPECT_TRUE(set.families().empty());
  h.probe.stop();
}

}  // namespace
}  // namespace tailcause::testing
