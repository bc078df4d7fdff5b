// SPDX-License-Identifier: Apache-2.0
// The configuration sections of the glitch path's detectors: glitch (with its SLOs, also read
// from a glitch.slo_file), cache_breakdown, entropy and breaker, one function per section.
#include <algorithm>
#include <cctype>

#include "core/config/config.h"
#include "core/config/config_reader.h"
#include "core/config/config_yaml.h"

namespace tailcause::core {

namespace {

// glitch.incident: the sustained-slowdown detector (core/detect/incident_detector.h).
void incident_section(Reader& r, const YAML::Node& n, const std::string& k, IncidentSettings& i) {
  // At least `min`: a window of 2 has no median, a baseline of a few stages no normal.
  auto at_least = [&r](const YAML::Node& v, const std::string& key, uint32_t min, uint32_t max) {
    const uint32_t x = r.positive(v, key, max);
    if (x < min) r.fail(v, key, fmt::format("expected {} to {}, got {}", min, max, x));
    return x;
  };
  r.mapping(
      n, k,
      {{"enabled",
        [&](const YAML::Node& v, const std::string& kk) { i.enabled = r.boolean(v, kk); }},
       {"factor", [&](const YAML::Node& v,
                      const std::string& kk) { i.factor = r.number(v, kk, 1.2, 100.0); }},
       {"min_samples",
        [&](const YAML::Node& v, const std::string& kk) {
          i.min_samples = at_least(v, kk, 20, 1000000);
        }},
       {"horizon", [&](const YAML::Node& v,
                       const std::string& kk) { i.horizon = at_least(v, kk, 100, 10000000); }},
       {"window",
        [&](const YAML::Node& v, const std::string& kk) { i.window = at_least(v, kk, 3, 1001); }},
       {"min_excess_ms",
        [&](const YAML::Node& v, const std::string& kk) {
          i.min_excess_ms = r.number(v, kk, 0.0, 60000.0);
        }},
       {"quiet_s",
        [&](const YAML::Node& v, const std::string& kk) { i.quiet_s = r.positive(v, kk, 3600); }}});
}

// A group as useradd(8) allows it, or a numeric gid; "" keeps the daemon's own group.
bool is_group_name(const std::string& s) {
  if (s.empty()) return true;
  if (s.size() > 32) return false;
  if (std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch); }))
    return true;
  if (!(std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char ch) {
    return std::islower(ch) || std::isdigit(ch) || ch == '_' || ch == '-';
  });
}

// Octal, as chmod takes it ("0660"): the owner reads and writes; the group may write too (a
// client needs write permission to connect), read alone would be useless; others get nothing.
uint32_t parse_socket_mode(const Reader& r, const YAML::Node& v, const std::string& key) {
  const std::string text = r.string(v, key);
  const bool octal =
      text.size() >= 3 && text.size() <= 4 &&
      std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '7'; });
  const uint32_t mode = octal ? static_cast<uint32_t>(std::stoul(text, nullptr, 8)) : 0;
  if (!octal || mode > 0777)
    r.fail(v, key, fmt::format("expected an octal mode such as \"0660\", got '{}'", text));
  if ((mode & 0700) != 0600) r.fail(v, key, "the owner needs read and write (06xx) and no execute");
  if (mode & 0007) r.fail(v, key, "others must get nothing (xx0): the socket answers every tenant");
  const uint32_t group = (mode >> 3) & 7;
  if (group != 0 && group != 2 && group != 6) {
    r.fail(v, key,
           "the group gets nothing, or write with or without read (0620, 0660): connecting needs "
           "write");
  }
  return mode;
}

// The SLO keys, the same in the configuration and in a glitch.slo_file.
std::map<std::string, Reader::Handler> slo_handlers(Reader& r, GlitchSettings& g) {
  return {{"request_slo_ms", ms_handler(r, g.request_slo_ms)},
          {"stage_slo_ms", ms_handler(r, g.stage_slo_ms)},
          {"stage_slos_ms", [&r, &g](const YAML::Node& v, const std::string& kk) {
             if (v.IsNull()) return;
             if (!v.IsMap()) r.fail(v, kk, "expected a mapping STAGE: MILLISECONDS");
             g.stage_slos_ms.clear();
             for (const auto& item : v) {
               const std::string stage = item.first.Scalar();
               const std::string sk = kk + "." + stage;
               if (!is_stage_name(stage)) {
                 r.fail(item.first, sk,
                        "not a stage name (1-32 letters, digits, "
                        "'_', '-', '.', ':')");
               }
               g.stage_slos_ms[stage] = r.positive(item.second, sk, 3600000);
             }
           }}};
}

