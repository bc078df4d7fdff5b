// SPDX-License-Identifier: Apache-2.0
#include "export/exposition.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "core/record/utf8.h"

namespace tailcause::exporter {
namespace {

using core::MetricType;

// Escapes backslash and newline (and the double quote when `quotes`). Cgroup names and other
// label sources are arbitrary bytes, but Prometheus rejects the whole scrape on invalid UTF-8,
// so each invalid byte becomes U+FFFD.
std::string escape(std::string_view s, bool quotes) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = core::utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void labels(std::string& out, const core::Labels& ls, const char* extra_name = nullptr,
            const std::string& extra_value = "") {
  if (ls.empty() && !extra_name) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : ls) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += escape(v, true);
    out += '"';
  }
  if (extra_name) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void exemplar(std::string& out, const std::optional<core::Exemplar>& e) {
  if (!e) return;
  out += " # ";
  if (e->labels.empty()) {
    out += "{}";
  } else {
    labels(out, e->labels);
  }
  out += ' ';
  out += number(e->value);
  if (e->timestamp) {
    out += ' ';
    out += fmt::format("{:.3f}", *e->timestamp);
  }
}

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
  }
  return "untyped";
}

void line(std::string& out, const std::string& name, const core::Labels& ls, double value,
          const char* extra_name = nullptr, const std::string& extra_value = "") {
  out += name;
  labels(out, ls, extra_name, extra_value);
  out += ' ';
  out += number(value);
}

// OpenMetrics requires the family name to end in "_<unit>"; Prometheus rejects the whole
// scrape otherwise, so a unit that does not match the name is left out.
bool unit_is_suffix(const core::MetricFamily& f) {
  const std::string suffix = "_" + f.unit;
  return !f.unit.empty() && f.name.size() > suffix.size() &&
         f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct MediaRange {
  std::string type;     // lower case, "*" for any
  std::string subtype;  // lower case, "*" for any
  std::string version;  // the version parameter, empty when absent
  double q = 1;         // 0 (refused) to 1; a malformed q counts as refused
};

// One element of an Accept header: type/subtype;param=value;...
std::optional<MediaRange> parse_media_range(std::string_view item) {
  const auto parts = split(item, ';');
  const std::string media = lower(trim(parts.front()));
  const auto slash = media.find('/');
  if (slash == std::string::npos) return std::nullopt;
  MediaRange r{media.substr(0, slash), media.substr(slash + 1), "", 1};
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key = lower(trim(parts[i].substr(0, eq)));
    std::string_view value = trim(parts[i].substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "q") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), r.q);
      if (ec != std::errc() || end != value.data() + value.size() || r.q < 0 || r.q > 1) r.q = 0;
    } else if (key == "version") {
      r.version = value;
    }
  }
  return r;
}

}  // namespace

std::string render(const core::MetricSet& set, Format format) {
  const bool om = format == Format::OpenMetrics;
  std::string out;
  out.reserve(64 * 1024);
  for (const auto& f : set.families()) {
    if (f.samples.empty()) continue;
    const bool counter = f.type == MetricType::Counter;
    // Text format names a counter family with its _total suffix; OpenMetrics without.
    const std::string family = (!om && counter) ? f.name + "_total" : f.name;
    out += fmt::format("# HELP {} {}\n", family, escape(f.help, om));
    out += fmt::format("# TYPE {} {}\n", family, type_name(f.type));
    if (om && unit_is_suffix(f)) out += fmt::format("# UNIT {} {}\n", family, f.unit);
    for (const auto& s : f.samples) {
      if (f.type == MetricType::Histogram) {
        const auto& h = s.histogram;
        for (size_t i = 0; i < h.buckets.size(); ++i) {
          line(out, f.name + "_bucket", s.labels, static_cast<double>(h.buckets[i].second), "le",
               number(h.buckets[i].first));
          if (om && i < h.exemplars.size()) exemplar(out, h.exemplars[i]);
          out += '\n';
        }
        line(out, f.name + "_bucket", s.labels, static_cast<double>(h.count), "le", "+Inf");
        if (om && h.buckets.size() < h.exemplars.size()) {
          exemplar(out, h.exemplars[h.buckets.size()]);
        }
        out += '\n';
        line(out, f.name + "_sum", s.labels, h.sum);
        out += '\n';
        line(out, f.name + "_count", s.labels, static_cast<double>(h.count));
        out += '\n';
      } else {
        line(out, counter ? f.name + "_total" : f.name, s.labels, s.value);
        if (om && counter) exemplar(out, s.exemplar);
        out += '\n';
      }
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

std::string_view content_type(Format format) {
  return format == Format::OpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

Format negotiate(std::string_view accept) {
  // RFC 9110: each format gets the q of the most specific media range that matches it; the
  // higher q wins, and on a tie the range listed first. We serve OpenMetrics 0.0.1/1.0.0 (the
  // same text) and text 0.0.4 (valid 1.0.0 text too); anything else falls back to text.
  struct Match {
    int specificity = 0;  // 0 none, 1 */*, 2 type/*, 3 exact
    double q = 0;
    size_t index = 0;
    void offer(int spec, double quality, size_t at) {
      if (spec > specificity || (spec == specificity && quality > q)) {
        *this = Match{spec, quality, at};
      }
    }
  };
  Match om;
  Match text;
  size_t index = 0;
  for (const auto& item : split(accept, ',')) {
    const auto r = parse_media_range(item);
    if (!r) continue;
    const size_t at = index++;
    if (r->type == "*" && r->subtype == "*") {
      om.offer(1, r->q, at);
      text.offer(1, r->q, at);
    } else if (r->type == "application" && r->subtype == "*") {
      om.offer(2, r->q, at);
    } else if (r->type == "text" && r->subtype == "*") {
      text.offer(2, r->q, at);
    } else if (r->type == "application" && r->subtype == "openmetrics-text" &&
               (r->version.empty() || r->version == "1.0.0" || r->version == "0.0.1")) {
      om.offer(3, r->q, at);
    } else if (r->type == "text" && r->subtype == "plain" &&
               (r->version.empty() || r->version == "0.0.4" || r->version == "1.0.0")) {
      text.offer(3, r->q, at);
    }
  }
  const bool om_wins = om.q > text.q || (om.q == text.q && om.index < text.index);
  return om.specificity > 0 && om.q > 0 && om_wins ? Format::OpenMetrics : Format::PrometheusText;
}

}  // namespace tailcause::exporter
