// SPDX-License-Identifier: Apache-2.0
#include "core/config/config.h"

#include "core/config/config_reader.h"
#include "core/config/config_yaml.h"
#include "core/config/recipe_path.h"
#include "core/config/identity_rules.h"

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

namespace tailcause::core {
namespace {

constexpr size_t kMaxStageName = 32;  // bytes, as the SDK's TAILCAUSE_MAX_NAME

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

// One recipe: {library, symbol, stage, kind}, checked as a whole once its keys are read; a
// list of libraries gives one recipe per library.
std::vector<Recipe> parse_recipe(Reader& r, const YAML::Node& n, const std::string& key,
                                 std::string_view source) {
  Recipe recipe;
  std::vector<std::string> libraries;
  if (!n.IsMap()) r.fail(n, key, "expected a mapping {library, symbol, stage, kind}");
  recipe.source = fmt::format("{}:{}", source, n.Mark().line + 1);
  bool has_stage = false;
  r.mapping(n, key,
            {{"library",
              [&](const YAML::Node& v, const std::string& k) {
                // One library, or a list of them (the same code shipped as a shared library and
                // linked into a Python extension module): one recipe per library.
                auto one = [&](const YAML::Node& item, const std::string& ik) {
                  std::string lib = r.string(item, ik);
                  if (lib.empty() || has_space(lib)) {
                    r.fail(item, ik, "expected a library path or file-name glob (libllama.so*)");
                  }
                  if (lib.find('/') != std::string::npos && lib.front() != '/') {
                    r.fail(item, ik, "a path must be absolute (or give a file-name glob)");
                  }
                  libraries.push_back(std::move(lib));
                };
                if (v.IsSequence()) {
                  if (v.size() == 0) r.fail(v, k, "expected at least one library");
                  for (size_t i = 0; i < v.size(); ++i) one(v[i], fmt::format("{}[{}]", k, i));
                } else {
                  one(v, k);
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
                  r.fail(v, k,
                         fmt::format("expected prompt, embedding, retrieval, generation, "
                                     "tool, response or a name of 1-{} letters, digits, "
                                     "'_', '-', '.', ':'",
                                     kMaxStageName));
                }
              }},
             {"kind", [&](const YAML::Node& v, const std::string& k) {
                recipe.kind = r.one_of(v, k, {"span", "gpu_sync", "count"});
              }}});
  const int line = n.Mark().line + 1;
  if (libraries.empty()) r.fail_at(line, key + ".library", "missing");
  if (recipe.symbol.empty()) r.fail_at(line, key + ".symbol", "missing");
  if (recipe.kind == "span" && !has_stage) {
    r.fail_at(line, key + ".stage", "missing (a span recipe names its stage)");
  }
  if (recipe.kind != "span" && has_stage) {
    r.fail_at(r.key_line(key + ".stage").value_or(line), key + ".stage",
              "only span recipes name a stage (" + recipe.kind +
                  " counts toward the thread's current one)");
  }
  std::vector<Recipe> out;
  for (auto& lib : libraries) {
    out.push_back(recipe);
    out.back().library = std::move(lib);
  }
  return out;
}

void parse_recipe_list(Reader& r, const YAML::Node& n, const std::string& key,
                       std::string_view source, std::vector<Recipe>& out) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) r.fail(n, key, "expected a list of {library, symbol, stage, kind}");
  for (size_t i = 0; i < n.size(); ++i) {
    for (auto& recipe : parse_recipe(r, n[i], fmt::format("{}[{}]", key, i), source)) {
      out.push_back(std::move(recipe));
    }
  }
}

// probes.attrib.identity: [{from, env, pattern, tenant, agent}], each checked whole.
void parse_identity_rules(Reader& r, const YAML::Node& n, const std::string& key,
                          std::string_view source, std::vector<IdentityRule>& out) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) r.fail(n, key, "expected a list of {from, pattern, tenant, agent}");
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string k = fmt::format("{}[{}]", key, i);
    const YAML::Node& item = n[i];
    if (!item.IsMap()) r.fail(item, k, "expected a mapping {from, pattern, tenant, agent}");
    IdentityRule rule;
    rule.source = fmt::format("{}:{}", source, item.Mark().line + 1);
    bool has_pattern = false;
    auto text = [&](std::string& into) {
      return [&](const YAML::Node& v, const std::string& vk) { into = r.string(v, vk); };
    };
    r.mapping(item, k,
              {{"from",
                [&](const YAML::Node& v, const std::string& vk) {
                  rule.from = r.one_of(v, vk, {"cgroup", "comm", "cmdline", "env"});
                }},
               {"env", text(rule.env)},
               {"pattern",
                [&](const YAML::Node& v, const std::string& vk) {
                  rule.pattern = r.string(v, vk);
                  has_pattern = true;
                }},
               {"tenant", text(rule.tenant)},
               {"agent", text(rule.agent)}});
    const int line = item.Mark().line + 1;
    if (rule.from.empty()) r.fail_at(line, k + ".from", "missing (cgroup, comm, cmdline or env)");
    if (!has_pattern) rule.pattern = rule.from == "env" ? "^.+$" : "";
    if (!has_pattern && rule.from != "env") r.fail_at(line, k + ".pattern", "missing");
    if (const std::string e = identity_rule_error(rule); !e.empty()) {
      const std::string field = e.substr(0, e.find(':'));
      r.fail_at(r.key_line(k + "." + field).value_or(line), k + "." + field,
                e.substr(e.find(':') + 2));
    }
    out.push_back(std::move(rule));
  }
}

}  // namespace

