// SPDX-License-Identifier: Apache-2.0
// The unit tests' one way to make a core::StageRecord: a fluent builder that starts from the
// record's own defaults and sets only what a test names, e.g.
//   StageBuilder().tenant("ta").agent("rag").stage(StageKind::generation).end_ns(now)
//       .component(Component::on_cpu, 10 * ms).build()
// Times: whichever of start, end and wall a test gives fix the others; the wall, when not
// given, is the sum of the components (so a stage made of components alone adds up).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/record/schema.h"
#include "core/record/stage_kind.h"
#include "core/record/stage_record.h"

namespace tailcause::testing {

class StageBuilder {
 public:
  static constexpr uint64_t kMs = 1'000'000;

  // ---- who ----
  StageBuilder& identity(core::Identity id) {
    r_.id = std::move(id);
    return *this;
  }
  StageBuilder& tenant(std::string tenant) {
    r_.id.tenant = std::move(tenant);
    return *this;
  }
  StageBuilder& agent(std::string agent) {
    r_.id.agent = std::move(agent);
    return *this;
  }
  StageBuilder& request(uint64_t request_id) {
    r_.id.request_id = request_id;
    return *this;
  }
  StageBuilder& pid(uint32_t pid) {
    r_.id.pid = pid;
    return *this;
  }
  StageBuilder& trace_id(std::string trace_id) {
    r_.id.trace_id = std::move(trace_id);
    return *this;
  }
  StageBuilder& tid(uint32_t tid) {
    r_.tid = tid;
    return *this;
  }

  // ---- what ----
  // A fixed stage: its name and its kind.
  StageBuilder& stage(core::StageKind kind) {
    r_.stage = core::stage_kind_name(kind);
    r_.kind = core::stage_kind_value(kind);
    return *this;
  }
  // The stage's label alone; the kind stays as it is (StageRecord's default, or kind()).
  StageBuilder& stage(std::string name) {
    r_.stage = std::move(name);
    return *this;
  }
  StageBuilder& kind(core::StageKind kind) {
    r_.kind = core::stage_kind_value(kind);
    return *this;
  }
  StageBuilder& kind(uint32_t raw) {  // StageRecord::kWorkerSpanKind, or a kind no SDK sends
    r_.kind = raw;
    return *this;
  }
  StageBuilder& flags(uint32_t flags) {  // ATTRIB_SPAN_*
    r_.flags = flags;
    return *this;
  }

  // ---- when ----
  StageBuilder& start_ns(uint64_t ns) {
    start_ = ns;
    return *this;
  }
  StageBuilder& end_ns(uint64_t ns) {
    end_ = ns;
    return *this;
  }
  StageBuilder& wall_ns(uint64_t ns) {
    wall_ = ns;
    return *this;
  }
  StageBuilder& start_ms(uint64_t ms) { return start_ns(ms * kMs); }
  StageBuilder& end_ms(uint64_t ms) { return end_ns(ms * kMs); }
  StageBuilder& wall_ms(uint64_t ms) { return wall_ns(ms * kMs); }

  // ---- where the time went ----
  // Adds `ns` to the component (a component named twice gets both).
  StageBuilder& component(core::Component c, uint64_t ns) {
    r_.component_ns[core::index_of(c)] += ns;
    return *this;
  }
  StageBuilder& page_cache_misses(uint64_t n) {
    r_.page_cache_misses = n;
    return *this;
  }

  // Start and end: both as given; one of them and the wall (given, or the components' sum):
  // the other; neither: from 0. A start, an end and a wall that disagree are a test's bug.
  core::StageRecord build() const {
    core::StageRecord r = r_;
    uint64_t components = 0;
    for (uint64_t ns : r.component_ns) components += ns;
    const uint64_t wall = wall_.value_or(components);
    if (start_ && end_ && wall_ && *end_ - *start_ != *wall_) {
      throw std::logic_error("StageBuilder: start, end and wall disagree");
    }
    if (end_ && !start_) {
      r.end_ns = *end_;
      r.start_ns = *end_ - wall;
    } else {
      r.start_ns = start_.value_or(0);
      r.end_ns = end_.value_or(r.start_ns + wall);
    }
    return r;
  }

 private:
  core::StageRecord r_;
  std::optional<uint64_t> start_, end_, wall_;
};

}  // namespace tailcause::testing
