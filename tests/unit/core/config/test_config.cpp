// SPDX-License-Identifier: Apache-2.0
// Config parsing: defaults, every key, and errors that name the source, the line and the
// full dotted key, so that a user can fix the file from the message alone.
#include <gtest/gtest.h>

#include <string>

#include "core/config/config.h"

using namespace tailcause::core;

namespace {

// The message of the ConfigError that parsing `yaml` throws, or "" (and a test failure).
std::string error_of(const std::string& yaml, const std::string& source = "/etc/tailcause.yaml") {
  try {
    parse_config(yaml, source);
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ConfigError: " << e.what() << "\nfor:\n" << yaml;
    return "";
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return "";
}

std::string listen_error(const std::string& text) {
  try {
    parse_listen(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted listen address " << text;
  return "";
}

// Asserts the message starts with "SOURCE:LINE: KEY:" and mentions `what`.
#define EXPECT_CONFIG_ERROR(yaml, line, key, what)                                               \
  do {                                                                                           \
    const std::string msg = error_of(yaml);                                                      \
    const std::string prefix = "/etc/tailcause.yaml:" + std::to_string(line) + ": " + key + ":"; \
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "expected prefix '" << prefix << "' in: " << msg;     \
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;     \
  } while (0)

}  // namespace

// ---- defaults and every key -----------------------------------------------------------

TEST(Config, EmptyOrCommentOnlyFilesGiveTheDefaults) {
  const Config defaults;
  EXPECT_EQ(defaults.listen, "0.0.0.0:9436");
  EXPECT_EQ(defaults.top_k, 50u);
  EXPECT_EQ(defaults.cgroup.version, "auto");
  EXPECT_EQ(defaults.cgroup.root, "auto");
  EXPECT_EQ(defaults.btf, "");
  EXPECT_FALSE(defaults.bpf_stats);
  EXPECT_TRUE(defaults.sched.enabled && defaults.throttle.enabled && defaults.tcp.enabled &&
              defaults.memory.enabled && defaults.block.enabled);
  EXPECT_EQ(defaults.sched.runqlen_dense_hz, 200u);
  EXPECT_EQ(defaults.sched.runqlen_sparse_hz, 10u);
  EXPECT_EQ(defaults.throttle.interval_ms, 1000u);
  EXPECT_EQ(parse_config("", "f"), defaults);
  EXPECT_EQ(parse_config("# nothing here\n\n", "f"), defaults);
  EXPECT_EQ(parse_config("probes:\ncgroup:\n", "f"), defaults);  // empty sections
}

TEST(Config, EveryKeyIsParsed) {
  const Config c = parse_config(R"(# a full configuration
listen: "[::1]:9500"
top_k: 7
btf: /boot/vmlinux.btf
bpf_stats: true
cgroup:
  version: v1
  root: /sys/fs/cgroup/cpu
probes:
  sched:
    enabled: false
    runqlen_dense_hz: 500
    runqlen_sparse_hz: 20
  throttle:
    enabled: false
    interval_ms: 250
  tcp: {enabled: false}
  memory:
    enabled: false
  block:
    enabled: false
)",
                                "f");
  Config expected;
  expected.listen = "[::1]:9500";
  expected.top_k = 7;
  expected.btf = "/boot/vmlinux.btf";
  expected.bpf_stats = true;
  expected.cgroup = {"v1", "/sys/fs/cgroup/cpu"};
  expected.sched = {false, 500, 20};
  expected.throttle = {false, 250};
  expected.tcp.enabled = false;
  expected.memory.enabled = false;
  expected.block.enabled = false;
  EXPECT_EQ(c, expected);
  // Each section alone changes only itself.
  Config only_block;
  only_block.block.enabled = false;
  EXPECT_EQ(parse_config("probes:\n  block:\n    enabled: false\n", "f"), only_block);
}

TEST(Config, BoundsAreInclusive) {
  const Config c = parse_config(
      "top_k: 100000\nprobes:\n  sched:\n    runqlen_dense_hz: 1000\n    runqlen_sparse_hz: "
      "1000\n  throttle:\n    interval_ms: 60000\n",
      "f");
  EXPECT_EQ(c.top_k, 100000u);
  EXPECT_EQ(c.sched.runqlen_dense_hz, 1000u);
  EXPECT_EQ(c.sched.runqlen_sparse_hz, 1000u);
  EXPECT_EQ(c.throttle.interval_ms, 60000u);
  EXPECT_EQ(parse_config("top_k: 1\n", "f").top_k, 1u);
}

// ---- errors: source, line, dotted key -------------------------------------------------

TEST(ConfigErrors, UnknownKeyAtTopLevel) {
  EXPECT_CONFIG_ERROR("# comment\ntop_k: 5\nlisten_port: 9436\n", 3, "listen_port", "unknown key");
}

TEST(ConfigErrors, UnknownNestedKeyNamesTheDottedPathAndItsLine) {
  const std::string yaml =
      "top_k: 5\n"                  // 1
      "probes:\n"                   // 2
      "  tcp:\n"                    // 3
      "    enabled: true\n"         // 4
      "  sched:\n"                  // 5
      "    enabled: true\n"         // 6
      "    # a comment\n"           // 7
      "    foo: 3\n"                // 8
      "    runqlen_dense_hz: 9\n";  // 9
  EXPECT_CONFIG_ERROR(yaml, 8, "probes.sched.foo", "unknown key");
  EXPECT_NE(error_of(yaml).find("runqlen_dense_hz"), std::string::npos);  // lists known keys
  EXPECT_CONFIG_ERROR("cgroup:\n  version: v2\n  mount: /x\n", 3, "cgroup.mount", "unknown key");
  EXPECT_CONFIG_ERROR("probes: {sched: {foo: 1}}", 1, "probes.sched.foo", "unknown key");
}

TEST(ConfigErrors, WrongTypes) {
  EXPECT_CONFIG_ERROR("top_k: abc\n", 1, "top_k", "'abc'");
  EXPECT_CONFIG_ERROR("top_k: 5.5\n", 1, "top_k", "integer");
  EXPECT_CONFIG_ERROR("top_k: -3\n", 1, "top_k", "integer");
  EXPECT_CONFIG_ERROR("top_k: [1, 2]\n", 1, "top_k", "sequence");
  EXPECT_CONFIG_ERROR("\nprobes:\n  tcp:\n    enabled: maybe\n", 4, "probes.tcp.enabled",
                      "'maybe'");
  EXPECT_CONFIG_ERROR("bpf_stats: {a: 1}\n", 1, "bpf_stats", "true or false");
  EXPECT_CONFIG_ERROR("top_k: 2\nprobes: 3\n", 2, "probes", "expected a mapping");
  EXPECT_CONFIG_ERROR("probes:\n  sched: [1]\n", 2, "probes.sched", "expected a mapping");
  EXPECT_CONFIG_ERROR("btf: [a]\n", 1, "btf", "expected a string");
  EXPECT_CONFIG_ERROR("- top_k\n", 1, "(top level)", "expected a mapping");
}

TEST(ConfigErrors, EmptyValuesNameTheirKeyLine) {
  // An empty value is reported on the line of its key (not the next one), as nothing.
  EXPECT_CONFIG_ERROR("top_k:\nlisten: \":1\"\n", 1, "top_k", "nothing");
  EXPECT_CONFIG_ERROR("probes:\n  tcp:\n    enabled:\n  block:\n    enabled: true\n", 3,
                      "probes.tcp.enabled", "nothing");
  EXPECT_CONFIG_ERROR("listen: ~\n", 1, "listen", "expected a string");
}

TEST(ConfigErrors, OutOfRange) {
  EXPECT_CONFIG_ERROR("top_k: 0\n", 1, "top_k", "from 1 to 100000");
  EXPECT_CONFIG_ERROR("top_k: 100001\n", 1, "top_k", "from 1 to 100000");
  EXPECT_CONFIG_ERROR("top_k: 99999999999999999999999\n", 1, "top_k", "from 1 to 100000");
  EXPECT_CONFIG_ERROR("probes:\n  sched:\n    runqlen_dense_hz: 5000\n", 3,
                      "probes.sched.runqlen_dense_hz", "from 1 to 1000");
  EXPECT_CONFIG_ERROR("probes:\n  throttle:\n    interval_ms: 0\n", 3,
                      "probes.throttle.interval_ms", "from 1 to 60000");
}

TEST(ConfigErrors, BadEnum) {
  EXPECT_CONFIG_ERROR("cgroup:\n  version: v3\n", 2, "cgroup.version", "auto, v1, v2");
}

TEST(ConfigErrors, CgroupRootMustBeAbsolute) {
  EXPECT_CONFIG_ERROR("cgroup:\n  root: sys/fs/cgroup\n", 2, "cgroup.root", "absolute path");
  EXPECT_CONFIG_ERROR("cgroup:\n  root: \"\"\n", 2, "cgroup.root", "absolute path");
}

TEST(ConfigErrors, BadListen) {
  EXPECT_CONFIG_ERROR("listen: nope\n", 1, "listen", "HOST:PORT");
  EXPECT_CONFIG_ERROR("top_k: 3\nlisten: \":99999\"\n", 2, "listen", "1-65535");
  EXPECT_CONFIG_ERROR("listen: 9436\n", 1, "listen", "HOST:PORT");
}

TEST(ConfigErrors, InvalidYamlReportsTheLine) {
  // yaml-cpp reports an unclosed flow mapping at the end of the file.
  EXPECT_CONFIG_ERROR("top_k: 3\nprobes:\n  sched: {enabled: true\n", 4, "invalid YAML", "");
  EXPECT_CONFIG_ERROR("top_k: 3\n  bad: indent\n", 2, "invalid YAML", "");
  EXPECT_CONFIG_ERROR("top_k: 3\nbtf: a: b\n", 2, "invalid YAML", "");
}

TEST(ConfigErrors, SparseRateAboveDenseRate) {
  EXPECT_CONFIG_ERROR("probes:\n  sched:\n    runqlen_dense_hz: 50\n    runqlen_sparse_hz: 100\n",
                      4, "probes.sched.runqlen_sparse_hz", "must not exceed");
  // Only the dense rate set, below the default sparse rate of 10: its line is the one to fix.
  EXPECT_CONFIG_ERROR("probes:\n  sched:\n    runqlen_dense_hz: 5\n", 3,
                      "probes.sched.runqlen_dense_hz", "must not exceed");
  EXPECT_NO_THROW(parse_config("probes:\n  sched:\n    runqlen_dense_hz: 10\n", "f"));
}

TEST(Config, UiHistoryWindow) {
  const Config d = parse_config("", "t.yaml");
  EXPECT_EQ(d.ui.tick_s, 2u);
  EXPECT_EQ(d.ui.history_s, 900u);
  const Config c = parse_config("ui:\n  tick_s: 12\n  history_s: 21600\n", "t.yaml");
  EXPECT_EQ(c.ui.tick_s, 12u);
  EXPECT_EQ(c.ui.history_s, 21600u);
}

TEST(Config, SeriesLimits) {
  const Config d = parse_config("", "t.yaml");
  EXPECT_EQ(d.limits.stage_series, 64u);
  EXPECT_EQ(d.limits.request_series, 32u);
  EXPECT_EQ(d.limits.cache_series, 32u);
  const Config c = parse_config(
      "limits:\n  stage_series: 500\n  request_series: 7\n  cache_series: 100000\n", "t.yaml");
  EXPECT_EQ(c.limits.stage_series, 500u);
  EXPECT_EQ(c.limits.request_series, 7u);
  EXPECT_EQ(c.limits.cache_series, 100000u);
}

TEST(ConfigErrors, SeriesLimitsAreBounded) {
  EXPECT_CONFIG_ERROR("limits:\n  stage_series: 0\n", 2, "limits.stage_series",
                      "expected an integer from 1 to 100000");
  EXPECT_CONFIG_ERROR("limits:\n  cache_series: 100001\n", 2, "limits.cache_series",
                      "expected an integer from 1 to 100000");
  EXPECT_CONFIG_ERROR("limits:\n  request_series: -3\n", 2, "limits.request_series",
                      "expected an integer");
  EXPECT_CONFIG_ERROR("limits:\n  series: 10\n", 2, "limits.series", "unknown key");
}

TEST(ConfigErrors, UiHistoryMustHoldTwoToMaxTicks) {
  EXPECT_CONFIG_ERROR("ui:\n  tick_s: 1\n  history_s: 3600\n", 3, "ui.history_s",
                      "must hold 2 to 1800 ticks of tick_s (1)");
  EXPECT_CONFIG_ERROR("ui:\n  tick_s: 30\n  history_s: 45\n", 3, "ui.history_s",
                      "must hold 2 to 1800 ticks");
  EXPECT_CONFIG_ERROR("ui:\n  history_s: 3\n", 2, "ui.history_s", "history_s (3) must hold");
  EXPECT_NO_THROW(parse_config("ui:\n  tick_s: 1\n", "t.yaml"));  // 900 ticks
  EXPECT_CONFIG_ERROR("ui:\n  tick_s: 61\n", 2, "ui.tick_s", "expected an integer from 1 to 60");
  EXPECT_CONFIG_ERROR("ui:\n  history_s: 0\n", 2, "ui.history_s", "expected an integer");
  EXPECT_CONFIG_ERROR("ui:\n  window: 5\n", 2, "ui.window", "unknown key");
}

TEST(ConfigErrors, DuplicateKeysAreRejected) {
  EXPECT_CONFIG_ERROR("top_k: 5\nlisten: \":1\"\ntop_k: 7\n", 3, "top_k", "duplicate");
  EXPECT_CONFIG_ERROR("probes:\n  tcp:\n    enabled: true\n    enabled: false\n", 4,
                      "probes.tcp.enabled", "duplicate");
}

TEST(ConfigErrors, NonStringKeysAndExtraDocumentsAreConfigErrors) {
  EXPECT_CONFIG_ERROR("top_k: 3\n? [a, b]\n: 1\n", 2, "(top level)", "key");
  EXPECT_CONFIG_ERROR("top_k: 3\n---\ntop_k: 4\n", 3, "(top level)", "one YAML document");
}

TEST(ConfigErrors, TheSourceIsNamed) {
  const std::string msg = error_of("top_k: 0\n", "/srv/conf/tailcause.yml");
  EXPECT_EQ(msg.rfind("/srv/conf/tailcause.yml:1: top_k:", 0), 0u) << msg;
}

// ---- listen addresses -----------------------------------------------------------------

TEST(ParseListen, AcceptsHostPortForms) {
  auto a = parse_listen("0.0.0.0:9436");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 9436);
  a = parse_listen(":9436");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 9436);
  a = parse_listen("[::1]:9436");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 9436);
  a = parse_listen("[::]:1");
  EXPECT_EQ(a.host, "::");
  EXPECT_EQ(a.port, 1);
  a = parse_listen("localhost:65535");
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 65535);
}

TEST(ParseListen, RejectsBadAddresses) {
  EXPECT_NE(listen_error("127.0.0.1:0").find("1-65535"), std::string::npos);
  EXPECT_NE(listen_error("host").find("HOST:PORT"), std::string::npos);
  EXPECT_NE(listen_error("host:").find("1-65535"), std::string::npos);
  EXPECT_NE(listen_error("host:65536").find("1-65535"), std::string::npos);
  EXPECT_NE(listen_error("host:94x").find("1-65535"), std::string::npos);
  EXPECT_NE(listen_error("host:-1").find("1-65535"), std::string::npos);
  EXPECT_NE(listen_error("").find("HOST:PORT"), std::string::npos);
  // IPv6 needs brackets, balanced: "::1:9436" is ambiguous.
  EXPECT_NE(listen_error("::1:9436").find("[::1]"), std::string::npos);
  EXPECT_NE(listen_error("[::1:9436").find("[::1]"), std::string::npos);
  EXPECT_NE(listen_error("::1]:9436").find("[::1]"), std::string::npos);
  // The message names what was given.
  EXPECT_NE(listen_error("127.0.0.1:0").find("'127.0.0.1:0'"), std::string::npos);
}
