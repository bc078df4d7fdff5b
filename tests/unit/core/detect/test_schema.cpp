// SPDX-License-Identifier: Apache-2.0
// core/record/schema.h against what derives from it: component names, the metric registry, the
// families the core emitters add, and the sources (every metric name literal is registered and
// spelled only in schema.h; every family diagnose reads is emitted by a family, with the type
// diagnose reads it as). The journal, OTLP and listing checks are in their own tests
// (EveryComponentHasItsOwnColumn, EveryComponentHasItsOwnAttribute, JsonListsEveryComponentByName).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/detect/glitch_analyzer.h"
#include "core/record/schema.h"
#include "core/aggregate/stage_aggregator.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t ms = 1'000'000;

// ---- components ----------------------------------------------------------------------------

TEST(Schema, ComponentsHaveDistinctNamesThatRoundTrip) {
  std::set<std::string> names;
  for (size_t i = 0; i < kComponents; ++i) {
    const Component c = kAllComponents[i];
    EXPECT_EQ(index_of(c), i);
    const std::string name = component_name(c);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(component_from_name(name), c) << name;
  }
  EXPECT_EQ(component_from_name("major_fault"), std::nullopt);
  EXPECT_EQ(component_from_name(""), std::nullopt);
  // The order the kernel shares (bpf/attrib.h) and what users see: unattributed last.
  EXPECT_STREQ(component_name(Component::on_cpu), "on_cpu");
  EXPECT_STREQ(component_name(Component::unattributed), "unattributed");
  EXPECT_EQ(kAllComponents.back(), Component::unattributed);
}

// ---- metric registry -----------------------------------------------------------------------

TEST(Schema, MetricNamesAreDistinctPrefixedAndWithoutTotal) {
  std::set<std::string> names;
  for (const MetricSpec& m : kMetrics) {
    const std::string name = m.name;
    SCOPED_TRACE(name);
    EXPECT_TRUE(names.insert(name).second);
    EXPECT_EQ(name.rfind("tailcause_", 0), 0u);
    EXPECT_TRUE(std::regex_match(name, std::regex("[a-z][a-z0-9_]*[a-z0-9]")));
    EXPECT_FALSE(name.ends_with("_total")) << "renderers add _total to counters";
    EXPECT_FALSE(std::string(m.source).empty());
    EXPECT_EQ(find_metric(name), &m);
  }
  EXPECT_EQ(find_metric("tailcause_no_such_family"), nullptr);
  EXPECT_EQ(find_metric("tailcause_glitches_total"), nullptr);
}

// Every family `set` holds is registered, with the type it was added as.
void expect_registered(const MetricSet& set) {
  for (const MetricFamily& f : set.families()) {
    const MetricSpec* spec = find_metric(f.name);
    ASSERT_NE(spec, nullptr) << f.name << " is emitted but not in core/record/schema.h";
    EXPECT_EQ(spec->type, f.type) << f.name;
  }
}

Identity who(const std::string& tenant) {
  Identity id;
  id.request_id = 1;
  id.pid = 4242;
  id.tenant = tenant;
  id.agent = "rag";
  id.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  return id;
}

StageRecord stage(uint64_t start_ns, uint64_t on_cpu_ns, uint64_t throttled_ns) {
  return testing::StageBuilder()
      .identity(who("ta"))
      .tid(4242)
      .stage(StageKind::generation)
      .start_ns(start_ns)
      .component(Component::on_cpu, on_cpu_ns)
      .component(Component::cpu_throttled, throttled_ns)
      .build();
}

