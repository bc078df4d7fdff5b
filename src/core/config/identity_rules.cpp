// SPDX-License-Identifier: Apache-2.0
#include "core/config/identity_rules.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tailcause::core {
namespace {

constexpr size_t kMaxName = 63;  // tenant and agent names (the SDK's limit)

std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  return out;
}

// Expands $0..$9, ${comm}, ${pid}; "" on an unknown ${...}.
std::string expand(const std::string& tpl, const std::smatch& m, const ProcessFacts& p) {
  std::string out;
  for (size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i] != '$' || i + 1 == tpl.size()) {
      out += tpl[i];
      continue;
    }
    const char n = tpl[i + 1];
    if (n >= '0' && n <= '9') {
      const size_t g = static_cast<size_t>(n - '0');
      if (g < m.size()) out += m[g].str();
      ++i;
    } else if (n == '{') {
      const auto close = tpl.find('}', i);
      const std::string name = tpl.substr(i + 2, close - i - 2);
      if (name == "comm") out += p.comm;
      if (name == "pid") out += std::to_string(p.pid);
      i = close;
    } else {
      out += '$';
    }
  }
  return printable(out, kMaxName);
}

std::string template_error(const std::string& tpl) {
  for (size_t i = 0; i < tpl.size(); ++i) {
    if (tpl[i] != '$') continue;
    if (i + 1 < tpl.size() && tpl[i + 1] == '{') {
      const auto close = tpl.find('}', i);
      if (close == std::string::npos) return "unterminated ${...}";
      const std::string name = tpl.substr(i + 2, close - i - 2);
      if (name != "comm" && name != "pid") {
        return "unknown ${" + name + "} (known: $0-$9, ${comm}, ${pid})";
      }
      i = close;
    }
  }
  return "";
}

}  // namespace

std::string identity_rule_error(const IdentityRule& r) {
  if (r.from != "cgroup" && r.from != "comm" && r.from != "cmdline" && r.from != "env") {
    return "from: expected one of cgroup, comm, cmdline, env";
  }
  if (r.from == "env" && r.env.empty()) return "env: missing (from: env names the variable)";
  if (r.from != "env" && !r.env.empty()) return "env: only for from: env";
  try {
    std::regex re(r.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return fmt::format("pattern: not a valid regular expression ({})", e.what());
  }
  if (auto e = template_error(r.tenant); !e.empty()) return "tenant: " + e;
  if (auto e = template_error(r.agent); !e.empty()) return "agent: " + e;
  if (r.tenant.empty()) return "tenant: empty";
  return "";
}

IdentityRules::IdentityRules(std::vector<IdentityRule> rules) : rules_(std::move(rules)) {
  for (const auto& r : rules_) {
    if (auto e = identity_rule_error(r); !e.empty()) {
      throw std::invalid_argument(fmt::format("identity rule {}: {}", r.source, e));
    }
    compiled_.emplace_back(r.pattern, std::regex::ECMAScript | std::regex::optimize);
  }
}

std::vector<std::string> IdentityRules::env_names() const {
  std::vector<std::string> out;
  for (const auto& r : rules_) {
    if (r.from == "env") out.push_back(r.env);
  }
  return out;
}

bool IdentityRules::needs_cmdline() const {
  for (const auto& r : rules_) {
    if (r.from == "cmdline") return true;
  }
  return false;
}

std::optional<ResolvedIdentity> IdentityRules::resolve(const ProcessFacts& p) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& r = rules_[i];
    const std::string* value = nullptr;
    if (r.from == "cgroup") value = &p.cgroup;
    if (r.from == "comm") value = &p.comm;
    if (r.from == "cmdline") value = &p.cmdline;
    if (r.from == "env") {
      auto it = p.environ.find(r.env);
      if (it == p.environ.end()) continue;  // unset: no match (set but empty can match)
      value = &it->second;
    }
    if (!value || (value->empty() && r.from != "env")) continue;
    std::smatch m;
    if (!std::regex_search(*value, m, compiled_[i])) continue;
    ResolvedIdentity id{expand(r.tenant, m, p), expand(r.agent, m, p), i};
    if (id.tenant.empty()) continue;  // e.g. an optional group that did not take part
    if (id.agent.empty()) id.agent = printable(p.comm, kMaxName);
    return id;
  }
  return std::nullopt;
}

std::map<std::string, std::string> parse_environ(const std::string& bytes,
                                                 const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\0', start);
    if (end == std::string::npos) end = bytes.size();
    const std::string_view entry(bytes.data() + start, end - start);
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view name = entry.substr(0, eq);
      for (const auto& want : names) {
        if (name == want && !out.count(want)) out[want] = printable(entry.substr(eq + 1), 256);
      }
    }
    start = end + 1;
  }
  return out;
}

std::string parse_cmdline(const std::string& bytes) {
  std::string joined = bytes.substr(0, 1024);
  while (!joined.empty() && joined.back() == '\0') joined.pop_back();
  for (char& c : joined) {
    if (c == '\0') c = ' ';
  }
  return printable(joined, 1024);
}

}  // namespace tailcause::core
