#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace infertrace::core {
namespace {

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
      const int line = kv.first.Mark().is_null() ? key_line(path).value_or(1)
                                                 : kv.first.Mark().line + 1;
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

constexpr size_t kMaxStageName = 32;  // bytes, as the SDK's INFERTRACE_MAX_NAME

bool is_free_stage_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxStageName) return false;
  for (unsigned char ch : s) {
    if (!std::isalnum(ch) && ch != '_' && ch != '-' && ch != '.' && ch != ':') return false;
  }
  return true;
}

bool has_space(const std::string& s) {
  for (unsigned char ch : s) {
    if (std::isspace(ch)) return true;
  }
  return false;
}

// One recipe: {library, symbol, stage, kind}, checked as a whole once its keys are read.
Recipe parse_recipe(Reader& r, const YAML::Node& n, const std::string& key,
                    std::string_view source) {
  Recipe recipe;
  if (!n.IsMap()) r.fail(n, key, "expected a mapping {library, symbol, stage, kind}");
  recipe.source = fmt::format("{}:{}", source, n.Mark().line + 1);
  bool has_stage = false;
  r.mapping(n, key,
            {{"library",
              [&](const YAML::Node& v, const std::string& k) {
                recipe.library = r.string(v, k);
                if (recipe.library.empty() || has_space(recipe.library)) {
                  r.fail(v, k, "expected a library path or file-name glob (libllama.so*)");
                }
                if (recipe.library.find('/') != std::string::npos &&
                    recipe.library.front() != '/') {
                  r.fail(v, k, "a path must be absolute (or give a file-name glob)");
                }
              }},
             {"symbol",
              [&](const YAML::Node& v, const std::string& k) {
                recipe.symbol = r.string(v, k);
                if (recipe.symbol.empty() || has_space(recipe.symbol)) {
                  r.fail(v, k, "expected an ELF symbol name (mangled for C++)");
                }
              }},
             {"stage",
              [&](const YAML::Node& v, const std::string& k) {
                recipe.stage = r.string(v, k);
                has_stage = true;
                if (!is_free_stage_name(recipe.stage)) {
                  r.fail(v, k, fmt::format("expected prompt, embedding, retrieval, generation, "
                                           "tool, response or a name of 1-{} letters, digits, "
                                           "'_', '-', '.', ':'",
                                           kMaxStageName));
                }
              }},
             {"kind", [&](const YAML::Node& v, const std::string& k) {
                recipe.kind = r.one_of(v, k, {"span", "gpu_sync", "count"});
              }}});
  const int line = n.Mark().line + 1;
  if (recipe.library.empty()) r.fail_at(line, key + ".library", "missing");
  if (recipe.symbol.empty()) r.fail_at(line, key + ".symbol", "missing");
  if (recipe.kind == "span" && !has_stage) {
    r.fail_at(line, key + ".stage", "missing (a span recipe names its stage)");
  }
  if (recipe.kind != "span" && has_stage) {
    r.fail_at(r.key_line(key + ".stage").value_or(line), key + ".stage",
              "only span recipes name a stage (" + recipe.kind +
                  " counts toward the thread's current one)");
  }
  return recipe;
}

void parse_recipe_list(Reader& r, const YAML::Node& n, const std::string& key,
                       std::string_view source, std::vector<Recipe>& out) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) r.fail(n, key, "expected a list of {library, symbol, stage, kind}");
  for (size_t i = 0; i < n.size(); ++i) {
    out.push_back(parse_recipe(r, n[i], fmt::format("{}[{}]", key, i), source));
  }
}

}  // namespace

std::vector<Recipe> parse_recipe_file(std::string_view yaml_text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  Reader r(source);
  std::vector<Recipe> out;
  r.mapping(root, "", {{"recipes", [&](const YAML::Node& n, const std::string& k) {
                          parse_recipe_list(r, n, k, source, out);
                        }}});
  return out;
}

