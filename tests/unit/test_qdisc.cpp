// SPDX-License-Identifier: Apache-2.0
// Qdisc evidence (issue 10): deltas between two rtnetlink readings, the board's history of the
// qdiscs that held traffic back, the verdict's wording, and the rtnetlink message parser on
// well-formed, truncated and hostile messages.
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "core/host/evidence_board.h"
#include "core/host/qdisc.h"
#include "core/detect/verdict.h"
#include "probes/qdisc_stats.h"
#include "stage_builder.h"

namespace tailcause::core {
namespace {

constexpr uint64_t s = 1'000'000'000;
constexpr uint64_t ms = 1'000'000;

QdiscDelta over(uint64_t overlimits, uint64_t bytes, uint64_t backlog = 0) {
  QdiscDelta d;
  d.overlimits = overlimits;
  d.bytes = bytes;
  d.packets = bytes / 100;
  d.backlog_bytes = backlog;
  return d;
}

TEST(QdiscDelta, CountersSinceTheLastReading) {
  QdiscCounters a{.bytes = 1000, .packets = 10, .drops = 1, .overlimits = 5, .backlog_bytes = 0};
  QdiscCounters b{
      .bytes = 4000, .packets = 40, .drops = 1, .overlimits = 9, .backlog_bytes = 300, .qlen = 2};
  QdiscDelta d = qdisc_delta(a, b);
  EXPECT_EQ(d.bytes, 3000u);
  EXPECT_EQ(d.packets, 30u);
  EXPECT_EQ(d.drops, 0u);
  EXPECT_EQ(d.overlimits, 4u);
  EXPECT_EQ(d.backlog_bytes, 300u);
  EXPECT_EQ(d.qlen, 2u);
  EXPECT_TRUE(d.backlog_grew);
  EXPECT_TRUE(d.acted());
  // A qdisc replaced under the same handle counts from zero: its values are the interval's.
  QdiscCounters fresh{.bytes = 500, .packets = 5, .overlimits = 2};
  d = qdisc_delta(b, fresh);
  EXPECT_EQ(d.bytes, 500u);
  EXPECT_EQ(d.overlimits, 2u);
  EXPECT_FALSE(d.backlog_grew);
  // Traffic alone is not acting: a quiet qdisc goes nowhere.
  EXPECT_FALSE(
      qdisc_delta(a, QdiscCounters{.bytes = 9000, .packets = 90, .drops = 1, .overlimits = 5})
          .acted());
}

TEST(QdiscDelta, HandlesAsTcPrintsThem) {
  EXPECT_EQ(qdisc_handle(0x80010000), "8001:");
  EXPECT_EQ(qdisc_handle(0), "0:");
  EXPECT_EQ(qdisc_handle(0x00010002), "1:2");
  EXPECT_TRUE(qdisc_never_shapes("noqueue"));
  EXPECT_FALSE(qdisc_never_shapes("tbf"));
  EXPECT_FALSE(qdisc_never_shapes("fq_codel"));
}

TEST(EvidenceBoardQdisc, TheQdiscOverItsLimitDuringTheStage) {
  EvidenceBoard b;
  // Read once a second (in time order, as the poller posts): the tbf on lo over its limit from
  // 10 s to 14 s, an fq_codel on eth0 dropping a little at 12 s and only sending at 13 s.
  QdiscDelta drop;
  drop.drops = 3;
  drop.bytes = 100;
  for (uint64_t t = 10; t <= 14; t++) {
    b.add_qdisc("lo", "tbf", "8001:", t * s, over(80, 4096, 2048));
    if (t == 12) b.add_qdisc("eth0", "fq_codel", "0:", t * s, drop);
    if (t == 13) b.add_qdisc("eth0", "fq_codel", "0:", t * s, QdiscDelta{.bytes = 1'000'000});
  }
  EXPECT_EQ(b.qdisc_samples(), 6u);

  // A stage from 11.5 s to 12.5 s: the readings at 12 s and 13 s cover it, the one at 11 s
  // (the last before it) counts too.
  auto e = b.qdisc_over_limit({"lo"}, {}, 11 * s + 500 * ms, 12 * s + 500 * ms);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->device, "lo");
  EXPECT_EQ(e->kind, "tbf");
  EXPECT_EQ(e->handle, "8001:");
  EXPECT_EQ(e->overlimits, 240u);
  EXPECT_EQ(e->bytes, 12288u);
  EXPECT_EQ(e->backlog_bytes, 2048u);
  EXPECT_EQ(e->intervals, 3u);
  // Any device: the tbf held back more than the fq_codel dropped.
  EXPECT_EQ(b.qdisc_over_limit({}, {}, 11 * s + 500 * ms, 12 * s + 500 * ms)->device, "lo");
  // A non-loopback peer: any device but lo.
  e = b.qdisc_over_limit({}, {"lo"}, 11 * s + 500 * ms, 12 * s + 500 * ms);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->device, "eth0");
  EXPECT_EQ(e->drops, 3u);
  // Before the fault, after it, on another device: nothing.
  EXPECT_FALSE(b.qdisc_over_limit({"lo"}, {}, 5 * s, 8 * s));
  EXPECT_FALSE(b.qdisc_over_limit({"lo"}, {}, 16 * s, 17 * s));
  EXPECT_FALSE(b.qdisc_over_limit({"eth1"}, {}, 11 * s, 13 * s));
  // Expiry drops old readings.
  b.expire(14 * s + 301 * s);
  EXPECT_EQ(b.qdisc_samples(), 0u);
}

