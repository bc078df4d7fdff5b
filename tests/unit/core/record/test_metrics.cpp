// SPDX-License-Identifier: Apache-2.0
// MetricSet: what a scrape fills. Families are found or created by name, keep the order in
// which they were first added, and a name cannot change its type.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/record/metrics.h"

using namespace tailcause::core;

TEST(MetricSet, FamilyIsCreatedOnFirstUseThenFound) {
  MetricSet set;
  MetricFamily& created = set.family("tailcause_cpu_throttled_seconds", MetricType::Counter,
                                     "Throttled time.", "seconds");
  EXPECT_EQ(created.name, "tailcause_cpu_throttled_seconds");
  EXPECT_EQ(created.type, MetricType::Counter);
  EXPECT_EQ(created.help, "Throttled time.");
  EXPECT_EQ(created.unit, "seconds");
  EXPECT_TRUE(created.samples.empty());
  ASSERT_EQ(set.families().size(), 1u);

  // Found again, whatever help or unit the second caller passes: the first one wins.
  MetricFamily& found =
      set.family("tailcause_cpu_throttled_seconds", MetricType::Counter, "Other help.", "");
  EXPECT_EQ(&found, &set.families().front());
  EXPECT_EQ(found.help, "Throttled time.");
  EXPECT_EQ(found.unit, "seconds");
  EXPECT_EQ(set.families().size(), 1u);
}

TEST(MetricSet, TypeConflictThrows) {
  MetricSet set;
  set.family("tailcause_requests", MetricType::Counter, "Requests.");
  EXPECT_THROW(set.family("tailcause_requests", MetricType::Gauge, "Requests."), std::logic_error);
  EXPECT_THROW(set.add("tailcause_requests", MetricType::Gauge, "Requests.", {}, 1),
               std::logic_error);
  EXPECT_THROW(set.add_histogram("tailcause_requests", "Requests.", {}, {}), std::logic_error);
  // The failed calls added nothing.
  ASSERT_EQ(set.families().size(), 1u);
  EXPECT_EQ(set.families()[0].type, MetricType::Counter);
  EXPECT_TRUE(set.families()[0].samples.empty());

  set.add_histogram("tailcause_latency_seconds", "Latency.", {}, {});
  EXPECT_THROW(set.add("tailcause_latency_seconds", MetricType::Counter, "Latency.", {}, 1),
               std::logic_error);
}

TEST(MetricSet, AddAppendsSamplesToOneFamilyInOrder) {
  MetricSet set;
  set.add("tailcause_probe_attached", MetricType::Gauge, "Attached.", {{"probe", "sched"}}, 1);
  set.add("tailcause_major_faults", MetricType::Counter, "Faults.", {{"cgroup", "/a"}}, 7);
  set.add("tailcause_probe_attached", MetricType::Gauge, "Attached.", {{"probe", "tcp"}}, 0);
  const auto& fams = set.families();
  ASSERT_EQ(fams.size(), 2u);
  EXPECT_EQ(fams[0].name, "tailcause_probe_attached");  // order of first addition
  EXPECT_EQ(fams[1].name, "tailcause_major_faults");
  ASSERT_EQ(fams[0].samples.size(), 2u);
  EXPECT_EQ(fams[0].samples[0].labels, (Labels{{"probe", "sched"}}));
  EXPECT_EQ(fams[0].samples[0].value, 1);
  EXPECT_EQ(fams[0].samples[1].labels, (Labels{{"probe", "tcp"}}));
  EXPECT_EQ(fams[0].samples[1].value, 0);
  ASSERT_EQ(fams[1].samples.size(), 1u);
  EXPECT_EQ(fams[1].samples[0].value, 7);
  EXPECT_EQ(fams[1].type, MetricType::Counter);
}

TEST(MetricSet, AddHistogramKeepsTheDataAndDefaultsToSeconds) {
  MetricSet set;
  HistogramData h;
  h.buckets = {{0.001, 2}, {0.01, 5}};
  h.count = 6;
  h.sum = 0.04;
  set.add_histogram("tailcause_runqueue_latency_seconds", "Wait.", {{"cgroup", "/a"}}, h);
  set.add_histogram("tailcause_runqueue_length", "Length.", {{"cpu", "0"}}, h, "");
  const auto& fams = set.families();
  ASSERT_EQ(fams.size(), 2u);
  EXPECT_EQ(fams[0].type, MetricType::Histogram);
  EXPECT_EQ(fams[0].unit, "seconds");
  EXPECT_EQ(fams[1].unit, "");
  const auto& s = fams[0].samples.at(0);
  EXPECT_EQ(s.labels, (Labels{{"cgroup", "/a"}}));
  EXPECT_EQ(s.histogram.buckets, h.buckets);
  EXPECT_EQ(s.histogram.count, 6u);
  EXPECT_DOUBLE_EQ(s.histogram.sum, 0.04);
}

TEST(MetricSet, FamiliesCanBeFilledThroughTheReference) {
  // The pattern a probe uses: look the family up once, then push samples.
  MetricSet set;
  MetricFamily& f = set.family("tailcause_events_lost", MetricType::Counter, "Lost.");
  for (int cpu = 0; cpu < 3; ++cpu) {
    Sample s;
    s.labels = {{"source", "sched"}, {"cpu", std::to_string(cpu)}};
    s.value = cpu;
    f.samples.push_back(s);
  }
  EXPECT_EQ(set.families().at(0).samples.size(), 3u);
  EXPECT_EQ(set.family("tailcause_events_lost", MetricType::Counter, "").samples.size(), 3u);
}