std::vector<Recipe> load_recipes(const AttribConfig& config, std::vector<std::string>& errors) {
  std::vector<Recipe> out = config.recipes;
  for (const auto& path : config.recipe_files) {
    std::ifstream in(path);
    if (!in) {
      errors.push_back(fmt::format("{}: cannot read recipe file: {}", path, std::strerror(errno)));
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
      auto recipes = parse_recipe_file(text.str(), path);
      out.insert(out.end(), recipes.begin(), recipes.end());
    } catch (const ConfigError& e) {
      errors.push_back(e.what());
    }
  }
  return out;
}

ListenAddress parse_listen(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    throw ConfigError(fmt::format("listen address '{}': expected HOST:PORT", text));
  }
  ListenAddress a;
  std::string_view host = text.substr(0, colon);
  if (!host.empty() && host.front() == '[') {
    // An IPv6 host: brackets, balanced and not empty.
    if (host.size() < 3 || host.back() != ']') {
      throw ConfigError(fmt::format(
          "listen address '{}': write an IPv6 host in brackets, as in [::1]:9436", text));
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of(":[]") != std::string_view::npos) {
    throw ConfigError(fmt::format(
        "listen address '{}': write an IPv6 host in brackets, as in [::1]:9436", text));
  }
  a.host = host.empty() ? "0.0.0.0" : std::string(host);
  const auto port = text.substr(colon + 1);
  unsigned v = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535) {
    throw ConfigError(fmt::format("listen address '{}': port must be 1-65535", text));
  }
  a.port = static_cast<uint16_t>(v);
  return a;
}

