// SPDX-License-Identifier: Apache-2.0
// The configuration sections of the glitch path: detectors (glitch, cache_breakdown, entropy,
// breaker) and sinks (journal, otlp), and the OTLP endpoint check.
#include <algorithm>
#include <cctype>

#include "core/config/config.h"
#include "core/config/config_reader.h"
#include "core/config/config_yaml.h"

namespace tailcause::core {

namespace {

// Milliseconds, 1 ms to one hour. A function, not a local lambda: the section handlers call it
// after glitch_section_handlers() has returned, so a local would be gone by then.
Reader::Handler ms_handler(Reader& r, uint32_t& field) {
  return [&r, &field](const YAML::Node& n, const std::string& k) {
    field = r.positive(n, k, 3600000);
  };
}

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
  return {
      {"glitch",
       [&](const YAML::Node& n, const std::string& k) {
         auto& g = c.glitch;
         auto h = slo_handlers(r, g);
         h.emplace("slo_file", [&](const YAML::Node& v, const std::string& kk) {
           g.slo_file = r.string(v, kk);
         });
         h.emplace("p99_factor", [&](const YAML::Node& v, const std::string& kk) {
           g.p99_factor = r.number(v, kk, 1.0, 1000.0);
         });
         h.emplace("min_samples", [&](const YAML::Node& v, const std::string& kk) {
           g.min_samples = r.positive(v, kk, 1000000);
         });
         h.emplace("recipe_noise_floor_ms", [&](const YAML::Node& v, const std::string& kk) {
           g.recipe_noise_floor_ms = static_cast<uint32_t>(r.number(v, kk, 0, 3600000));
         });
         h.emplace("incident", [&](const YAML::Node& v, const std::string& kk) {
           incident_section(r, v, kk, g.incident);
         });
         r.mapping(n, k, h);
       }},
      {"cache_breakdown",
       [&](const YAML::Node& n, const std::string& k) {
         auto& b = c.cache_breakdown;
         r.mapping(
             n, k,
             {{"window_s", [&](const YAML::Node& v,
                               const std::string& kk) { b.window_s = r.positive(v, kk, 86400); }},
              {"min_lookups",
               [&](const YAML::Node& v, const std::string& kk) {
                 b.min_lookups = r.positive(v, kk, 1000000);
               }},
              {"ratio", [&](const YAML::Node& v,
                            const std::string& kk) { b.ratio = r.number(v, kk, 0.01, 1.0); }},
              {"warmup_s", [&](const YAML::Node& v, const std::string& kk) {
                 b.warmup_s = static_cast<uint32_t>(r.number(v, kk, 0, 86400));
               }}});
       }},
      {"entropy",
       [&](const YAML::Node& n, const std::string& k) {
         auto& e = c.entropy;
         r.mapping(
             n, k,
             {{"rise", [&](const YAML::Node& v,
                           const std::string& kk) { e.rise = r.number(v, kk, 0.01, 100.0); }},
              {"outputs", [&](const YAML::Node& v,
                              const std::string& kk) { e.outputs = r.positive(v, kk, 1000); }},
              {"correlation_ms", ms_handler(r, e.correlation_ms)}});
       }},
      {"breaker",
       [&](const YAML::Node& n, const std::string& k) {
         auto& b = c.breaker;
         r.mapping(
             n, k,
             {{"slow_ms", ms_handler(r, b.slow_ms)},
              {"trip_after",
               [&](const YAML::Node& v, const std::string& kk) {
                 b.trip_after = r.positive(v, kk, 1000);
               }},
              {"quiet_s", [&](const YAML::Node& v,
                              const std::string& kk) { b.quiet_s = r.positive(v, kk, 86400); }},
              {"socket",
               [&](const YAML::Node& v, const std::string& kk) {
                 b.socket = r.path_or_empty(v, kk);
                 // sun_path holds 108 bytes with the NUL.
                 if (b.socket.size() > 107) r.fail(v, kk, "longer than 107 bytes");
               }},
              {"socket_group",
               [&](const YAML::Node& v, const std::string& kk) {
                 b.socket_group = r.string(v, kk);
                 if (!is_group_name(b.socket_group)) {
                   r.fail(v, kk, "expected a group name or a numeric gid (\"\": the daemon's own)");
                 }
               }},
              {"socket_mode",
               [&](const YAML::Node& v, const std::string& kk) {
                 b.socket_mode = parse_socket_mode(r, v, kk);
               }},
              {"state_file", [&](const YAML::Node& v, const std::string& kk) {
                 b.state_file = r.path_or_empty(v, kk);
               }}});
       }},
      {"journal",
       [&](const YAML::Node& n, const std::string& k) {
         auto& j = c.journal;
         r.mapping(n, k,
                   {{"path", [&](const YAML::Node& v,
                                 const std::string& kk) { j.path = r.path_or_empty(v, kk); }},
                    {"max_age_h",
                     [&](const YAML::Node& v, const std::string& kk) {
                       j.max_age_h = r.positive(v, kk, 24 * 3650);
                     }},
                    {"max_mb", [&](const YAML::Node& v, const std::string& kk) {
                       j.max_mb = r.positive(v, kk, 1024 * 1024);
                     }}});
       }},
      {"kubernetes",
       [&](const YAML::Node& n, const std::string& k) {
         auto& kc = c.kubernetes;
         auto flag = [&](bool& field) {
           return [&r, &field](const YAML::Node& v, const std::string& kk) {
             field = r.boolean(v, kk);
           };
         };
         r.mapping(
             n, k,
             {{"pod_labels", flag(kc.pod_labels)},
              {"pod_list",
               [&](const YAML::Node& v, const std::string& kk) {
                 kc.pod_list = r.string(v, kk);
                 const bool url =
                     kc.pod_list.starts_with("http://") || kc.pod_list.starts_with("https://");
                 if (!kc.pod_list.empty() && !url && kc.pod_list.front() != '/') {
                   r.fail(v, kk, "expected an absolute path, an http(s):// URL or \"\"");
                 }
               }},
              {"token_file",
               [&](const YAML::Node& v, const std::string& kk) {
                 kc.token_file = r.path_or_empty(v, kk);
               }},
              {"ca_file", [&](const YAML::Node& v,
                              const std::string& kk) { kc.ca_file = r.path_or_empty(v, kk); }},
              {"insecure_skip_tls_verify", flag(kc.insecure_skip_tls_verify)}});
       }},
      {"otlp", [&](const YAML::Node& n, const std::string& k) {
         auto& o = c.otlp;
         r.mapping(n, k,
                   {{"endpoint",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.endpoint = r.string(v, kk);
                       if (o.endpoint.empty()) return;
                       try {
                         parse_otlp_endpoint(o.endpoint);
                       } catch (const ConfigError& e) {
                         r.fail(v, kk, e.what());
                       }
                     }},
                    {"headers",
                     [&](const YAML::Node& v, const std::string& kk) {
                       if (v.IsNull()) return;
                       if (!v.IsMap()) r.fail(v, kk, "expected a mapping NAME: VALUE");
                       for (const auto& item : v) {
                         const std::string name = item.first.Scalar();
                         const std::string hk = kk + "." + name;
                         if (name.empty() || name.find_first_of(" :\r\n\t") != std::string::npos) {
                           r.fail(item.first, hk, "not an HTTP header name");
                         }
                         std::string value = r.string(item.second, hk);
                         if (value.find_first_of("\r\n") != std::string::npos) {
                           r.fail(item.second, hk, "a header value cannot hold a line break");
                         }
                         o.headers[name] = std::move(value);
                       }
                     }},
                    {"service_name",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.service_name = r.string(v, kk);
                       if (o.service_name.empty()) r.fail(v, kk, "must not be empty");
                     }},
                    {"budget_spans_per_s",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.budget_spans_per_s = r.positive(v, kk, 1000000);
                     }},
                    {"sample_normal",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.sample_normal = r.number(v, kk, 0.0, 1.0);
                     }},
                    {"queue_spans",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.queue_spans = r.positive(v, kk, 10000000);
                     }},
                    {"batch_spans",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.batch_spans = r.positive(v, kk, 100000);
                     }},
                    {"timeout_ms", ms_handler(r, o.timeout_ms)},
                    {"compression",
                     [&](const YAML::Node& v, const std::string& kk) {
                       o.compression = r.one_of(v, kk, {"gzip", "none"});
                     }},
                    {"resource_attributes", [&](const YAML::Node& v, const std::string& kk) {
                       if (v.IsNull()) return;
                       if (!v.IsMap()) r.fail(v, kk, "expected a mapping KEY: VALUE");
                       for (const auto& item : v) {
                         const std::string name = item.first.Scalar();
                         const std::string ak = kk + "." + name;
                         if (name.empty()) r.fail(item.first, ak, "empty attribute name");
                         std::string value = r.string(item.second, ak);
                         if (name == "service.name") {
                           r.fail(item.first, ak, "set otlp.service_name instead");
                         }
                         o.resource_attributes[name] = std::move(value);
                       }
                     }}});
       }}};
}

