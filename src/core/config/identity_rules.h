// SPDX-License-Identifier: Apache-2.0
// Identity without the SDK: rules that name the tenant and agent of a process whose spans come
// from uprobe recipes (no SDK request on the thread), from its cgroup path, its process name,
// its command line or one of its environment variables. The first rule that matches wins; a
// process no rule matches keeps the default (its cgroup, else its process name). Pure: the
// caller reads /proc and hands the facts in.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/config/config.h"  // IdentityRule

namespace tailcause::core {

// What is known of a process. `environ` holds only the variables some rule names.
struct ProcessFacts {
  unsigned pid = 0;
  std::string cgroup;   // "/kubepods/burstable/pod1234/abcd", "" when unknown
  std::string comm;     // the process name
  std::string cmdline;  // arguments joined by spaces
  std::map<std::string, std::string> environ;
};

struct ResolvedIdentity {
  std::string tenant, agent;
  size_t rule = 0;  // index of the rule that matched
};

// Checks every rule (bad from/pattern/template: std::invalid_argument naming the rule's key);
// compiles the patterns once.
class IdentityRules {
 public:
  IdentityRules() = default;
  explicit IdentityRules(std::vector<IdentityRule> rules);

  bool empty() const { return rules_.empty(); }
  // Environment variables the rules read (so the caller reads only those).
  std::vector<std::string> env_names() const;
  bool needs_cmdline() const;
  std::optional<ResolvedIdentity> resolve(const ProcessFacts& p) const;

 private:
  std::vector<IdentityRule> rules_;
  std::vector<std::regex> compiled_;
};

// Why `rule` is invalid, or "" (used by the config parser for a clear error).
std::string identity_rule_error(const IdentityRule& rule);

// Bytes of /proc/PID/environ (NUL-separated, hostile): the values of `names`, each cut to
// 256 bytes, non-printable bytes replaced by '?'.
std::map<std::string, std::string> parse_environ(const std::string& bytes,
                                                 const std::vector<std::string>& names);
// Bytes of /proc/PID/cmdline: arguments joined by spaces, cut to 1024 bytes, sanitised.
std::string parse_cmdline(const std::string& bytes);

}  // namespace tailcause::core