TEST(Schema, StageAggregatorEmitsRegisteredFamiliesAndEveryComponent) {
  StageAggregator agg(10);
  agg.add(stage(1'000 * ms, 100 * ms, 50 * ms));
  RequestRecord req;
  req.id = who("ta");
  req.start_ns = 1'000 * ms;
  req.end_ns = 1'200 * ms;
  req.tokens = 3;
  req.first_token_ns = 1'100 * ms;
  req.last_token_ns = 1'150 * ms;
  agg.add(req);
  CacheRecord c;
  c.id = who("ta");
  c.cache = "vectors";
  agg.add(c);
  CacheActionRecord rebalance;
  rebalance.tenant = "ta";
  rebalance.cache = "vectors";
  rebalance.action = kCacheActionRebalance;
  rebalance.count = 1 << 20;
  agg.add(rebalance);
  agg.add(QualityRecord{who("ta"), 1.5});
  agg.set_kernel_errors({{"stage_end_without_begin", 1}});
  MetricSet m;
  agg.collect(m);
  expect_registered(m);
  EXPECT_GE(m.families().size(), 8u);
  // The component label takes every component's name, and only those.
  std::set<std::string> labelled;
  for (const MetricFamily& f : m.families()) {
    if (f.name != metric::kStageTimeSeconds) continue;
    for (const Sample& s : f.samples)
      for (const auto& [k, v] : s.labels)
        if (k == "component") labelled.insert(v);
  }
  std::set<std::string> want(kComponentNames.begin(), kComponentNames.end());
  EXPECT_EQ(labelled, want);
}

TEST(Schema, GlitchAnalyzerEmitsRegisteredFamilies) {
  GlitchAnalyzer a(AnalyzerSettings{});
  uint64_t t = 1'000 * ms;
  AnalyzerOutput out;
  for (int i = 0; i < 10; i++, t += 200 * ms) a.observe(stage(t, 100 * ms, 0), out);
  a.observe(stage(t, 100 * ms, 900 * ms), out);  // over the stage SLO: a glitch
  ASSERT_FALSE(out.glitches.empty());
  MetricSet m;
  a.collect(m, t + 2'000 * ms);
  expect_registered(m);
  EXPECT_NE(m.find(metric::kGlitches, {{"cause", "cpu_throttled"}}), nullptr);
}

// ---- the sources ---------------------------------------------------------------------------

struct Source {
  std::string path;  // relative to src/
  std::string text;
};

std::vector<Source> sources() {
  const fs::path root = fs::path(TAILCAUSE_SOURCE_DIR) / "src";
  std::vector<Source> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    out.push_back({fs::relative(e.path(), root).string(), text.str()});
  }
  EXPECT_GT(out.size(), 20u) << "no sources under " << root;
  return out;
}

const Source& source(const std::vector<Source>& all, const std::string& path) {
  for (const auto& s : all)
    if (s.path == path) return s;
  ADD_FAILURE() << "no src/" << path;
  static const Source none;
  return none;
}

// metric::kName -> "tailcause_name", parsed from schema.h.
std::map<std::string, std::string> metric_constants(const std::vector<Source>& all) {
  std::map<std::string, std::string> out;
  const std::string& text = source(all, "core/record/schema.h").text;
  static const std::regex def(
      R"re(inline constexpr const char (k\w+)\[\] =\s*"(tailcause_\w+)";)re");
  for (std::sregex_iterator it(text.begin(), text.end(), def), end; it != end; ++it)
    out[(*it)[1]] = (*it)[2];
  EXPECT_EQ(out.size(), std::size(kMetrics)) << "every constant is registered in kMetrics";
  return out;
}

TEST(Schema, MetricNameLiteralsAreRegisteredAndSpelledOnlyInTheSchema) {
  static const std::regex literal(R"re("(tailcause_[a-z0-9_]+)")re");
  size_t seen = 0;
  for (const Source& s : sources()) {
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), literal), end; it != end; ++it) {
      const std::string name = (*it)[1];
      seen++;
      EXPECT_NE(find_metric(name), nullptr) << "src/" << s.path << " names " << name
                                            << ", which core/record/schema.h does not register";
      if (s.path != "core/record/schema.h")
        ADD_FAILURE() << "src/" << s.path << " spells \"" << name
                      << "\": use its core::metric constant";
    }
  }
  EXPECT_GE(seen, std::size(kMetrics));
}

// Who emits each family: a file other than the schema and the reports that names its constant
// (or, in the files not yet converted, its literal). Also the type each use adds it as, where
// the call shows it: add(kName, MetricType::T, ...) or add_histogram(kName, ...).
struct Uses {
  std::map<std::string, std::set<std::string>> emitters;  // name -> files
  std::map<std::string, std::set<MetricType>> types;      // name -> types added as
};

