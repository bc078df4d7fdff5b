#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <vector>

namespace infertrace::core {
namespace {

// Walks a YAML mapping, dispatching each key to a handler and rejecting unknown keys.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key,
                         const std::string& what) const {
    throw ConfigError(fmt::format("{}:{}: {}: {}", source_, node.Mark().line + 1, key, what));
  }

  using Handler = std::function<void(const YAML::Node&, const std::string&)>;

  void mapping(const YAML::Node& node, const std::string& path,
               const std::map<std::string, Handler>& handlers) const {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node, path.empty() ? "(top level)" : path, "expected a mapping");
    for (const auto& kv : node) {
      const std::string name = kv.first.as<std::string>();
      const std::string key = path.empty() ? name : path + "." + name;
      auto it = handlers.find(name);
      if (it == handlers.end()) {
        std::string known;
        for (const auto& [k, _] : handlers) known += (known.empty() ? "" : ", ") + k;
        fail(kv.first, key, fmt::format("unknown key (known keys here: {})", known));
      }
      it->second(kv.second, key);
    }
  }

  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool v;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      fail(n, key, fmt::format("expected true or false, got '{}'", scalar_text(n)));
    }
    return v;
  }

  uint32_t positive(const YAML::Node& n, const std::string& key, uint32_t max) const {
    const std::string text = scalar_text(n);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!n.IsScalar() || ec != std::errc() || end != text.data() + text.size() || v == 0 ||
        v > max) {
      fail(n, key, fmt::format("expected an integer from 1 to {}, got '{}'", max, text));
    }
    return static_cast<uint32_t>(v);
  }

  std::string string(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected a string");
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
  static std::string scalar_text(const YAML::Node& n) {
    return n.IsScalar() ? n.Scalar() : (n.IsMap() ? "a mapping" : "a sequence");
  }
  std::string source_;
};

}  // namespace

ListenAddress parse_listen(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    throw ConfigError(fmt::format("listen address '{}': expected HOST:PORT", text));
  }
  ListenAddress a;
  a.host = std::string(text.substr(0, colon));
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  }
  if (a.host.empty()) a.host = "0.0.0.0";
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
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", source, e.mark.line + 1, e.msg));
  }
  Config c;
  Reader r(source);
  auto enabled = [&](bool& field) {
    return [&r, &field](const YAML::Node& n, const std::string& k) { field = r.boolean(n, k); };
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
                                 if (c.cgroup.root != "auto" && c.cgroup.root.front() != '/') {
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
                       });
                 }},
            });
  if (c.sched.runqlen_sparse_hz > c.sched.runqlen_dense_hz) {
    throw ConfigError(fmt::format(
        "{}: probes.sched.runqlen_sparse_hz ({}) must not exceed runqlen_dense_hz ({})", source,
        c.sched.runqlen_sparse_hz, c.sched.runqlen_dense_hz));
  }
  return c;
}

}  // namespace infertrace::core
