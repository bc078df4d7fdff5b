// SPDX-License-Identifier: Apache-2.0
// The recipe noise floor: uprobe recipe spans shorter than glitch.recipe_noise_floor_ms are
// never P99 glitches (a millisecond call doubled by one scheduler tick is noise), while SDK
// stages of the same length still are, and the SLO rule holds for every span.
#include <gtest/gtest.h>

#include "bpf/attrib.h"
#include "core/config/config.h"
#include "core/detect/glitch_analyzer.h"
#include "core/detect/glitch_detector.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t ms = 1'000'000;

StageRecord span(uint64_t end_ns, uint64_t wall_ns, bool recipe) {
  return testing::StageBuilder()
      .tenant("python3")
      .agent("python3")
      .stage("retrieval")
      .component(Component::on_cpu, wall_ns)
      .end_ns(end_ns)
      .flags(recipe ? ATTRIB_SPAN_RECIPE : 0)
      .build();
}

// 100 spans of 1 ms, then one of 5 ms: 5x the P99, far under the SLO.
std::optional<Glitch> outlier_after_steady_spans(GlitchDetector& d, bool recipe) {
  uint64_t t = 10'000 * ms;
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(d.observe(span(t += 2 * ms, 1 * ms, recipe)));
  }
  return d.observe(span(t += 10 * ms, 5 * ms, recipe));
}

TEST(RecipeNoiseFloor, ShortRecipeSpansAreNeverP99Glitches) {
  GlitchConfig cfg;
  cfg.min_samples = 50;
  GlitchDetector recipes(cfg);
  EXPECT_FALSE(outlier_after_steady_spans(recipes, true));
  // The same stream from the SDK is judged as before.
  GlitchDetector sdk(cfg);
  auto g = outlier_after_steady_spans(sdk, false);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->check.reason, GlitchReason::over_p99);
}

TEST(RecipeNoiseFloor, AFloorOfZeroJudgesEverySpanAndTheSloAlwaysHolds) {
  GlitchConfig cfg;
  cfg.min_samples = 50;
  cfg.recipe_noise_floor_ns = 0;
  GlitchDetector d(cfg);
  EXPECT_TRUE(outlier_after_steady_spans(d, true));

  GlitchConfig slo;
  slo.stage_slo_ns = 2 * ms;  // under the floor: the SLO rule still applies
  GlitchDetector s(slo);
  auto g = s.observe(span(10'000 * ms, 5 * ms, true));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->check.reason, GlitchReason::over_slo);
}

TEST(RecipeNoiseFloor, ConfigKeyHasADefaultAndIsValidated) {
  EXPECT_EQ(Config{}.glitch.recipe_noise_floor_ms, 20u);
  EXPECT_EQ(AnalyzerSettings::from(Config{}).glitch.recipe_noise_floor_ns, 20 * ms);
  const Config c = parse_config("glitch:\n  recipe_noise_floor_ms: 50\n", "t.yaml");
  EXPECT_EQ(c.glitch.recipe_noise_floor_ms, 50u);
  EXPECT_EQ(AnalyzerSettings::from(c).glitch.recipe_noise_floor_ns, 50 * ms);
  EXPECT_EQ(
      parse_config("glitch:\n  recipe_noise_floor_ms: 0\n", "t.yaml").glitch.recipe_noise_floor_ms,
      0u);
  try {
    parse_config("glitch:\n  recipe_noise_floor_ms: -3\n", "t.yaml");
    FAIL() << "a negative floor was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("glitch.recipe_noise_floor_ms"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tailcause::core
