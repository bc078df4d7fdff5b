#include "export/exposition.h"

#include <fmt/format.h>

#include <cmath>

namespace infertrace::exporter {
namespace {

using core::MetricType;

std::string escape(std::string_view s, bool quotes) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
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
    if (om && !f.unit.empty()) out += fmt::format("# UNIT {} {}\n", family, f.unit);
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
        if (om && h.buckets.size() < h.exemplars.size()) exemplar(out, h.exemplars[h.buckets.size()]);
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
  return accept.find("application/openmetrics-text") != std::string_view::npos
             ? Format::OpenMetrics
             : Format::PrometheusText;
}

}  // namespace infertrace::exporter