// glitch: the SLOs, how far over its P99 a stage glitches, and the incident detector.
void glitch_section(Reader& r, const YAML::Node& n, const std::string& k, GlitchSettings& g) {
  auto h = slo_handlers(r, g);
  h.emplace("slo_file",
            [&](const YAML::Node& v, const std::string& kk) { g.slo_file = r.string(v, kk); });
  h.emplace("p99_factor", [&](const YAML::Node& v, const std::string& kk) {
    g.p99_factor = r.number(v, kk, 1.0, 1000.0);
  });
  h.emplace("min_samples", [&](const YAML::Node& v, const std::string& kk) {
    g.min_samples = r.positive(v, kk, 1000000);
  });
  h.emplace("recipe_noise_floor_ms", [&](const YAML::Node& v, const std::string& kk) {
    g.recipe_noise_floor_ms = static_cast<uint32_t>(r.number(v, kk, 0, 3600000));
  });
  h.emplace("incident", section_handler(r, g.incident, incident_section));
  r.mapping(n, k, h);
}

// cache_breakdown: a tenant's vector cache whose misses and stale results pass a ratio.
void cache_breakdown_section(Reader& r, const YAML::Node& n, const std::string& k,
                             CacheBreakdownSettings& b) {
  r.mapping(
      n, k,
      {{"window_s",
        [&](const YAML::Node& v, const std::string& kk) { b.window_s = r.positive(v, kk, 86400); }},
       {"min_lookups", [&](const YAML::Node& v,
                           const std::string& kk) { b.min_lookups = r.positive(v, kk, 1000000); }},
       {"ratio",
        [&](const YAML::Node& v, const std::string& kk) { b.ratio = r.number(v, kk, 0.01, 1.0); }},
       {"warmup_s", [&](const YAML::Node& v, const std::string& kk) {
          b.warmup_s = static_cast<uint32_t>(r.number(v, kk, 0, 86400));
        }}});
}

// entropy: output-entropy spikes held over consecutive outputs.
void entropy_section(Reader& r, const YAML::Node& n, const std::string& k, EntropySettings& e) {
  r.mapping(n, k,
            {{"rise", [&](const YAML::Node& v,
                          const std::string& kk) { e.rise = r.number(v, kk, 0.01, 100.0); }},
             {"outputs", [&](const YAML::Node& v,
                             const std::string& kk) { e.outputs = r.positive(v, kk, 1000); }},
             {"correlation_ms", ms_handler(r, e.correlation_ms)}});
}

// breaker.socket: "" or an absolute path that fits sun_path (108 bytes with the NUL).
std::string parse_socket_path(const Reader& r, const YAML::Node& v, const std::string& key) {
  std::string socket = r.path_or_empty(v, key);
  if (socket.size() > 107) r.fail(v, key, "longer than 107 bytes");
  return socket;
}

std::string parse_socket_group(const Reader& r, const YAML::Node& v, const std::string& key) {
  std::string group = r.string(v, key);
  if (!is_group_name(group)) {
    r.fail(v, key, "expected a group name or a numeric gid (\"\": the daemon's own)");
  }
  return group;
}

// breaker: when the circuit breaker trips, and the socket it answers on.
void breaker_section(Reader& r, const YAML::Node& n, const std::string& k, BreakerSettings& b) {
  r.mapping(
      n, k,
      {{"slow_ms", ms_handler(r, b.slow_ms)},
       {"trip_after", [&](const YAML::Node& v,
                          const std::string& kk) { b.trip_after = r.positive(v, kk, 1000); }},
       {"quiet_s",
        [&](const YAML::Node& v, const std::string& kk) { b.quiet_s = r.positive(v, kk, 86400); }},
       {"socket", [&](const YAML::Node& v,
                      const std::string& kk) { b.socket = parse_socket_path(r, v, kk); }},
       {"socket_group",
        [&](const YAML::Node& v, const std::string& kk) {
          b.socket_group = parse_socket_group(r, v, kk);
        }},
       {"socket_mode", [&](const YAML::Node& v,
                           const std::string& kk) { b.socket_mode = parse_socket_mode(r, v, kk); }},
       {"state_file", [&](const YAML::Node& v, const std::string& kk) {
          b.state_file = r.path_or_empty(v, kk);
        }}});
}

}  // namespace

void apply_slo_file(std::string_view yaml_text, std::string_view source, GlitchSettings& g) {
  const YAML::Node root = load_yaml_document(yaml_text, source);
  Reader r(source);
  if (!root.IsMap() || !root["glitch"]) {
    r.fail_at(1, "glitch",
              "no glitch: section with the SLOs (request_slo_ms, stage_slo_ms, "
              "stage_slos_ms)");
  }
  GlitchSettings next = g;
  r.mapping(root["glitch"], "glitch", slo_handlers(r, next));
  g = next;
}

std::map<std::string, Reader::Handler> glitch_section_handlers(Reader& r, Config& c) {
  return {{"glitch", section_handler(r, c.glitch, glitch_section)},
          {"cache_breakdown", section_handler(r, c.cache_breakdown, cache_breakdown_section)},
          {"entropy", section_handler(r, c.entropy, entropy_section)},
          {"breaker", section_handler(r, c.breaker, breaker_section)}};
}
}  // namespace tailcause::core