TEST(EvidenceBoardQdisc, Bounded) {
  EvidenceBoard b;
  for (uint64_t i = 0; i < 20000; i++) b.add_qdisc("lo", "tbf", "8001:", i * ms, over(1, 1));
  EXPECT_EQ(b.qdisc_samples(), 16384u);
  EXPECT_EQ(b.refused(), 20000u - 16384u);
}

StageRecord tool_stage(uint64_t network_ms, uint64_t cpu_ms) {
  return testing::StageBuilder()
      .tenant("ta")
      .agent("rag-agent")
      .stage("tool")
      .start_ns(10 * s)
      .component(Component::network, network_ms * ms)
      .component(Component::on_cpu, cpu_ms * ms)
      .build();
}

TEST(VerdictQdisc, NetworkVerdictNamesTheQdisc) {
  QdiscEvidence e;
  e.device = "lo";
  e.kind = "tbf";
  e.handle = "8001:";
  e.overlimits = 312;
  e.bytes = 2202010;  // 2.1 MiB
  e.backlog_bytes = 14 * 1024;
  EXPECT_EQ(describe_qdisc(e),
            "qdisc tbf 8001: on lo over its limit 312 times (2.1 MiB sent, "
            "backlog 14 KiB)");
  EvidenceHints hints;
  hints.qdisc = describe_qdisc(e);
  auto r = tool_stage(340, 2);
  r.network_peer = "127.0.0.1:8080";
  EXPECT_EQ(explain(r, nullptr, hints).evidence,
            "tool 342 ms, 99% network: peer 127.0.0.1:8080; qdisc tbf 8001: on lo over its limit "
            "312 times (2.1 MiB sent, backlog 14 KiB)");
  // Without a peer the qdisc stands alone.
  r.network_peer.reset();
  EXPECT_EQ(explain(r, nullptr, hints).evidence,
            "tool 342 ms, 99% network: qdisc tbf 8001: on lo over its limit 312 times (2.1 MiB "
            "sent, backlog 14 KiB)");
  // It explains the network only.
  EXPECT_EQ(explain(tool_stage(1, 300), nullptr, hints).evidence.find("qdisc"), std::string::npos);
  // Without qdisc evidence, nothing is added.
  r.network_peer = "127.0.0.1:8080";
  EXPECT_EQ(explain(r, nullptr, {}).evidence, "tool 342 ms, 99% network: peer 127.0.0.1:8080");
}

TEST(VerdictQdisc, DropsAndQueueingWording) {
  QdiscEvidence e;
  e.device = "eth0";
  e.kind = "fq_codel";
  e.handle = "0:";
  e.drops = 1;
  EXPECT_EQ(describe_qdisc(e), "qdisc fq_codel 0: on eth0 dropped 1 packet");
  e.overlimits = 1;
  e.drops = 12;
  e.bytes = 900;
  EXPECT_EQ(describe_qdisc(e),
            "qdisc fq_codel 0: on eth0 over its limit 1 time, dropped 12 "
            "packets (900 B sent)");
  e.overlimits = e.drops = e.bytes = 0;
  e.backlog_bytes = 3000;
  EXPECT_EQ(describe_qdisc(e), "qdisc fq_codel 0: on eth0 queueing (backlog 2.93 KiB)");
}

// No qdisc over its limit: the board has nothing, so the hint stays empty.
TEST(VerdictQdisc, QuietQdiscAddsNothing) {
  EvidenceBoard b;
  QdiscDelta quiet;
  quiet.bytes = 1 << 20;
  quiet.packets = 900;
  b.add_qdisc("lo", "tbf", "8001:", 11 * s, quiet);
  EXPECT_EQ(b.qdisc_samples(), 0u);
  EXPECT_FALSE(b.qdisc_over_limit({"lo"}, {}, 10 * s, 12 * s));
}

TEST(VerdictQdisc, LoopbackPeers) {
  EXPECT_TRUE(is_loopback_peer("127.0.0.1:8080"));
  EXPECT_TRUE(is_loopback_peer("127.3.2.1:80"));
  EXPECT_TRUE(is_loopback_peer("[::1]:443"));
  EXPECT_FALSE(is_loopback_peer("10.0.0.7:443"));
  EXPECT_FALSE(is_loopback_peer("[::ffff:10.0.0.1]:80"));
  EXPECT_FALSE(is_loopback_peer("[2001:db8::1]:80"));
  EXPECT_FALSE(is_loopback_peer("1270.0.0.1:80"));
}

}  // namespace
}  // namespace tailcause::core