void check_glitch_sections(Reader& r, const Config& c) {
  if (c.otlp.batch_spans > c.otlp.queue_spans) {
    const std::string key = "otlp.batch_spans";
    r.fail_at(r.key_line(key).value_or(r.key_line("otlp.queue_spans").value_or(1)), key,
              fmt::format("batch_spans ({}) must not exceed queue_spans ({})", c.otlp.batch_spans,
                          c.otlp.queue_spans));
  }
}

OtlpEndpoint parse_otlp_endpoint(std::string_view text) {
  auto bad = [&](const char* why) -> ConfigError {
    return ConfigError(fmt::format("OTLP endpoint '{}': {}", text, why));
  };
  OtlpEndpoint e;
  std::string_view rest = text;
  if (rest.starts_with("http://")) {
    e.scheme = "http";
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    e.scheme = "https";
    rest.remove_prefix(8);
  } else {
    throw bad("expected http://HOST:PORT/v1/traces (OTLP/HTTP)");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  e.path = slash == std::string_view::npos ? "/v1/traces" : std::string(rest.substr(slash));
  for (unsigned char ch : e.path) {
    if (ch <= ' ' || ch == 0x7f || ch == '#')
      throw bad("the path holds a space or a control character");
  }
  if (authority.find('@') != std::string_view::npos)
    throw bad("credentials belong in otlp.headers");
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || close < 2) throw bad("unbalanced IPv6 brackets");
    e.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("expected :PORT after the IPv6 host");
      port = after.substr(1);
      if (port.empty()) throw bad("empty port");
    }
  } else {
    const auto colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) throw bad("empty port");
    }
  }
  if (e.host.empty()) throw bad("no host");
  for (unsigned char ch : e.host) {
    if (!std::isalnum(ch) && ch != '.' && ch != '-' && ch != '_' && ch != ':') {
      throw bad("the host holds a character a host name cannot");
    }
  }
  e.port = e.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535) {
      throw bad("port must be 1-65535");
    }
    e.port = static_cast<uint16_t>(v);
  }
  return e;
}

}  // namespace tailcause::core