Uses uses(const std::vector<Source>& all, const std::map<std::string, std::string>& constants) {
  Uses out;
  static const std::regex use(R"re((?:metric::(k\w+))|"(tailcause_[a-z0-9_]+)")re");
  static const std::regex alias(
      R"re(constexpr const char\*\s+(k\w+)\s*=\s*(?:core::)?metric::(k\w+);)re");
  static const std::regex typed(
      R"re((?:family|add)\(\s*(?:(?:core::)?metric::(k\w+)|(k\w+)|"(tailcause_[a-z0-9_]+)"),\s*(?:core::)?MetricType::(\w+))re");
  static const std::regex histogram(
      R"re(add_histogram\(\s*(?:(?:core::)?metric::(k\w+)|(k\w+)|"(tailcause_[a-z0-9_]+)"))re");
  const std::map<std::string, MetricType> type_names = {{"Counter", MetricType::Counter},
                                                        {"Gauge", MetricType::Gauge},
                                                        {"Histogram", MetricType::Histogram}};
  for (const Source& s : all) {
    if (s.path == "core/record/schema.h" || s.path.starts_with("core/diagnosis")) continue;
    std::map<std::string, std::string> local;  // a file's own alias -> the metric constant
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), alias), end; it != end; ++it)
      local[(*it)[1]] = (*it)[2];
    auto name_of = [&](const std::smatch& m, int constant, int aliased, int lit) -> std::string {
      if (m[constant].matched) return constants.count(m[constant]) ? constants.at(m[constant]) : "";
      if (m[aliased].matched) {
        auto a = local.find(m[aliased]);
        return a != local.end() && constants.count(a->second) ? constants.at(a->second) : "";
      }
      return m[lit];
    };
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), use), end; it != end; ++it) {
      const std::string name = (*it)[1].matched
                                   ? (constants.count((*it)[1]) ? constants.at((*it)[1]) : "")
                                   : std::string((*it)[2]);
      if (!name.empty()) out.emitters[name].insert(s.path);
    }
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), typed), end; it != end; ++it) {
      const std::string name = name_of(*it, 1, 2, 3);
      if (!name.empty()) out.types[name].insert(type_names.at((*it)[4]));
    }
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), histogram), end; it != end; ++it) {
      const std::string name = name_of(*it, 1, 2, 3);
      if (!name.empty()) out.types[name].insert(MetricType::Histogram);
    }
  }
  return out;
}

TEST(Schema, EveryRegisteredFamilyIsEmittedAsItsType) {
  const auto all = sources();
  const auto u = uses(all, metric_constants(all));
  for (const MetricSpec& m : kMetrics) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(u.emitters.count(m.name)) << "registered but no source emits it";
    auto t = u.types.find(m.name);
    if (t == u.types.end()) continue;  // added through a helper the pattern does not see
    EXPECT_EQ(t->second, std::set<MetricType>{m.type}) << "added as another type than registered";
  }
  // The pattern does see the usual calls (a broken pattern would pass the loop above).
  EXPECT_EQ(u.types.at(metric::kCpuThrottledSeconds), std::set<MetricType>{MetricType::Counter});
  EXPECT_EQ(u.types.at(metric::kTcpRttSeconds), std::set<MetricType>{MetricType::Histogram});
  EXPECT_EQ(u.types.at(metric::kGlitches), std::set<MetricType>{MetricType::Counter});
  EXPECT_GE(u.types.size(), std::size(kMetrics) * 3 / 4);
}

// `tailcause diagnose` looks series up by name: each it reads must be one a family emits (a
// rename on one side only would silently empty a section of the report), read as its type.
TEST(Schema, DiagnoseReadsOnlyEmittedFamiliesAsTheirType) {
  const auto all = sources();
  const auto constants = metric_constants(all);
  const auto u = uses(all, constants);
  const std::string& text = source(all, "core/report/diagnosis.cpp").text;
  static const std::regex read(
      R"re((counter_delta|histogram_delta|samples_of|has_family)\([^;]*?metric::(k\w+)\))re");
  std::set<std::string> read_names;
  for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
    const std::string how = (*it)[1];
    ASSERT_TRUE(constants.count((*it)[2])) << (*it)[2] << " is not a core::metric constant";
    const std::string name = constants.at((*it)[2]);
    read_names.insert(name);
    SCOPED_TRACE(how + " " + name);
    const MetricSpec* spec = find_metric(name);
    ASSERT_NE(spec, nullptr);
    EXPECT_TRUE(u.emitters.count(name)) << "diagnose reads a family nothing emits";
    const MetricType want = how == "counter_delta"     ? MetricType::Counter
                            : how == "histogram_delta" ? MetricType::Histogram
                            : how == "samples_of"      ? MetricType::Gauge
                                                       : spec->type;  // has_family: any
    EXPECT_EQ(spec->type, want);
  }
  // The throttled-cgroup, noisy-neighbour, TCP-peer and cause sections each read something.
  for (const char* name :
       {metric::kCpuThrottledSeconds, metric::kCpuQuotaSeconds, metric::kCgroupPreemptedSeconds,
        metric::kTcpConnectionDurationSeconds, metric::kTcpRttSeconds, metric::kGlitches})
    EXPECT_TRUE(read_names.count(name)) << "diagnose no longer reads " << name;
  EXPECT_EQ(read_names.size(), 10u) << "update this test's list when diagnose reads more";
}

}  // namespace
}  // namespace tailcause::core