Config parse_config(std::string_view yaml_text, std::string_view source) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  Config c;
  Reader r(source);
  // A second document would be silently ignored: refuse it (an empty trailing one is fine).
  for (size_t i = 1; i < documents.size(); ++i) {
    if (!documents[i].IsNull()) {
      r.fail(documents[i], "(top level)", "expected one YAML document, found another");
    }
  }
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  auto enabled = [&](bool& field) {
    return [&r, &field](const YAML::Node& n, const std::string& k) { field = r.boolean(n, k); };
  };
  // Milliseconds, 1 ms to one hour.
  auto ms = [&](uint32_t& field) {
    return [&r, &field](const YAML::Node& n, const std::string& k) {
      field = r.positive(n, k, 3600000);
    };
  };
  r.mapping(root, "",
            {
                {"listen",
                 [&](const YAML::Node& n, const std::string& k) {
                   c.listen = r.string(n, k);
                   try {
                     parse_listen(c.listen);
                   } catch (const ConfigError& e) {
                     r.fail(n, k, e.what());
                   }
                 }},
                {"top_k", [&](const YAML::Node& n, const std::string& k) {
                   c.top_k = r.positive(n, k, 100000);
                 }},
                {"btf", [&](const YAML::Node& n, const std::string& k) { c.btf = r.string(n, k); }},
                {"bpf_stats", enabled(c.bpf_stats)},
                {"cgroup",
                 [&](const YAML::Node& n, const std::string& k) {
                   r.mapping(n, k,
                             {{"version",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 c.cgroup.version = r.one_of(v, kk, {"auto", "v1", "v2"});
                               }},
                              {"root", [&](const YAML::Node& v, const std::string& kk) {
                                 c.cgroup.root = r.string(v, kk);
                                 if (c.cgroup.root != "auto" &&
                                     (c.cgroup.root.empty() || c.cgroup.root.front() != '/')) {
                                   r.fail(v, kk, "expected an absolute path or 'auto'");
                                 }
                               }}});
                 }},
                {"glitch",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& g = c.glitch;
                   r.mapping(
                       n, k,
                       {{"request_slo_ms", ms(g.request_slo_ms)},
                        {"stage_slo_ms", ms(g.stage_slo_ms)},
                        {"stage_slos_ms",
                         [&](const YAML::Node& v, const std::string& kk) {
                           if (v.IsNull()) return;
                           if (!v.IsMap()) r.fail(v, kk, "expected a mapping STAGE: MILLISECONDS");
                           for (const auto& item : v) {
                             const std::string stage = item.first.Scalar();
                             const std::string sk = kk + "." + stage;
                             if (!is_stage_name(stage)) {
                               r.fail(item.first, sk, "not a stage name (1-32 letters, digits, "
                                                      "'_', '-', '.', ':')");
                             }
                             g.stage_slos_ms[stage] = r.positive(item.second, sk, 3600000);
                           }
                         }},
                        {"p99_factor",
                         [&](const YAML::Node& v, const std::string& kk) {
                           g.p99_factor = r.number(v, kk, 1.0, 1000.0);
                         }},
                        {"min_samples", [&](const YAML::Node& v, const std::string& kk) {
                           g.min_samples = r.positive(v, kk, 1000000);
                         }}});
                 }},
                {"cache_breakdown",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& b = c.cache_breakdown;
                   r.mapping(n, k,
                             {{"window_s",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 b.window_s = r.positive(v, kk, 86400);
                               }},
                              {"min_lookups",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 b.min_lookups = r.positive(v, kk, 1000000);
                               }},
                              {"ratio", [&](const YAML::Node& v, const std::string& kk) {
                                 b.ratio = r.number(v, kk, 0.01, 1.0);
                               }}});
                 }},
                {"entropy",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& e = c.entropy;
                   r.mapping(n, k,
                             {{"rise",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 e.rise = r.number(v, kk, 0.01, 100.0);
                               }},
                              {"outputs",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 e.outputs = r.positive(v, kk, 1000);
                               }},
                              {"correlation_ms", ms(e.correlation_ms)}});
                 }},
                {"breaker",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& b = c.breaker;
                   r.mapping(n, k,
                             {{"slow_ms", ms(b.slow_ms)},
                              {"trip_after",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 b.trip_after = r.positive(v, kk, 1000);
                               }},
                              {"quiet_s",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 b.quiet_s = r.positive(v, kk, 86400);
                               }},
                              {"socket",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 b.socket = r.path_or_empty(v, kk);
                                 // sun_path holds 108 bytes with the NUL.
                                 if (b.socket.size() > 107) r.fail(v, kk, "longer than 107 bytes");
                               }},
                              {"state_file", [&](const YAML::Node& v, const std::string& kk) {
                                 b.state_file = r.path_or_empty(v, kk);
                               }}});
                 }},
                {"journal",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& j = c.journal;
                   r.mapping(n, k,
                             {{"path",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 j.path = r.path_or_empty(v, kk);
                               }},
                              {"max_age_h",
                               [&](const YAML::Node& v, const std::string& kk) {
                                 j.max_age_h = r.positive(v, kk, 24 * 3650);
                               }},
                              {"max_mb", [&](const YAML::Node& v, const std::string& kk) {
                                 j.max_mb = r.positive(v, kk, 1024 * 1024);
                               }}});
                 }},
                {"otlp",
                 [&](const YAML::Node& n, const std::string& k) {
                   auto& o = c.otlp;
                   r.mapping(
                       n, k,
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
                        {"timeout_ms", ms(o.timeout_ms)}});
                 }},
                {"probes",
                 [&](const YAML::Node& n, const std::string& k) {
                   r.mapping(
                       n, k,
                       {
                           {"sched",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(v, kk,
                                        {{"enabled", enabled(c.sched.enabled)},
                                         {"runqlen_dense_hz",
                                          [&](const YAML::Node& x, const std::string& xk) {
                                            c.sched.runqlen_dense_hz = r.positive(x, xk, 1000);
                                          }},
                                         {"runqlen_sparse_hz",
                                          [&](const YAML::Node& x, const std::string& xk) {
                                            c.sched.runqlen_sparse_hz = r.positive(x, xk, 1000);
                                          }}});
                            }},
                           {"throttle",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(v, kk,
                                        {{"enabled", enabled(c.throttle.enabled)},
                                         {"interval_ms",
                                          [&](const YAML::Node& x, const std::string& xk) {
                                            c.throttle.interval_ms = r.positive(x, xk, 60000);
                                          }}});
                            }},
                           {"tcp",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(v, kk, {{"enabled", enabled(c.tcp.enabled)}});
                            }},
                           {"memory",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(v, kk, {{"enabled", enabled(c.memory.enabled)}});
                            }},
                           {"block",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(v, kk, {{"enabled", enabled(c.block.enabled)}});
                            }},
                           {"attrib",
                            [&](const YAML::Node& v, const std::string& kk) {
                              r.mapping(
                                  v, kk,
                                  {{"enabled", enabled(c.attrib.enabled)},
                                   {"layers", enabled(c.attrib.layers)},
                                   {"pid",
                                    [&](const YAML::Node& x, const std::string& xk) {
                                      // 0 (every process) or a pid up to Linux's PID_MAX_LIMIT.
                                      const bool zero = x.IsScalar() && x.Scalar() == "0";
                                      c.attrib.pid = zero ? 0 : r.positive(x, xk, 4194304);
                                    }},
                                   {"binary",
                                    [&](const YAML::Node& x, const std::string& xk) {
                                      c.attrib.binary = r.string(x, xk);
                                      if (!c.attrib.binary.empty() &&
                                          c.attrib.binary.front() != '/') {
                                        r.fail(x, xk, "expected an absolute path or \"\"");
                                      }
                                    }},
                                   {"recipes",
                                    [&](const YAML::Node& x, const std::string& xk) {
                                      parse_recipe_list(r, x, xk, source, c.attrib.recipes);
                                    }},
                                   {"recipe_files",
                                    [&](const YAML::Node& x, const std::string& xk) {
                                      if (x.IsNull()) return;
                                      if (!x.IsSequence()) r.fail(x, xk, "expected a list of paths");
                                      for (size_t i = 0; i < x.size(); ++i) {
                                        const auto ik = fmt::format("{}[{}]", xk, i);
                                        auto path = r.string(x[i], ik);
                                        if (path.empty() || path.front() != '/') {
                                          r.fail(x[i], ik, "expected an absolute path");
                                        }
                                        c.attrib.recipe_files.push_back(std::move(path));
                                      }
                                    }}});
                            }},
                       });
                 }},
            });
  if (c.sched.runqlen_sparse_hz > c.sched.runqlen_dense_hz) {
    // Point at the rate the file set: the sparse one if it did, else the dense one.
    const std::string sparse = "probes.sched.runqlen_sparse_hz";
    const std::string dense = "probes.sched.runqlen_dense_hz";
    const std::string& key = r.key_line(sparse) ? sparse : dense;
    r.fail_at(r.key_line(key).value_or(1), key,
              fmt::format("runqlen_sparse_hz ({}) must not exceed runqlen_dense_hz ({})",
                          c.sched.runqlen_sparse_hz, c.sched.runqlen_dense_hz));
  }
  if (c.otlp.batch_spans > c.otlp.queue_spans) {
    const std::string key = "otlp.batch_spans";
    r.fail_at(r.key_line(key).value_or(r.key_line("otlp.queue_spans").value_or(1)), key,
              fmt::format("batch_spans ({}) must not exceed queue_spans ({})", c.otlp.batch_spans,
                          c.otlp.queue_spans));
  }
  return c;
}

bool is_stage_name(std::string_view s) { return is_free_stage_name(s); }

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
    if (ch <= ' ' || ch == 0x7f || ch == '#') throw bad("the path holds a space or a control character");
  }
  if (authority.find('@') != std::string_view::npos) throw bad("credentials belong in otlp.headers");
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

}  // namespace infertrace::core
