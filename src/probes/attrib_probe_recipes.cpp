// SPDX-License-Identifier: Apache-2.0
// AttribProbe's recipes: filling the BPF side's recipe table, rescans, and each recipe's
// status (problems, files, calls, spans) for `probes` and the metrics. The attaching itself is
// RecipeAttacher's (recipe_attach.cpp).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "bpf/attrib.h"
#include "core/config/config.h"
#include "core/record/schema.h"
#include "core/record/stage_record.h"
#include "probes/attrib_probe.h"
#include "probes/bpf_loader.h"
#include "attrib.skel.h"

namespace tailcause::probes {

// Takes the recipes (inline, and those the configuration read from its files), fills
// attrib_recipes (index = BPF cookie) and hands them to the attacher.
void AttribProbe::load_recipes(const core::AttribConfig& config) {
  recipe_table_errors_.clear();
  auto recipes = core::all_recipes(config);
  if (recipes.size() > ATTRIB_MAX_RECIPES) {
    recipe_table_errors_.push_back(
        fmt::format("{} recipes, at most {} are used", recipes.size(), ATTRIB_MAX_RECIPES));
    recipes.resize(ATTRIB_MAX_RECIPES);
  }
  for (const auto& e : recipe_table_errors_) spdlog::error("attrib: {}", e);
  const int fd = bpf_map__fd(skel_->maps.attrib_recipes);
  for (uint32_t i = 0; i < recipes.size(); ++i) {
    const core::Recipe& r = recipes[i];
    attrib_recipe value{};
    value.mode = r.kind == "gpu_sync" ? ATTRIB_RECIPE_GPU_SYNC
                 : r.kind == "count"  ? ATTRIB_RECIPE_COUNT
                                      : ATTRIB_RECIPE_SPAN;
    value.stage_kind = ATTRIB_STAGE_OTHER;
    for (uint32_t k = 0; k < ATTRIB_STAGE_OTHER; ++k) {
      if (r.stage == core::stage_label(k, "", false, nullptr)) value.stage_kind = k;
    }
    std::strncpy(value.stage_name, r.stage.c_str(), ATTRIB_MAX_NAME);
    value.whole_request = r.whole_request ? 1 : 0;
    check(bpf_map_update_elem(fd, &i, &value, BPF_ANY) ? -errno : 0, kFamily, "fill recipes");
  }
  recipes_.configure(skel_->progs.attrib_recipe_entry, skel_->progs.attrib_recipe_return,
                     std::move(recipes));
}

void AttribProbe::rescan_recipes() {
  if (!skel_) return;
  last_recipe_scan_ = std::chrono::steady_clock::now();
  recipes_.sync(only_pid_);
}

std::vector<std::string> AttribProbe::recipe_problems() const {
  auto out = recipe_table_errors_;
  out.insert(out.end(), recipes_.problems().begin(), recipes_.problems().end());
  return out;
}

uint64_t AttribProbe::recipe_spans(size_t index) const {
  return skel_ ? percpu_sum(bpf_map__fd(skel_->maps.attrib_recipe_spans),
                            static_cast<uint32_t>(index))
               : 0;
}

uint64_t AttribProbe::recipe_calls(size_t index) const {
  return skel_ ? percpu_sum(bpf_map__fd(skel_->maps.attrib_recipe_calls),
                            static_cast<uint32_t>(index))
               : 0;
}

std::vector<RecipeDetail> AttribProbe::recipe_details() const {
  std::vector<RecipeDetail> out;
  for (size_t i = 0; i < recipes_.recipes().size(); ++i) {
    const core::Recipe& r = recipes_.recipes()[i];
    auto st = recipes_.status(i);
    out.push_back({r.library, r.symbol, std::move(st.files), std::move(st.detail)});
  }
  return out;
}

void AttribProbe::collect_recipes(core::MetricSet& out) const {
  for (size_t i = 0; i < recipes_.recipes().size(); ++i) {
    const core::Recipe& r = recipes_.recipes()[i];
    const core::Labels labels{{"library", r.library}, {"symbol", r.symbol}};
    out.add(core::metric::kRecipeCalls, core::MetricType::Counter,
            "Calls of the symbols uprobe recipes name (all threads, nested calls included)", labels,
            static_cast<double>(recipe_calls(i)));
    out.add(core::metric::kRecipeSpans, core::MetricType::Counter,
            "Stage spans uprobe recipes produced (outermost calls that returned)", labels,
            static_cast<double>(recipe_spans(i)));
    const auto st = recipes_.status(i);
    out.add(core::metric::kRecipeAttachedFiles, core::MetricType::Gauge,
            "Library files a uprobe recipe's symbol is attached in", labels,
            static_cast<double>(st.attached_files));
    core::Labels with_state = labels;
    with_state.emplace_back("state", core::recipe_state_name(st.state));
    out.add(core::metric::kRecipeStatus, core::MetricType::Gauge,
            "Where each uprobe recipe stands (1 for its state: attached, symbol_missing, "
            "library_mismatch, library_unmapped)",
            with_state, 1);
  }
}

}  // namespace tailcause::probes
