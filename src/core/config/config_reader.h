// SPDX-License-Identifier: Apache-2.0
// Internal to the configuration parser (config.cpp and the config_<section>.cpp files): the YAML
// mapping walker that rejects unknown keys and names file, line and dotted key in every error,
// and the per-section handlers. Not part of the configuration API (config.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"

namespace tailcause::core {

// Walks a YAML mapping, dispatching each key to a handler and rejecting unknown keys.
// Errors name the source, the line and the full dotted key.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail_at(int line, const std::string& key, const std::string& what) const {
    throw ConfigError(fmt::format("{}:{}: {}: {}", source_, line, key, what));
  }

  // A value's own line; an empty value has none worth showing (yaml-cpp places it on the
  // next token), so its key's line.
  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const {
    const bool placed = !node.IsNull() && !node.Mark().is_null();
    fail_at(placed ? node.Mark().line + 1 : key_line(key).value_or(1), key, what);
  }

  // The line of a key read so far, if the file set it.
  std::optional<int> key_line(const std::string& key) const {
    auto it = key_lines_.find(key);
    if (it == key_lines_.end()) return std::nullopt;
    return it->second;
  }

  using Handler = std::function<void(const YAML::Node&, const std::string&)>;

  void mapping(const YAML::Node& node, const std::string& path,
               const std::map<std::string, Handler>& handlers) {
    const std::string where = path.empty() ? "(top level)" : path;
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, where, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const int line =
          kv.first.Mark().is_null() ? key_line(path).value_or(1) : kv.first.Mark().line + 1;
      if (!kv.first.IsScalar()) fail_at(line, where, "keys must be plain names");
      const std::string name = kv.first.Scalar();
      const std::string key = path.empty() ? name : path + "." + name;
      auto it = handlers.find(name);
      if (it == handlers.end()) {
        std::string known;
        for (const auto& [k, _] : handlers) known += (known.empty() ? "" : ", ") + k;
        fail_at(line, key, fmt::format("unknown key (known keys here: {})", known));
      }
      if (!seen.insert(name).second) fail_at(line, key, "duplicate key");
      key_lines_[key] = line;
      it->second(kv.second, key);
    }
  }

  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool v;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      fail(n, key, fmt::format("expected true or false, got {}", describe(n)));
    }
    return v;
  }

  uint32_t positive(const YAML::Node& n, const std::string& key, uint32_t max) const {
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!n.IsScalar() || ec != std::errc() || end != text.data() + text.size() || v == 0 ||
        v > max) {
      fail(n, key, fmt::format("expected an integer from 1 to {}, got {}", max, describe(n)));
    }
    return static_cast<uint32_t>(v);
  }

  double number(const YAML::Node& n, const std::string& key, double min, double max) const {
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!n.IsScalar() || text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        !(v >= min && v <= max)) {
      fail(n, key, fmt::format("expected a number from {} to {}, got {}", min, max, describe(n)));
    }
    return v;
  }

  // "" or an absolute path.
  std::string path_or_empty(const YAML::Node& n, const std::string& key) const {
    std::string v = string(n, key);
    if (!v.empty() && v.front() != '/') fail(n, key, "expected an absolute path or \"\"");
    return v;
  }

  std::string string(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, fmt::format("expected a string, got {}", describe(n)));
    return n.Scalar();
  }

  std::string one_of(const YAML::Node& n, const std::string& key,
                     const std::vector<std::string>& allowed) const {
    std::string v = string(n, key);
    for (const auto& a : allowed) {
      if (v == a) return v;
    }
    fail(n, key, fmt::format("expected one of {}, got '{}'", fmt::join(allowed, ", "), v));
  }

 private:
  static std::string describe(const YAML::Node& n) {
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    if (n.IsMap()) return "a mapping";
    if (n.IsSequence()) return "a sequence";
    return "nothing";
  }
  std::string source_;
  std::map<std::string, int> key_lines_;  // dotted key -> line, for errors found later
};

// A key that holds true or false.
inline Reader::Handler flag_handler(Reader& r, bool& field) {
  return [&r, &field](const YAML::Node& n, const std::string& k) { field = r.boolean(n, k); };
}

// Milliseconds, 1 ms to one hour. A function, not a local lambda: the section handlers call it
// after the function that built them has returned, so a local would be gone by then.
inline Reader::Handler ms_handler(Reader& r, uint32_t& field) {
  return [&r, &field](const YAML::Node& n, const std::string& k) {
    field = r.positive(n, k, 3600000);
  };
}

// A section read into `settings` by `parse`, so that each section's keys live in a function of
// their own.
template <typename Settings>
Reader::Handler section_handler(Reader& r, Settings& settings,
                                void (*parse)(Reader&, const YAML::Node&, const std::string&,
                                              Settings&)) {
  return [&r, &settings, parse](const YAML::Node& n, const std::string& k) {
    parse(r, n, k, settings);
  };
}

// The top-level sections of issue 4's detectors: glitch, cache_breakdown, entropy, breaker
// (config_glitch.cpp).
std::map<std::string, Reader::Handler> glitch_section_handlers(Reader& r, Config& c);
// The sinks and the pod names: journal (config_journal.cpp), otlp (config_otlp.cpp), kubernetes
// (config_kubernetes.cpp).
void journal_section(Reader& r, const YAML::Node& n, const std::string& k, JournalSettings& j);
void otlp_section(Reader& r, const YAML::Node& n, const std::string& k, OtlpSettings& o);
void kubernetes_section(Reader& r, const YAML::Node& n, const std::string& k,
                        KubernetesSettings& kc);
// Checks across the otlp section's keys, once the whole file is read.
void check_otlp_section(Reader& r, const OtlpSettings& o);

}  // namespace tailcause::core
