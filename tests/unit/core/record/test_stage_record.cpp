// SPDX-License-Identifier: Apache-2.0
// Decoding of the attribution family's ring-buffer records: labels, trace ids, sums (UTF-8 itself:
// test_utf8.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <span>

#include "bpf/attrib.h"
#include "core/record/stage_record.h"

namespace tailcause::core {
namespace {

template <typename T>
std::span<const std::byte> bytes(const T& raw) {
  return {reinterpret_cast<const std::byte*>(&raw), sizeof raw};
}

attrib_identity identity(const char* tenant, const char* agent, const char* trace = "") {
  attrib_identity id{};
  id.request_id = 42;
  id.tgid = 7;
  std::strncpy(id.tenant, tenant, sizeof id.tenant - 1);
  std::strncpy(id.agent, agent, sizeof id.agent - 1);
  std::strncpy(id.trace_id, trace, sizeof id.trace_id - 1);
  return id;
}

attrib_stage_record stage(StageKind kind, const char* name, uint64_t wall_ns) {
  attrib_stage_record r{};
  r.hdr.type = ATTRIB_REC_STAGE;
  r.hdr.tid = 9;
  r.id = identity("tenant-a", "rag", "4BF92F3577B34DA6A3CE929D0E0E4736");
  r.span.start_ns = 1000;
  r.span.end_ns = 1000 + wall_ns;
  r.span.stage_kind = stage_kind_value(kind);
  std::strncpy(r.span.stage_name, name, sizeof r.span.stage_name - 1);
  return r;
}

TEST(StageRecordLabels, SubstitutesUnknownAndInvalidValues) {
  bool invalid = false;
  EXPECT_EQ(label_value("", false, &invalid), kUnknownLabel);
  EXPECT_FALSE(invalid);
  EXPECT_EQ(label_value("\xff-x", false, &invalid), kInvalidLabel);
  EXPECT_TRUE(invalid);
  invalid = false;
  // A tenant cut by the kernel in the middle of a character keeps its whole characters.
  EXPECT_EQ(label_value("t\xc3\xa9\xc3", true, &invalid), "t\xc3\xa9");
  EXPECT_FALSE(invalid);
  EXPECT_EQ(label_value("t\xc3\xa9\xc3", false, &invalid), kInvalidLabel);
}

TEST(StageRecordLabels, NamesStagesByKindOrByTheirFreeName) {
  const char* fixed[] = {"prompt", "embedding", "retrieval", "generation", "tool", "response"};
  for (uint32_t k = 0; k < 6; ++k) EXPECT_EQ(stage_label(k, "ignored", false, nullptr), fixed[k]);
  EXPECT_EQ(stage_label(ATTRIB_STAGE_OTHER, "rerank", false, nullptr), "rerank");
  EXPECT_EQ(stage_label(ATTRIB_STAGE_OTHER, "", false, nullptr), "other");
  EXPECT_EQ(stage_label(ATTRIB_STAGE_NONE, "", false, nullptr), "none");
  bool invalid = false;
  EXPECT_EQ(stage_label(ATTRIB_STAGE_OTHER, "\xfe", false, &invalid), kInvalidLabel);
  EXPECT_TRUE(invalid);
}

TEST(StageRecordTraceId, NormalisesW3cTraceIds) {
  EXPECT_EQ(normalize_trace_id("4BF92F3577B34DA6A3CE929D0E0E4736"),
            "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_FALSE(normalize_trace_id("4bf92f3577b34da6a3ce929d0e0e473"));   // 31 digits
  EXPECT_FALSE(normalize_trace_id("4bf92f3577b34da6a3ce929d0e0e473g"));  // not hex
  EXPECT_FALSE(normalize_trace_id(std::string(32, '0')));                // all zero
  EXPECT_FALSE(normalize_trace_id(""));
}

TEST(StageRecordDecode, UnattributedIsWhatTheMeasuredComponentsLeaveOfTheWallTime) {
  auto raw = stage(StageKind::generation, "generation", 1000);
  raw.span.component_ns[ATTRIB_ON_CPU] = 600;
  raw.span.component_ns[ATTRIB_CPU_THROTTLED] = 300;
  raw.span.page_cache_misses = 5;
  const auto rec = decode_record(bytes(raw));
  ASSERT_TRUE(rec);
  const auto& s = std::get<StageRecord>(*rec);
  EXPECT_EQ(s.stage, "generation");
  EXPECT_EQ(s.id.tenant, "tenant-a");
  EXPECT_EQ(s.id.agent, "rag");
  EXPECT_EQ(s.id.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(s.wall_ns(), 1000u);
  EXPECT_EQ(s.measured_ns(), 900u);
  EXPECT_EQ(s.component_ns[static_cast<size_t>(Component::unattributed)], 100u);
  EXPECT_EQ(s.largest(), Component::on_cpu);
  EXPECT_EQ(s.page_cache_misses, 5u);
  uint64_t sum = 0;
  for (uint64_t v : s.component_ns) sum += v;
  EXPECT_EQ(sum, s.wall_ns());

  raw.span.component_ns[ATTRIB_RUNQUEUE] = 400;  // more than the wall time (clock skew)
  const auto over = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_EQ(over.component_ns[static_cast<size_t>(Component::unattributed)], 0u);
}

// The thread whose wake-ups moved a stage's waits into its causes (critical path).
TEST(StageRecordDecode, CarriesTheWakerOfResolvedWaits) {
  auto raw = stage(StageKind::embedding, "retrieval", 1000);
  EXPECT_FALSE(std::get<StageRecord>(*decode_record(bytes(raw))).waker);
  raw.span.waker_tid = 4242;
  raw.span.waker_ns = 700;
  raw.span.waker_component = ATTRIB_CPU_THROTTLED;
  raw.span.waker_wait = ATTRIB_LOCK;
  const auto s = std::get<StageRecord>(*decode_record(bytes(raw)));
  ASSERT_TRUE(s.waker);
  EXPECT_EQ(s.waker->tid, 4242u);
  EXPECT_EQ(s.waker->ns, 700u);
  EXPECT_EQ(s.waker->component, Component::cpu_throttled);
  EXPECT_TRUE(s.waker->lock_holder);
  EXPECT_FALSE(s.waker->peer);
  raw.span.waker_wait = ATTRIB_SLEEP;
  EXPECT_FALSE(std::get<StageRecord>(*decode_record(bytes(raw))).waker->lock_holder);
  raw.span.waker_wait = ATTRIB_NETWORK;  // a local server that answered a socket wait
  EXPECT_TRUE(std::get<StageRecord>(*decode_record(bytes(raw))).waker->peer);
  raw.span.waker_component = 200;  // a newer kernel side: ignored, not misread
  EXPECT_FALSE(std::get<StageRecord>(*decode_record(bytes(raw))).waker);
}

static_assert(sizeof(attrib_span) % 8 == 0, "records are read as arrays of 8-byte words");

TEST(StageRecordDecode, FlagsUnknownRequestsWorkersAndAbortedStages) {
  auto raw = stage(StageKind::embedding, "embedding", 10);
  raw.id.flags = ATTRIB_ID_NO_REQUEST;
  raw.span.flags = ATTRIB_SPAN_WORKER | ATTRIB_SPAN_ABORTED;
  const auto s = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_FALSE(s.id.known_request);
  EXPECT_EQ(s.id.tenant, kUnknownLabel);
  EXPECT_EQ(s.id.agent, kUnknownLabel);
  EXPECT_TRUE(s.worker());
  EXPECT_TRUE(s.aborted());
}

TEST(StageRecordDecode, ReportsBadStringsWithoutFailing) {
  auto raw = stage(StageKind::other, "\xff-name", 10);
  raw.id = identity("\xff\xfe", "rag", "xyz");
  const auto s = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_EQ(s.id.tenant, kInvalidLabel);
  EXPECT_TRUE(s.id.invalid_utf8);
  EXPECT_TRUE(s.id.bad_trace_id);
  EXPECT_TRUE(s.id.trace_id.empty());
  EXPECT_EQ(s.stage, kInvalidLabel);
  EXPECT_TRUE(s.invalid_name);

  // A field without its NUL (written by a buggy or hostile producer) is read to its end only.
  std::memset(raw.id.tenant, 'x', sizeof raw.id.tenant);
  const auto full = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_EQ(full.id.tenant, std::string(sizeof raw.id.tenant, 'x'));
}

TEST(StageRecordDecode, RejectsShortAndUnknownRecords) {
  auto raw = stage(StageKind::prompt, "prompt", 10);
  EXPECT_FALSE(decode_record(bytes(raw).first(sizeof raw - 8)));
  EXPECT_FALSE(decode_record(bytes(raw).first(4)));
  raw.hdr.type = 99;
  EXPECT_FALSE(decode_record(bytes(raw)));
}

TEST(StageRecordDecode, RequestsCarryTokenTimings) {
  attrib_request_record raw{};
  raw.hdr.type = ATTRIB_REC_REQUEST;
  raw.id = identity("tenant-b", "rag");
  raw.start_ns = 1'000'000'000;
  raw.end_ns = 3'000'000'000;
  raw.status = 5;
  raw.tokens = 11;
  raw.first_token_ns = 1'500'000'000;
  raw.last_token_ns = 2'500'000'000;
  const auto r = std::get<RequestRecord>(*decode_record(bytes(raw)));
  EXPECT_DOUBLE_EQ(r.duration_seconds(), 2.0);
  EXPECT_DOUBLE_EQ(*r.time_to_first_token(), 0.5);
  EXPECT_DOUBLE_EQ(*r.time_per_output_token(), 0.1);
  EXPECT_EQ(r.status, 5);

  raw.tokens = 1;
  const auto one = std::get<RequestRecord>(*decode_record(bytes(raw)));
  EXPECT_TRUE(one.time_to_first_token());
  EXPECT_FALSE(one.time_per_output_token());
  raw.tokens = 0;
  raw.first_token_ns = 0;
  EXPECT_FALSE(std::get<RequestRecord>(*decode_record(bytes(raw))).time_to_first_token());
}

TEST(StageRecordDecode, CacheQualityAndProcessRecords) {
  attrib_cache_record cache{};
  cache.hdr.type = ATTRIB_REC_CACHE;
  cache.id = identity("tenant-c", "rag");
  std::strcpy(cache.cache, "vectors");
  cache.result = 2;
  cache.age_ns = 1234;
  cache.time_ns = 5'000'000'000;
  const auto c = std::get<CacheRecord>(*decode_record(bytes(cache)));
  EXPECT_EQ(c.cache, "vectors");
  EXPECT_EQ(c.result, 2);
  EXPECT_EQ(c.age_ns, 1234u);
  EXPECT_EQ(c.time_ns, 5'000'000'000u);

  attrib_quality_record q{};
  q.hdr.type = ATTRIB_REC_QUALITY;
  q.id = identity("tenant-c", "rag");
  q.entropy_micro = 2'500'000;
  q.time_ns = 7'000'000'000;
  const auto quality = std::get<QualityRecord>(*decode_record(bytes(q)));
  EXPECT_DOUBLE_EQ(quality.entropy, 2.5);
  EXPECT_EQ(quality.time_ns, 7'000'000'000u);
  EXPECT_FALSE(quality.thread_anomaly) << "end_ns 0: no anomaly was ever seen";
  EXPECT_FALSE(quality.process_anomaly);

  attrib_process_record p{};
  p.hdr.type = ATTRIB_REC_EXEC;
  p.hdr.tid = 1234;
  const auto e = std::get<ProcessRecord>(*decode_record(bytes(p)));
  EXPECT_TRUE(e.exec);
  EXPECT_EQ(e.pid, 1234u);
  p.hdr.type = ATTRIB_REC_PROCESS_EXIT;
  EXPECT_FALSE(std::get<ProcessRecord>(*decode_record(bytes(p))).exec);
}

// The cache library's actions: named, counted as sent; an action the kernel would have dropped
// is rejected here too, and bad strings are replaced and flagged, never fatal.
TEST(StageRecordDecode, CacheActionRecords) {
  attrib_cache_action_record a{};
  a.hdr.type = ATTRIB_REC_CACHE_ACTION;
  a.tgid = 77;
  std::strcpy(a.tenant, "tenant-a");
  std::strcpy(a.cache, "vectors");
  a.action = 4;
  a.count = 12;
  a.time_ns = 9'000'000'000;
  const auto r = std::get<CacheActionRecord>(*decode_record(bytes(a)));
  EXPECT_EQ(r.pid, 77u);
  EXPECT_EQ(r.tenant, "tenant-a");
  EXPECT_EQ(r.cache, "vectors");
  EXPECT_STREQ(kCacheActionNames[r.action], "evict");
  EXPECT_EQ(r.count, 12u);
  EXPECT_EQ(r.time_ns, 9'000'000'000u);
  EXPECT_FALSE(r.invalid_utf8);

  a.action = ATTRIB_CACHE_ACTIONS;
  EXPECT_FALSE(decode_record(bytes(a)));
  a.action = -1;
  EXPECT_FALSE(decode_record(bytes(a)));

  a.action = 0;
  a.tenant[0] = '\xff';
  const auto bad = std::get<CacheActionRecord>(*decode_record(bytes(a)));
  EXPECT_TRUE(bad.invalid_utf8);
  EXPECT_NE(bad.tenant, std::string(a.tenant));
  EXPECT_FALSE(decode_record(bytes(a).first(sizeof a - 8))) << "not read past its end";
}

TEST(StageRecordDecode, QualityRecordsCarryTheThreadsAndTheProcesssLastAnomaly) {
  attrib_quality_record q{};
  q.hdr.type = ATTRIB_REC_QUALITY;
  q.id = identity("tenant-c", "rag");
  q.time_ns = 9'000'000'000;
  q.thread_anomaly = {8'998'000'000, 4'200'000, ATTRIB_RUNQUEUE, 0};
  q.process_anomaly = {8'999'000'000, 0, ATTRIB_ANOMALY_MAJOR_FAULT, 0};
  auto r = std::get<QualityRecord>(*decode_record(bytes(q)));
  ASSERT_TRUE(r.thread_anomaly);
  EXPECT_EQ(r.thread_anomaly->end_ns, 8'998'000'000u);
  EXPECT_EQ(r.thread_anomaly->duration_ns, 4'200'000u);
  EXPECT_EQ(r.thread_anomaly->kind, "runqueue");
  ASSERT_TRUE(r.process_anomaly);
  EXPECT_EQ(r.process_anomaly->kind, kMajorFaultAnomaly);
  EXPECT_EQ(r.process_anomaly->duration_ns, 0u);

  q.thread_anomaly.kind = ATTRIB_CPU_THROTTLED;
  q.process_anomaly = {8'990'000'000, 2'000'000, ATTRIB_BLOCK_IO, 0};
  r = std::get<QualityRecord>(*decode_record(bytes(q)));
  EXPECT_EQ(r.thread_anomaly->kind, "cpu_throttled");
  EXPECT_EQ(r.process_anomaly->kind, "block_io");
  q.thread_anomaly.kind = 99;  // from a newer kernel side: kept, named unknown
  EXPECT_EQ(std::get<QualityRecord>(*decode_record(bytes(q))).thread_anomaly->kind, kUnknownLabel);

  EXPECT_EQ(anomaly_component("runqueue"), Component::runqueue);
  EXPECT_EQ(anomaly_component("cpu_throttled"), Component::cpu_throttled);
  EXPECT_EQ(anomaly_component("block_io"), Component::block_io);
  EXPECT_FALSE(anomaly_component(kMajorFaultAnomaly));
  EXPECT_FALSE(anomaly_component("unattributed"));

  // A record cut before its anomalies is refused rather than read past its end.
  EXPECT_FALSE(decode_record(bytes(q).first(sizeof q - sizeof q.process_anomaly)));
}

TEST(StageRecordDecode, NetworkPeerOfIpv4Ipv6AndMappedSockets) {
  auto raw = stage(StageKind::tool, "tool", 1000);
  raw.span.component_ns[ATTRIB_NETWORK] = 900;
  auto s = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_FALSE(s.network_peer) << "family 0: the stage waited on no socket peer";
  EXPECT_EQ(s.network_peer_ns, 0u);

  raw.span.peer.family = 2;  // AF_INET
  const uint8_t v4[4] = {127, 0, 0, 1};
  std::memcpy(raw.span.peer.addr, v4, sizeof v4);
  raw.span.peer.port = 7070;
  raw.span.peer.wait_ns = 850;
  s = std::get<StageRecord>(*decode_record(bytes(raw)));
  ASSERT_TRUE(s.network_peer);
  EXPECT_EQ(*s.network_peer, "127.0.0.1:7070");
  EXPECT_EQ(s.network_peer_ns, 850u);

  raw.span.peer.family = 10;  // AF_INET6
  std::memset(raw.span.peer.addr, 0, sizeof raw.span.peer.addr);
  raw.span.peer.addr[15] = 1;
  raw.span.peer.port = 80;
  EXPECT_EQ(std::get<StageRecord>(*decode_record(bytes(raw))).network_peer, "[::1]:80");

  // A dual-stack socket talking to an IPv4 peer: ::ffff:10.0.0.7 is shown as IPv4.
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7};
  std::memcpy(raw.span.peer.addr, mapped, sizeof mapped);
  raw.span.peer.port = 443;
  EXPECT_EQ(std::get<StageRecord>(*decode_record(bytes(raw))).network_peer, "10.0.0.7:443");

  const uint8_t doc[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
  std::memcpy(raw.span.peer.addr, doc, sizeof doc);
  raw.span.peer.port = 8080;
  EXPECT_EQ(std::get<StageRecord>(*decode_record(bytes(raw))).network_peer, "[2001:db8::10]:8080");

  raw.span.peer.family = 1;  // AF_UNIX, from a newer kernel side: no peer rather than garbage
  s = std::get<StageRecord>(*decode_record(bytes(raw)));
  EXPECT_FALSE(s.network_peer);
  EXPECT_EQ(s.network_peer_ns, 0u);
}

TEST(StageRecordDecode, NamesEveryKernelErrorKind) {
  EXPECT_EQ(kernel_error_kinds(), static_cast<size_t>(ATTRIB_KERNEL_ERRORS));
  EXPECT_STREQ(kernel_error_name(ATTRIB_ERR_STAGE_END_WITHOUT_BEGIN), "stage_end_without_begin");
  EXPECT_STREQ(kernel_error_name(ATTRIB_ERR_BAD_TRACE_ID), "bad_trace_id");
  EXPECT_STREQ(kernel_error_name(1000), "unknown");
}

}  // namespace
}  // namespace tailcause::core