namespace tailcause::probes {
namespace {

// An RTM_NEWQDISC message built with libmnl, as the kernel sends one.
class Message {
 public:
  Message() {
    nlh_ = mnl_nlmsg_put_header(buf_.data());
    nlh_->nlmsg_type = RTM_NEWQDISC;
    tc_ = static_cast<tcmsg*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(tcmsg)));
    tc_->tcm_ifindex = 1;
    tc_->tcm_handle = 0x80010000;
    tc_->tcm_parent = TC_H_ROOT;
  }
  Message& kind(const char* k) {
    mnl_attr_put_strz(nlh_, TCA_KIND, k);
    return *this;
  }
  Message& stats(uint64_t bytes, uint32_t packets, uint32_t drops, uint32_t overlimits,
                 uint32_t backlog, size_t queue_len = sizeof(gnet_stats_queue)) {
    nlattr* nest = mnl_attr_nest_start(nlh_, TCA_STATS2);
    gnet_stats_basic basic{};
    basic.bytes = bytes;
    basic.packets = packets;
    mnl_attr_put(nlh_, TCA_STATS_BASIC, sizeof basic, &basic);
    gnet_stats_queue q{};
    q.qlen = 1;
    q.backlog = backlog;
    q.drops = drops;
    q.overlimits = overlimits;
    mnl_attr_put(nlh_, TCA_STATS_QUEUE, queue_len, &q);
    mnl_attr_nest_end(nlh_, nest);
    return *this;
  }
  nlmsghdr* header() { return nlh_; }
  std::span<const std::byte> bytes(size_t cut = 0) const {
    return std::span(reinterpret_cast<const std::byte*>(buf_.data()), nlh_->nlmsg_len - cut);
  }

 private:
  alignas(8) std::array<char, 4096> buf_{};
  nlmsghdr* nlh_;
  tcmsg* tc_;
};

TEST(QdiscParse, ReadsKindHandleAndStatistics) {
  Message m;
  m.kind("tbf").stats(123456, 789, 4, 312, 14336);
  auto r = parse_qdisc_message(m.bytes());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "tbf");
  EXPECT_EQ(r->ifindex, 1u);
  EXPECT_EQ(r->handle, 0x80010000u);
  EXPECT_TRUE(r->has_stats);
  EXPECT_EQ(r->counters.bytes, 123456u);
  EXPECT_EQ(r->counters.packets, 789u);
  EXPECT_EQ(r->counters.drops, 4u);
  EXPECT_EQ(r->counters.overlimits, 312u);
  EXPECT_EQ(r->counters.backlog_bytes, 14336u);
  EXPECT_EQ(r->counters.qlen, 1u);
}

TEST(QdiscParse, UntrustedInput) {
  // No kind: not a qdisc we can name.
  Message none;
  none.stats(1, 1, 0, 0, 0);
  EXPECT_FALSE(parse_qdisc_message(none.bytes()));
  // Another message type, a truncated header, a message cut short.
  Message other;
  other.kind("tbf");
  other.header()->nlmsg_type = RTM_NEWLINK;
  EXPECT_FALSE(parse_qdisc_message(other.bytes()));
  EXPECT_FALSE(parse_qdisc_message(std::span<const std::byte>()));
  Message cut;
  cut.kind("tbf").stats(1, 1, 0, 5, 0);
  EXPECT_FALSE(parse_qdisc_message(cut.bytes(cut.header()->nlmsg_len - 10)));
  // A header claiming more than was received.
  Message lying;
  lying.kind("tbf");
  lying.header()->nlmsg_len += 64;
  EXPECT_FALSE(parse_qdisc_message(std::span(reinterpret_cast<const std::byte*>(lying.header()),
                                             lying.header()->nlmsg_len - 64)));
  // A queue attribute too short for its struct: ignored, the rest read.
  Message short_queue;
  short_queue.kind("tbf").stats(100, 1, 9, 9, 9, 8);
  auto r = parse_qdisc_message(short_queue.bytes());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->counters.bytes, 100u);
  EXPECT_EQ(r->counters.overlimits, 0u);
  // A kind that is not NUL-terminated.
  Message raw;
  mnl_attr_put(raw.header(), TCA_KIND, 3, "tbf");
  EXPECT_FALSE(parse_qdisc_message(raw.bytes()));
}

// A real dump of this machine's qdiscs: needs no privilege and never fails on a sane host.
TEST(QdiscParse, PollsTheHost) {
  QdiscStats q(8);
  core::EvidenceBoard board;
  EXPECT_TRUE(q.poll(board, 1 * 1'000'000'000ull));
  EXPECT_TRUE(q.poll(board, 2 * 1'000'000'000ull));
}

}  // namespace
}  // namespace tailcause::probes
