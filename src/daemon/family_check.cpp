// SPDX-License-Identifier: Apache-2.0
#include "daemon/family_check.h"

#include "core/record/schema.h"

namespace tailcause::daemon {
namespace {

std::string label(const core::Labels& labels, const std::string& key) {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

}  // namespace

FamilyCheck check_families(const Startup& startup) {
  probes::ProbeSet set(startup.features, startup.layout);
  set.apply(startup.config);
  FamilyCheck out;
  out.families = set.status();
  core::MetricSet metrics;
  set.collect(metrics);
  out.recipes = recipe_checks(metrics);
  for (auto& d : set.recipe_details()) {
    for (auto& r : out.recipes) {
      if (r.library != d.library || r.symbol != d.symbol) continue;
      r.files = d.files;
      r.why = d.why;
    }
  }
  set.stop_all();
  return out;
}

std::vector<RecipeCheck> recipe_checks(const core::MetricSet& metrics) {
  std::vector<RecipeCheck> out;
  const core::MetricFamily* status = nullptr;
  for (const auto& f : metrics.families()) {
    if (f.name == core::metric::kRecipeStatus) status = &f;
  }
  if (!status) return out;
  auto value = [&](const char* name, const core::Labels& want) -> uint64_t {
    const core::Sample* s = metrics.find(name, want);
    return s ? static_cast<uint64_t>(s->value) : 0;
  };
  for (const auto& s : status->samples) {
    RecipeCheck r;
    r.library = label(s.labels, "library");
    r.symbol = label(s.labels, "symbol");
    r.state = label(s.labels, "state");
    const core::Labels key{{"library", r.library}, {"symbol", r.symbol}};
    r.attached_files = value(core::metric::kRecipeAttachedFiles, key);
    r.calls = value(core::metric::kRecipeCalls, key);
    r.spans = value(core::metric::kRecipeSpans, key);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tailcause::daemon
