// SPDX-License-Identifier: Apache-2.0
// Identity without the SDK: tenant and agent per process from its cgroup path (kubepods too),
// process name, command line or an environment variable (read as hostile bytes); the config
// that declares the rules, and its errors.
#include <gtest/gtest.h>

#include <string>

#include "core/config/config.h"
#include "core/config/identity_rules.h"

namespace tailcause::core {
namespace {

IdentityRule rule(std::string from, std::string pattern, std::string tenant,
                  std::string agent = "${comm}", std::string env = "") {
  IdentityRule r;
  r.from = std::move(from);
  r.pattern = std::move(pattern);
  r.tenant = std::move(tenant);
  r.agent = std::move(agent);
  r.env = std::move(env);
  r.source = "t.yaml:1";
  return r;
}

ProcessFacts facts(std::string cgroup, std::string comm, std::string cmdline = "") {
  ProcessFacts p;
  p.pid = 4242;
  p.cgroup = std::move(cgroup);
  p.comm = std::move(comm);
  p.cmdline = std::move(cmdline);
  return p;
}

TEST(IdentityRules, KubepodsCgroupNamesThePod) {
  const IdentityRules rules(
      {rule("cgroup", R"(kubepods(?:\.slice)?/.*pod([0-9a-f_-]{8,}))", "pod-$1", "${comm}")});
  auto id = rules.resolve(
      facts("/kubepods/burstable/pod6c2d4e1a-1111-2222-3333-444455556666/0a1b2c", "python3"));
  ASSERT_TRUE(id);
  EXPECT_EQ(id->tenant, "pod-6c2d4e1a-1111-2222-3333-444455556666");
  EXPECT_EQ(id->agent, "python3");
  // systemd driver spelling.
  id = rules.resolve(facts(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234abcd_5678.slice/x",
      "python3"));
  ASSERT_TRUE(id);
  EXPECT_EQ(id->tenant, "pod-1234abcd_5678");
  EXPECT_FALSE(rules.resolve(facts("/system.slice/ssh.service", "sshd")));
}

TEST(IdentityRules, SeparateProcessesInOneCgroupStaySeparate) {
  IdentityRule by_env = rule("env", "^(.+)$", "$1", "rag-${comm}", "AGENT_TENANT");
  const IdentityRules rules({by_env, rule("cmdline", R"(--tenant[= ](\S+))", "$1")});
  ProcessFacts a = facts("/agents", "python3", "python3 agent.py");
  a.environ["AGENT_TENANT"] = "alpha";
  ProcessFacts b = facts("/agents", "python3", "python3 agent.py --tenant beta");
  ProcessFacts c = facts("/agents", "python3", "python3 agent.py");
  auto ia = rules.resolve(a), ib = rules.resolve(b);
  ASSERT_TRUE(ia && ib);
  EXPECT_EQ(ia->tenant, "alpha");
  EXPECT_EQ(ia->agent, "rag-python3");
  EXPECT_EQ(ia->rule, 0u);
  EXPECT_EQ(ib->tenant, "beta");
  EXPECT_EQ(ib->rule, 1u);
  EXPECT_FALSE(rules.resolve(c)) << "no rule: the default identity stays";
  EXPECT_EQ(rules.env_names(), std::vector<std::string>{"AGENT_TENANT"});
  EXPECT_TRUE(rules.needs_cmdline());
}

TEST(IdentityRules, FirstMatchWinsAndTemplatesExpand) {
  const IdentityRules rules(
      {rule("comm", "^llama", "llm-${pid}", "srv"), rule("comm", ".*", "other-$0")});
  EXPECT_EQ(rules.resolve(facts("", "llama-server"))->tenant, "llm-4242");
  EXPECT_EQ(rules.resolve(facts("", "llama-server"))->agent, "srv");
  EXPECT_EQ(rules.resolve(facts("", "bash"))->tenant, "other-bash");
}

TEST(IdentityRules, HostileEnvironAndCmdlineBytes) {
  static const char raw[] = "A=1\0AGENT_TENANT=te\x01nant\xff\0AGENT_TENANT=second\0NOEQUALS\0=x";
  const std::string env(raw, sizeof raw);
  auto vars = parse_environ(env, {"AGENT_TENANT", "MISSING"});
  ASSERT_EQ(vars.size(), 1u);
  EXPECT_EQ(vars["AGENT_TENANT"], "te?nant?") << "first one, control bytes replaced";
  EXPECT_EQ(parse_environ(std::string(100000, 'x'), {"x"}).size(), 0u);
  EXPECT_EQ(parse_environ(std::string("X=") + std::string(5000, 'v'), {"X"})["X"].size(), 256u);
  static const char args[] = "python3\0agent.py\0--tenant\0a";
  EXPECT_EQ(parse_cmdline(std::string(args, sizeof args)), "python3 agent.py --tenant a");
  EXPECT_EQ(parse_cmdline(std::string(10000, 'a')).size(), 1024u);
  // A tenant longer than the SDK's limit is cut.
  const IdentityRules rules({rule("cmdline", ".*", "$0")});
  EXPECT_EQ(rules.resolve(facts("", "p", std::string(200, 'z')))->tenant.size(), 63u);
}

TEST(IdentityRules, BadRulesAreRejected) {
  EXPECT_NE(identity_rule_error(rule("cgroup", "pod(", "$1")).find("pattern"), std::string::npos);
  EXPECT_NE(identity_rule_error(rule("nope", ".*", "$0")).find("from"), std::string::npos);
  EXPECT_NE(identity_rule_error(rule("env", ".*", "$0")).find("env: missing"), std::string::npos);
  EXPECT_NE(identity_rule_error(rule("comm", ".*", "${user}")).find("unknown ${user}"),
            std::string::npos);
  EXPECT_THROW(IdentityRules({rule("cgroup", "[", "$0")}), std::invalid_argument);
}

std::string config_error(const std::string& yaml) {
  try {
    parse_config(yaml, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(IdentityRules, ConfigDeclaresThemAndNamesBadOnes) {
  const Config c = parse_config(
      "probes:\n  attrib:\n    identity:\n"
      "      - {from: cgroup, pattern: 'kubepods/.*pod([0-9a-f-]+)', tenant: 'pod-$1'}\n"
      "      - {from: env, env: AGENT_TENANT, tenant: '$0', agent: rag}\n",
      "t.yaml");
  ASSERT_EQ(c.attrib.identity.size(), 2u);
  EXPECT_EQ(c.attrib.identity[0].tenant, "pod-$1");
  EXPECT_EQ(c.attrib.identity[0].agent, "${comm}");
  EXPECT_EQ(c.attrib.identity[1].pattern, "^.+$");
  EXPECT_EQ(c.attrib.identity[1].source, "t.yaml:5");
  const std::string head = "probes:\n  attrib:\n    identity:\n";
  std::string e = config_error(head + "      - {from: cgroup, pattern: 'pod(', tenant: x}\n");
  EXPECT_NE(e.find("t.yaml:4: probes.attrib.identity[0].pattern: not a valid regular expression"),
            std::string::npos)
      << e;
  e = config_error(head + "      - {from: uid, pattern: x, tenant: x}\n");
  EXPECT_NE(e.find("probes.attrib.identity[0].from"), std::string::npos) << e;
  e = config_error(head + "      - {from: env, tenant: x}\n");
  EXPECT_NE(e.find("probes.attrib.identity[0].env: missing"), std::string::npos) << e;
  e = config_error(head + "      - {from: comm, tenant: x}\n");
  EXPECT_NE(e.find("probes.attrib.identity[0].pattern: missing"), std::string::npos) << e;
  e = config_error(head + "      - {from: comm, pattern: x, tenant: '${user}'}\n");
  EXPECT_NE(e.find("probes.attrib.identity[0].tenant: unknown ${user}"), std::string::npos) << e;
  e = config_error(head + "      - {from: comm, pattern: x, colour: red}\n");
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
}

}  // namespace
}  // namespace tailcause::core