std::vector<Recipe> parse_recipe_file(std::string_view yaml_text, std::string_view source) {
  const YAML::Node root = load_yaml_document(yaml_text, source);
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
    try {
      auto recipes = parse_recipe_file(read_config_file(path), path);
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
    throw ConfigError(
        fmt::format("listen address '{}': write an IPv6 host in brackets, as in [::1]:9436", text));
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
  return parse_config(yaml_text, source, Config{});
}

Config parse_config(std::string_view yaml_text, std::string_view source, Config base) {
  // Bounded, and a second non-empty document refused (it would be silently ignored).
  const YAML::Node root = load_yaml_document(yaml_text, source);
  Config c = std::move(base);
  Reader r(source);
  auto enabled = [&](bool& field) {
    return [&r, &field](const YAML::Node& n, const std::string& k) { field = r.boolean(n, k); };
  };
  std::map<std::string, Reader::Handler> top = glitch_section_handlers(r, c);
  top.merge(std::map<std::string, Reader::Handler>{
      {"listen",
       [&](const YAML::Node& n, const std::string& k) {
         c.listen = r.string(n, k);
         try {
           parse_listen(c.listen);
         } catch (const ConfigError& e) {
           r.fail(n, k, e.what());
         }
       }},
      {"top_k",
       [&](const YAML::Node& n, const std::string& k) { c.top_k = r.positive(n, k, 100000); }},
      {"ui",
       [&](const YAML::Node& n, const std::string& k) {
         r.mapping(n, k,
                   {{"tick_s", [&](const YAML::Node& v,
                                   const std::string& kk) { c.ui.tick_s = r.positive(v, kk, 60); }},
                    {"history_s", [&](const YAML::Node& v, const std::string& kk) {
                       c.ui.history_s = r.positive(v, kk, 6 * 3600);
                     }}});
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
      {"probes",
       [&](const YAML::Node& n, const std::string& k) {
         r.mapping(
             n, k,
             {
                 {"sched",
                  [&](const YAML::Node& v, const std::string& kk) {
                    r.mapping(
                        v, kk,
                        {{"enabled", enabled(c.sched.enabled)},
                         {"runqlen_dense_hz",
                          [&](const YAML::Node& x, const std::string& xk) {
                            c.sched.runqlen_dense_hz = r.positive(x, xk, 1000);
                          }},
                         {"runqlen_sparse_hz", [&](const YAML::Node& x, const std::string& xk) {
                            c.sched.runqlen_sparse_hz = r.positive(x, xk, 1000);
                          }}});
                  }},
                 {"throttle",
                  [&](const YAML::Node& v, const std::string& kk) {
                    r.mapping(v, kk,
                              {{"enabled", enabled(c.throttle.enabled)},
                               {"interval_ms", [&](const YAML::Node& x, const std::string& xk) {
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
                            if (!c.attrib.binary.empty() && c.attrib.binary.front() != '/') {
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
                              const auto path = r.string(x[i], ik);
                              if (path.empty()) r.fail(x[i], ik, "expected a path");
                              c.attrib.recipe_files.push_back(resolve_recipe_file(path, source));
                            }
                          }},
                         {"identity", [&](const YAML::Node& x, const std::string& xk) {
                            parse_identity_rules(r, x, xk, source, c.attrib.identity);
                          }}});
                  }},
             });
       }},
  });
  r.mapping(root, "", top);
  if (c.sched.runqlen_sparse_hz > c.sched.runqlen_dense_hz) {
    // Point at the rate the file set: the sparse one if it did, else the dense one.
    const std::string sparse = "probes.sched.runqlen_sparse_hz";
    const std::string dense = "probes.sched.runqlen_dense_hz";
    const std::string& key = r.key_line(sparse) ? sparse : dense;
    r.fail_at(r.key_line(key).value_or(1), key,
              fmt::format("runqlen_sparse_hz ({}) must not exceed runqlen_dense_hz ({})",
                          c.sched.runqlen_sparse_hz, c.sched.runqlen_dense_hz));
  }
  if (c.ui.history_s < 2 * c.ui.tick_s || c.ui.history_s / c.ui.tick_s > UiSettings::kMaxUiSlots) {
    const std::string key = r.key_line("ui.history_s") ? "ui.history_s" : "ui.tick_s";
    r.fail_at(r.key_line(key).value_or(1), key,
              fmt::format("history_s ({}) must hold 2 to {} ticks of tick_s ({})", c.ui.history_s,
                          UiSettings::kMaxUiSlots, c.ui.tick_s));
  }
  check_glitch_sections(r, c);
  return c;
}

bool is_stage_name(std::string_view s) { return is_free_stage_name(s); }

}  // namespace tailcause::core
