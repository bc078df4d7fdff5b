// SPDX-License-Identifier: Apache-2.0
// Root tests of the network peer of a stage's network wait: real loopback TCP peers on real
// ports (IPv4 and IPv6), the peer with the most wait when a stage waits on two, and no peer
// for stages that never waited on a socket.
#include "attrib_fixture.h"

#include <map>

#include "core/detect/verdict.h"

namespace tailcause::testing {
namespace {

// The number after "key=" in the target's output, or -1.
int printed_int(const std::string& printed, const std::string& key) {
  const auto at = printed.find(key + "=");
  return at == std::string::npos ? -1 : std::atoi(printed.c_str() + at + key.size() + 1);
}

// A tool stage waiting 300 ms on a loopback peer names it, with about all its network time;
// a CPU-bound stage names none; the verdict of the slow stage cites the peer.
TEST_F(AttribTest, SlowPeerIsNamedWithItsWait) {
  probe->start(ctx);
  const std::string printed = run_target({"slow-peer", "0x311", "attrib-peer", "300"});
  run_target({"cpu", "0x312", "attrib-nopeer", "20"});
  const int port = printed_int(printed, "port");
  ASSERT_GT(port, 0) << printed;

  const StageRecord r = only_stage(0x311);
  ASSERT_TRUE(r.network_peer) << describe(r);
  EXPECT_EQ(*r.network_peer, "127.0.0.1:" + std::to_string(port));
  const uint64_t network = part(r, Component::network);
  EXPECT_GT(r.network_peer_ns, 250'000'000u) << describe(r);
  EXPECT_LE(r.network_peer_ns, network) << "the peer's wait is part of the network component";
  EXPECT_GT(r.network_peer_ns, network * 9 / 10) << "the stage waited on no other socket";
  std::cout << "[ figures  ] peer " << r.network_peer.value_or("-") << ": "
            << seconds(r.network_peer_ns) << " s of " << seconds(network) << " s network\n";

  const core::Verdict v = core::explain(r, nullptr);
  ASSERT_FALSE(v.culprits.empty());
  EXPECT_EQ(v.culprits[0].component, Component::network);
  EXPECT_NE(v.evidence.find("network: peer 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << v.evidence;

  const StageRecord cpu = only_stage(0x312);
  EXPECT_FALSE(cpu.network_peer) << describe(cpu) << " peer " << cpu.network_peer.value_or("");
  EXPECT_EQ(cpu.network_peer_ns, 0u);
}

TEST_F(AttribTest, Ipv6PeerIsBracketed) {
  probe->start(ctx);
  const std::string printed = run_target({"slow-peer", "0x321", "attrib-peer6", "200", "v6"});
  const int port = printed_int(printed, "port");
  ASSERT_GT(port, 0) << printed;
  const StageRecord r = only_stage(0x321);
  ASSERT_TRUE(r.network_peer) << describe(r);
  EXPECT_EQ(*r.network_peer, "[::1]:" + std::to_string(port));
  EXPECT_GT(r.network_peer_ns, 150'000'000u) << describe(r);
  EXPECT_LE(r.network_peer_ns, part(r, Component::network));
}

// HTTP clients with a timeout (cpp-httplib, Python sockets) wait in poll() on their one socket.
TEST_F(AttribTest, PollOnOneSocketNamesItsPeer) {
  probe->start(ctx);
  const std::string printed = run_target({"slow-peer", "0x351", "attrib-poll", "200", "poll"});
  const int port = printed_int(printed, "port");
  ASSERT_GT(port, 0) << printed;
  const StageRecord r = only_stage(0x351);
  EXPECT_EQ(r.largest(), Component::network) << describe(r);
  ASSERT_TRUE(r.network_peer) << describe(r);
  EXPECT_EQ(*r.network_peer, "127.0.0.1:" + std::to_string(port));
  EXPECT_GT(r.network_peer_ns, 150'000'000u) << describe(r);
  EXPECT_LE(r.network_peer_ns, part(r, Component::network));
}

// Waits are summed per peer: peer a (3 x 60 ms) beats peer b (one wait of 100 ms, the longest).
TEST_F(AttribTest, PeerWithTheMostWaitInAllIsNamed) {
  probe->start(ctx);
  const std::string printed = run_target({"peers", "0x331", "attrib-peers"});
  const int port_a = printed_int(printed, "port_a"), port_b = printed_int(printed, "port_b");
  ASSERT_GT(port_a, 0) << printed;
  ASSERT_GT(port_b, 0) << printed;
  const StageRecord r = only_stage(0x331);
  ASSERT_TRUE(r.network_peer) << describe(r);
  EXPECT_EQ(*r.network_peer, "127.0.0.1:" + std::to_string(port_a)) << "b is port " << port_b;
  EXPECT_GT(r.network_peer_ns, 150'000'000u) << describe(r);
  std::cout << "[ figures  ] peer " << *r.network_peer << ": " << seconds(r.network_peer_ns)
            << " s of " << seconds(part(r, Component::network)) << " s network\n";
  // The network component also holds b's 100 ms.
  EXPECT_GT(part(r, Component::network), r.network_peer_ns + 80'000'000u) << describe(r);
}

// Figures: what the peer lookup costs threads in a stage that sleep in socket calls. Two threads
// in stages, pinned to one CPU, hand a byte back and forth over a pipe (a sleep in read() on a
// file that is not a socket: no peer) and over loopback TCP (the socket's peer is read at every
// switch-out, its wait summed at every wakeup).
TEST_F(AttribTest, PeerLookupCostFigures) {
  constexpr int kRounds = 30000;
  const std::string rounds = std::to_string(kRounds);
  auto per_handoff = [&](const std::string& printed) {
    return printed_int(printed, "elapsed_ns") / (2.0 * kRounds);
  };
  // Total BPF run time and runs of the scheduler programs so far.
  auto sched_runs = [&] {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    for (const bpf_program* p : probe->programs()) {
      const std::string name = bpf_program__name(p);
      if (name != "attrib_switch_btf" && name != "attrib_waking_btf") continue;
      const bpf_prog_info info = program_info(p);
      out[name] = {info.run_time_ns, info.run_cnt};
    }
    return out;
  };
  const double pipe_off =
      per_handoff(run_target({"pingpong", "0x341", "attrib-pp", "pipe", rounds, "0"}));
  const double tcp_off =
      per_handoff(run_target({"pingpong", "0x342", "attrib-pp", "tcp", rounds, "0"}));
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  probe->start(ctx);
  std::string line;
  double on[2] = {0, 0};
  int i = 0;
  for (const char* kind : {"pipe", "tcp"}) {
    const auto before = sched_runs();
    const std::string printed =
        run_target({"pingpong", std::to_string(0x343 + i), "attrib-pp", kind, rounds, "1"});
    on[i] = per_handoff(printed);
    const auto after = sched_runs();
    line += std::string(" ") + kind + ":";
    for (const auto& [name, now] : after) {
      const auto& was = before.count(name) ? before.at(name) : std::pair<uint64_t, uint64_t>{0, 0};
      const uint64_t runs = now.second - was.second;
      if (runs) line += " " + name + " " + std::to_string((now.first - was.first) / runs) + " ns";
    }
    line += ";";
    ++i;
  }
  if (stats_fd >= 0) close(stats_fd);
  std::cout << "[ figures  ] ping-pong between two threads in stages on one CPU, ns per hand-off: "
            << "pipe " << pipe_off << " untraced, " << on[0] << " traced; loopback TCP " << tcp_off
            << " untraced, " << on[1] << " traced\n";
  std::cout << "[ figures  ] BPF run time per run while traced:" << line << "\n";

  // Every TCP stage names the other end of the connection; no pipe stage names a peer.
  const auto tcp = stages_of(0x344), pipe = stages_of(0x343);
  ASSERT_EQ(tcp.size(), 2u);
  ASSERT_EQ(pipe.size(), 2u);
  for (const auto& s : tcp) {
    ASSERT_TRUE(s.network_peer) << describe(s);
    EXPECT_EQ(s.network_peer->rfind("127.0.0.1:", 0), 0u) << *s.network_peer;
    EXPECT_GT(s.network_peer_ns, 0u);
    EXPECT_LE(s.network_peer_ns, part(s, Component::network));
  }
  EXPECT_NE(tcp[0].network_peer, tcp[1].network_peer) << "each end sees the other";
  for (const auto& s : pipe) EXPECT_FALSE(s.network_peer) << describe(s);
}

}  // namespace
}  // namespace tailcause::testing
