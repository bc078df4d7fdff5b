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

// A recipe's library: one, or a list of them (the same code shipped as a shared library and
// linked into a Python extension module): one recipe per library.
void parse_libraries(const Reader& r, const YAML::Node& v, const std::string& k,
                     std::vector<std::string>& libraries) {
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
}

// A span recipe names its stage; the others count toward the thread's current one.
void check_recipe(const Reader& r, const Recipe& recipe, bool has_libraries, bool has_stage,
                  const std::string& key, int line) {
  if (!has_libraries) r.fail_at(line, key + ".library", "missing");
  if (recipe.symbol.empty()) r.fail_at(line, key + ".symbol", "missing");
  if (recipe.kind == "span" && !has_stage) {
    r.fail_at(line, key + ".stage", "missing (a span recipe names its stage)");
  }
  if (recipe.kind != "span" && has_stage) {
    r.fail_at(r.key_line(key + ".stage").value_or(line), key + ".stage",
              "only span recipes name a stage (" + recipe.kind +
                  " counts toward the thread's current one)");
  }
}

// One recipe: {library, symbol, stage, kind, request}, checked as a whole once its keys are read; a
// list of libraries gives one recipe per library.
std::vector<Recipe> parse_recipe(Reader& r, const YAML::Node& n, const std::string& key,
                                 std::string_view source) {
  Recipe recipe;
  std::vector<std::string> libraries;
  if (!n.IsMap()) r.fail(n, key, "expected a mapping {library, symbol, stage, kind}");
  recipe.source = fmt::format("{}:{}", source, n.Mark().line + 1);
  bool has_stage = false;
  bool has_request = false;
  r.mapping(n, key,
            {{"library", [&](const YAML::Node& v,
                             const std::string& k) { parse_libraries(r, v, k, libraries); }},
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
             {"kind",
              [&](const YAML::Node& v, const std::string& k) {
                recipe.kind = r.one_of(v, k, {"span", "gpu_sync", "count"});
              }},
             {"request", [&](const YAML::Node& v, const std::string& k) {
                recipe.whole_request = r.one_of(v, k, {"call", "grouped"}) == "call";
                has_request = true;
              }}});
  if (has_request && recipe.kind != "span") {
    r.fail_at(r.key_line(key + ".request").value_or(n.Mark().line + 1), key + ".request",
              "only span recipes make requests (" + recipe.kind + " has no stage)");
  }
  check_recipe(r, recipe, !libraries.empty(), has_stage, key, n.Mark().line + 1);
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

// listen: HOST:PORT as parse_listen() takes it.
std::string parse_listen_key(const Reader& r, const YAML::Node& n, const std::string& k) {
  std::string listen = r.string(n, k);
  try {
    parse_listen(listen);
  } catch (const ConfigError& e) {
    r.fail(n, k, e.what());
  }
  return listen;
}

// ui: how often the daemon samples its own metrics for the web UI and `top`, and how far back.
void ui_section(Reader& r, const YAML::Node& n, const std::string& k, UiSettings& ui) {
  r.mapping(n, k,
            {{"tick_s", [&](const YAML::Node& v,
                            const std::string& kk) { ui.tick_s = r.positive(v, kk, 60); }},
             {"history_s", [&](const YAML::Node& v, const std::string& kk) {
                ui.history_s = r.positive(v, kk, 6 * 3600);
              }}});
}

// limits: the series each agent-keyed family may hold.
void limits_section(Reader& r, const YAML::Node& n, const std::string& k, LimitsSettings& l) {
  auto series = [&r](uint32_t& field) {
    return [&r, &field](const YAML::Node& v, const std::string& kk) {
      field = r.positive(v, kk, LimitsSettings::kMaxSeries);
    };
  };
  r.mapping(n, k,
            {{"stage_series", series(l.stage_series)},
             {"request_series", series(l.request_series)},
             {"cache_series", series(l.cache_series)}});
}

// cgroup: the hierarchy's version and mount point, or "auto" for each.
void cgroup_section(Reader& r, const YAML::Node& n, const std::string& k, CgroupConfig& cg) {
  r.mapping(n, k,
            {{"version",
              [&](const YAML::Node& v, const std::string& kk) {
                cg.version = r.one_of(v, kk, {"auto", "v1", "v2"});
              }},
             {"root", [&](const YAML::Node& v, const std::string& kk) {
                cg.root = r.string(v, kk);
                if (cg.root != "auto" && (cg.root.empty() || cg.root.front() != '/')) {
                  r.fail(v, kk, "expected an absolute path or 'auto'");
                }
              }}});
}

// probes.sched: the scheduler family and its run-queue sampling rates.
void sched_section(Reader& r, const YAML::Node& n, const std::string& k, SchedConfig& s) {
  r.mapping(n, k,
            {{"enabled", flag_handler(r, s.enabled)},
             {"runqlen_dense_hz",
              [&](const YAML::Node& x, const std::string& xk) {
                s.runqlen_dense_hz = r.positive(x, xk, 1000);
              }},
             {"runqlen_sparse_hz", [&](const YAML::Node& x, const std::string& xk) {
                s.runqlen_sparse_hz = r.positive(x, xk, 1000);
              }}});
}

// probes.throttle: the CPU throttling family and how often it reads cpu.stat.
void throttle_section(Reader& r, const YAML::Node& n, const std::string& k, ThrottleConfig& t) {
  r.mapping(n, k,
            {{"enabled", flag_handler(r, t.enabled)},
             {"interval_ms", [&](const YAML::Node& x, const std::string& xk) {
                t.interval_ms = r.positive(x, xk, 60000);
              }}});
}

// probes.attrib.recipe_files: paths, resolved against the configuration's own directory.
void parse_recipe_files(const Reader& r, const YAML::Node& x, const std::string& xk,
                        std::string_view source, std::vector<std::string>& out) {
  if (x.IsNull()) return;
  if (!x.IsSequence()) r.fail(x, xk, "expected a list of paths");
  for (size_t i = 0; i < x.size(); ++i) {
    const auto ik = fmt::format("{}[{}]", xk, i);
    const auto path = r.string(x[i], ik);
    if (path.empty()) r.fail(x[i], ik, "expected a path");
    out.push_back(resolve_recipe_file(path, source));
  }
}

// probes.attrib: the SDK's USDT probes, uprobe recipes and identity rules.
void attrib_section(Reader& r, const YAML::Node& n, const std::string& k, AttribConfig& a,
                    std::string_view source) {
  r.mapping(
      n, k,
      {{"enabled", flag_handler(r, a.enabled)},
       {"layers", flag_handler(r, a.layers)},
       {"pid",
        [&](const YAML::Node& x, const std::string& xk) {
          // 0 (every process) or a pid up to Linux's PID_MAX_LIMIT.
          const bool zero = x.IsScalar() && x.Scalar() == "0";
          a.pid = zero ? 0 : r.positive(x, xk, 4194304);
        }},
       {"binary",
        [&](const YAML::Node& x, const std::string& xk) {
          a.binary = r.string(x, xk);
          if (!a.binary.empty() && a.binary.front() != '/') {
            r.fail(x, xk, "expected an absolute path or \"\"");
          }
        }},
       {"recipes", [&](const YAML::Node& x,
                       const std::string& xk) { parse_recipe_list(r, x, xk, source, a.recipes); }},
       {"recipe_files",
        [&](const YAML::Node& x, const std::string& xk) {
          parse_recipe_files(r, x, xk, source, a.recipe_files);
        }},
       {"identity", [&](const YAML::Node& x, const std::string& xk) {
          parse_identity_rules(r, x, xk, source, a.identity);
        }}});
}

// probes: one section per probe family.
void probes_section(Reader& r, const YAML::Node& n, const std::string& k, Config& c,
                    std::string_view source) {
  // The families with nothing to set but enabled.
  auto enabled_only = [&r](bool& field) -> Reader::Handler {
    return [&r, &field](const YAML::Node& v, const std::string& kk) {
      r.mapping(v, kk, {{"enabled", flag_handler(r, field)}});
    };
  };
  r.mapping(n, k,
            {{"sched", section_handler(r, c.sched, sched_section)},
             {"throttle", section_handler(r, c.throttle, throttle_section)},
             {"tcp", enabled_only(c.tcp.enabled)},
             {"memory", enabled_only(c.memory.enabled)},
             {"block", enabled_only(c.block.enabled)},
             {"attrib", [&](const YAML::Node& v, const std::string& kk) {
                attrib_section(r, v, kk, c.attrib, source);
              }}});
}

// Every top-level key of the configuration file.
std::map<std::string, Reader::Handler> top_level_handlers(Reader& r, Config& c,
                                                          std::string_view source) {
  std::map<std::string, Reader::Handler> top = glitch_section_handlers(r, c);
  top.merge(std::map<std::string, Reader::Handler>{
      {"listen", [&r, &c](const YAML::Node& n,
                          const std::string& k) { c.listen = parse_listen_key(r, n, k); }},
      {"top_k",
       [&r, &c](const YAML::Node& n, const std::string& k) { c.top_k = r.positive(n, k, 100000); }},
      {"ui", section_handler(r, c.ui, ui_section)},
      {"limits", section_handler(r, c.limits, limits_section)},
      {"btf", [&r, &c](const YAML::Node& n, const std::string& k) { c.btf = r.string(n, k); }},
      {"bpf_stats", flag_handler(r, c.bpf_stats)},
      {"cgroup", section_handler(r, c.cgroup, cgroup_section)},
      {"probes", [&r, &c, source](const YAML::Node& n,
                                  const std::string& k) { probes_section(r, n, k, c, source); }},
      {"journal", section_handler(r, c.journal, journal_section)},
      {"otlp", section_handler(r, c.otlp, otlp_section)},
      {"kubernetes", section_handler(r, c.kubernetes, kubernetes_section)},
  });
  return top;
}

// The sparse run-queue sampling rate must not exceed the dense one.
void check_sched_rates(const Reader& r, const SchedConfig& s) {
  if (s.runqlen_sparse_hz <= s.runqlen_dense_hz) return;
  // Point at the rate the file set: the sparse one if it did, else the dense one.
  const std::string sparse = "probes.sched.runqlen_sparse_hz";
  const std::string dense = "probes.sched.runqlen_dense_hz";
  const std::string& key = r.key_line(sparse) ? sparse : dense;
  r.fail_at(r.key_line(key).value_or(1), key,
            fmt::format("runqlen_sparse_hz ({}) must not exceed runqlen_dense_hz ({})",
                        s.runqlen_sparse_hz, s.runqlen_dense_hz));
}

// The UI's history must hold 2 to kMaxUiSlots ticks.
void check_ui_history(const Reader& r, const UiSettings& ui) {
  if (ui.history_s >= 2 * ui.tick_s && ui.history_s / ui.tick_s <= UiSettings::kMaxUiSlots) return;
  const std::string key = r.key_line("ui.history_s") ? "ui.history_s" : "ui.tick_s";
  r.fail_at(r.key_line(key).value_or(1), key,
            fmt::format("history_s ({}) must hold 2 to {} ticks of tick_s ({})", ui.history_s,
                        UiSettings::kMaxUiSlots, ui.tick_s));
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

void load_recipe_files(AttribConfig& config, std::string_view source) {
  config.file_recipes.clear();
  for (size_t i = 0; i < config.recipe_files.size(); ++i) {
    const std::string& path = config.recipe_files[i];
    try {
      auto recipes = parse_recipe_file(read_config_file(path), path);
      config.file_recipes.insert(config.file_recipes.end(), recipes.begin(), recipes.end());
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: probes.attrib.recipe_files[{}]: {}", source, i, e.what()));
    }
  }
}

std::vector<Recipe> all_recipes(const AttribConfig& config) {
  std::vector<Recipe> out = config.recipes;
  out.insert(out.end(), config.file_recipes.begin(), config.file_recipes.end());
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
  r.mapping(root, "", top_level_handlers(r, c, source));
  check_sched_rates(r, c.sched);
  check_ui_history(r, c.ui);
  check_otlp_section(r, c.otlp);
  return c;
}

bool is_stage_name(std::string_view s) { return is_free_stage_name(s); }

}  // namespace tailcause::core
