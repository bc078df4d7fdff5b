// SPDX-License-Identifier: Apache-2.0
// Root tests of the ring buffer reader (probes/ring_reader.h) against a real BPF ring buffer
// filled by tests/bpf/ring_test.bpf.c: records that wrap the end, discarded records, a full
// ring, two producers on two CPUs, wakeups, and the resident memory of its mappings. Every
// record is checked byte for byte and the count read is compared with the count the BPF
// program submitted.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "probes/handles.h"
#include "probes/probe_family.h"
#include "probes/ring_reader.h"
#include "ring_test.h"
#include "ring_test.skel.h"
#include "support.h"

namespace tailcause::testing {
namespace {

using probes::RingReader;

struct SkelDestroy {
  void operator()(ring_test_bpf* s) const { ring_test_bpf__destroy(s); }
};
using Skel = std::unique_ptr<ring_test_bpf, SkelDestroy>;

// The producer program with a ring of `bytes` (a power of two, at least a page).
Skel load(uint32_t bytes) {
  Skel s(ring_test_bpf__open());
  if (!s) return nullptr;
  if (bpf_map__set_max_entries(s->maps.ring, bytes) != 0) return nullptr;
  if (ring_test_bpf__load(s.get()) != 0) return nullptr;
  return s;
}

// One run of the program on the calling thread; the counts come back in the result.
ring_test_args produce(ring_test_bpf* s, ring_test_args a) {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof a);
  const int err = bpf_prog_test_run_opts(bpf_program__fd(s->progs.produce), &opts);
  EXPECT_EQ(err, 0) << strerror(errno);
  EXPECT_EQ(opts.retval, 0u);
  EXPECT_EQ(a.submitted + a.discarded + a.failed, a.count);
  return a;
}

// What the reader handed over, checked as it arrives (the sink must not throw).
struct Received {
  std::vector<std::vector<uint64_t>> seqs = std::vector<std::vector<uint64_t>>(4);
  uint64_t bad = 0;
  std::string first_bad;

  RingReader::Sink sink() {
    return [this](std::span<const std::byte> bytes) { check(bytes); };
  }
  void check(std::span<const std::byte> bytes) {
    ring_test_record r{};
    if (bytes.size() < sizeof r) return fail("short record of " + std::to_string(bytes.size()));
    std::memcpy(&r, bytes.data(), sizeof r);
    if (r.producer >= seqs.size()) return fail("producer " + std::to_string(r.producer));
    if (r.size != bytes.size()) {
      return fail("seq " + std::to_string(r.seq) + ": " + std::to_string(bytes.size()) +
                  " bytes handed, " + std::to_string(r.size) + " written");
    }
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    for (uint32_t i = sizeof r; i < r.size; ++i) {
      if (p[i] != RING_TEST_PATTERN(r.seq, r.producer, i)) {
        return fail("seq " + std::to_string(r.seq) + ": byte " + std::to_string(i) + " of " +
                    std::to_string(r.size) + " differs");
      }
    }
    seqs[r.producer].push_back(r.seq);
  }
  void fail(const std::string& why) {
    if (bad++ == 0) first_bad = why;
  }
};

bool strictly_increasing(const std::vector<uint64_t>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] <= v[i - 1]) return false;
  }
  return true;
}

// Resident kB of this process (all mappings).
long rss_kb() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  long kb = -1;
  while (in >> key) {
    if (key == "Rss:") {
      in >> kb;
      break;
    }
    in.ignore(1 << 20, '\n');
  }
  return kb;
}

// Small records in turn, consumed after every run of three: the sizes cycle through a 4 KiB
// ring, so many records wrap its end. All arrive, in order, intact.
TEST(RingReader, RecordsWrappingTheEndArriveIntact) {
  REQUIRE_ROOT();
  Skel s = load(4096);
  ASSERT_TRUE(s);
  Received got;
  RingReader ring(bpf_map__fd(s->maps.ring), got.sink());
  EXPECT_EQ(ring.data_size(), 4096u);
  uint64_t submitted = 0;
  size_t handed = 0;
  for (uint64_t run = 0; run < 300; ++run) {
    ring_test_args a{};
    a.first_seq = run * 3;
    a.count = 3;  // at most 1300 bytes: never full
    a.producer = 1;
    const auto out = produce(s.get(), a);
    EXPECT_EQ(out.failed, 0u);
    submitted += out.submitted;
    handed += ring.consume();
  }
  EXPECT_EQ(got.bad, 0u) << got.first_bad;
  EXPECT_EQ(submitted, 900u);
  EXPECT_EQ(handed, 900u);
  ASSERT_EQ(got.seqs[1].size(), 900u);
  for (uint64_t i = 0; i < 900; ++i) ASSERT_EQ(got.seqs[1][i], i);
  EXPECT_GT(ring.wrapped_records(), 10u) << "records must have wrapped the end";
  EXPECT_EQ(ring.backlog(), 0u);
}

// Discarded records take room in the ring but never reach the sink.
TEST(RingReader, DiscardedRecordsAreSkipped) {
  REQUIRE_ROOT();
  Skel s = load(4096);
  ASSERT_TRUE(s);
  Received got;
  RingReader ring(bpf_map__fd(s->maps.ring), got.sink());
  uint64_t submitted = 0, discarded = 0;
  for (uint64_t run = 0; run < 200; ++run) {
    ring_test_args a{};
    a.first_seq = run * 3;
    a.count = 3;
    a.producer = 2;
    a.discard_every = 3;
    const auto out = produce(s.get(), a);
    submitted += out.submitted;
    discarded += out.discarded;
    ring.consume();
  }
  EXPECT_EQ(got.bad, 0u) << got.first_bad;
  EXPECT_EQ(discarded, 200u);
  ASSERT_EQ(got.seqs[2].size(), submitted);
  EXPECT_EQ(submitted, 400u);
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 600; ++i) {
    if (i % 3 != 0) want.push_back(i);
  }
  EXPECT_EQ(got.seqs[2], want);
}

// A full ring refuses records (counted by the producer); the reader gets exactly the ones
// accepted, and the ring takes records again once read.
TEST(RingReader, FullRingDeliversWhatWasAcceptedAndRecovers) {
  REQUIRE_ROOT();
  Skel s = load(4096);
  ASSERT_TRUE(s);
  Received got;
  RingReader ring(bpf_map__fd(s->maps.ring), got.sink());
  for (uint64_t round = 0; round < 5; ++round) {
    ring_test_args a{};
    a.first_seq = round * 1000;
    a.count = 100;  // about 28 KB of records into 4 KB
    a.producer = 3;
    a.flags = BPF_RB_NO_WAKEUP;
    const auto out = produce(s.get(), a);
    EXPECT_GT(out.failed, 0u) << "the ring never filled";
    EXPECT_GT(out.submitted, 0u);
    const size_t before = got.seqs[3].size();
    EXPECT_EQ(ring.consume(), out.submitted);
    EXPECT_EQ(got.seqs[3].size() - before, out.submitted);
    EXPECT_EQ(ring.backlog(), 0u);
  }
  EXPECT_EQ(got.bad, 0u) << got.first_bad;
  EXPECT_TRUE(strictly_increasing(got.seqs[3]));
}

// Two producers, one per CPU, race each other and the reader: every record they submitted
// arrives intact, each producer's in its order; whatever the ring refused they counted. They
// go on until the reader has read kEnough records (however long a loaded machine takes).
// Returns how many records the ring refused.
uint64_t race_two_producers(uint32_t ring_bytes) {
  constexpr size_t kEnough = 50000;
  Skel s = load(ring_bytes);
  EXPECT_TRUE(s);
  if (!s) return 0;
  Received got;
  std::atomic<size_t> read{0};
  RingReader ring_reader(bpf_map__fd(s->maps.ring), got.sink());
  cpu_set_t allowed;
  EXPECT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  EXPECT_FALSE(cpus.empty());
  if (cpus.empty()) return 0;
  std::atomic<int> running{2};
  uint64_t submitted[2] = {}, failed[2] = {};
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t) {
    producers.emplace_back([&, t] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[t % cpus.size()], &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
      for (uint64_t run = 0; read < kEnough && std::chrono::steady_clock::now() < deadline; ++run) {
        ring_test_args a{};
        a.first_seq = run * 200;
        a.count = 200;
        a.producer = static_cast<uint32_t>(t + 1);
        a.discard_every = t == 0 ? 7 : 0;
        const auto out = produce(s.get(), a);
        submitted[t] += out.submitted;
        failed[t] += out.failed;
        std::this_thread::sleep_for(std::chrono::microseconds(50));  // let the reader in
      }
      --running;
    });
  }
  size_t handed = 0;
  while (running > 0) {
    ring_reader.wait(10);
    handed += ring_reader.consume();
    read = handed;
  }
  for (auto& p : producers) p.join();
  handed += ring_reader.consume();
  EXPECT_EQ(got.bad, 0u) << got.first_bad;
  EXPECT_GE(handed, kEnough) << "the reader did not get to read enough within two minutes";
  EXPECT_EQ(got.seqs[1].size(), submitted[0]);
  EXPECT_EQ(got.seqs[2].size(), submitted[1]);
  EXPECT_EQ(handed, submitted[0] + submitted[1]);
  EXPECT_TRUE(strictly_increasing(got.seqs[1]));
  EXPECT_TRUE(strictly_increasing(got.seqs[2]));
  size_t discarded_seen = 0;
  for (uint64_t seq : got.seqs[1]) discarded_seen += seq % 7 == 0;
  EXPECT_EQ(discarded_seen, 0u) << "discarded records were handed over";
  const std::string ring = std::to_string(ring_bytes >> 10) + "k_";
  ::testing::Test::RecordProperty(ring + "submitted", std::to_string(submitted[0] + submitted[1]));
  ::testing::Test::RecordProperty(ring + "refused", std::to_string(failed[0] + failed[1]));
  ::testing::Test::RecordProperty(ring + "wrapped", std::to_string(ring_reader.wrapped_records()));
  return failed[0] + failed[1];
}

// A ring large enough that the reader mostly keeps up, and one so small (16 KiB, a run of 200
// records is about 56 KB) that the producers hit it full while the reader reads.
TEST(RingReader, ConcurrentProducersOnTwoCpusLoseNothingSubmitted) {
  REQUIRE_ROOT();
  race_two_producers(1 << 20);
  EXPECT_GT(race_two_producers(16 << 10), 0u) << "the small ring never filled";
}

// The kernel wakes the reader for a record submitted without flags only when the reader's
// published position is that record's: so after consume() the next record must wake it, and
// a record submitted with BPF_RB_NO_WAKEUP must not.
TEST(RingReader, WakesUpForTheNextRecordAfterConsuming) {
  REQUIRE_ROOT();
  Skel s = load(4096);
  ASSERT_TRUE(s);
  Received got;
  RingReader ring(bpf_map__fd(s->maps.ring), got.sink());
  probes::Fd ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_TRUE(ep);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(ep.get(), EPOLL_CTL_ADD, ring.event_fd(), &ev), 0);
  epoll_event out{};
  for (uint64_t round = 0; round < 20; ++round) {
    EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0) << "empty ring reported readable";
    ring_test_args a{};
    a.first_seq = round * 2;
    a.count = 2;
    a.producer = 1;
    produce(s.get(), a);
    ASSERT_EQ(epoll_wait(ep.get(), &out, 1, 10000), 1) << "no wakeup in round " << round;
    EXPECT_EQ(ring.consume(), 2u);
  }
  // Level-triggered: a wait after consume() finds the ring empty and forgets the last wakeup.
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0);
  ring_test_args quiet{};
  quiet.first_seq = 100;
  quiet.count = 2;
  quiet.producer = 1;
  quiet.flags = BPF_RB_NO_WAKEUP;
  produce(s.get(), quiet);
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 100), 0) << "woken despite BPF_RB_NO_WAKEUP";
  EXPECT_EQ(ring.consume(), 2u) << "the records are there all the same";
  EXPECT_EQ(got.seqs[1].size(), 42u);
  EXPECT_EQ(got.bad, 0u) << got.first_bad;
}

// The point of the reader: its mappings hold the data area once, libbpf's twice.
TEST(RingReader, MapsTheDataAreaOnce) {
  REQUIRE_ROOT();
  constexpr long kRingKb = 1024;
  Skel s = load(kRingKb << 10);
  ASSERT_TRUE(s);
  Received got;
  const long before = rss_kb();
  auto ours = std::make_unique<RingReader>(bpf_map__fd(s->maps.ring), got.sink());
  const long with_ours = rss_kb();
  ours.reset();
  const long after_ours = rss_kb();
  std::unique_ptr<ring_buffer, decltype(&ring_buffer__free)> libbpf(
      ring_buffer__new(
          bpf_map__fd(s->maps.ring), [](void*, void*, size_t) { return 0; }, nullptr, nullptr),
      &ring_buffer__free);
  ASSERT_TRUE(libbpf);
  const long with_libbpf = rss_kb();
  EXPECT_GE(with_ours - before, kRingKb);
  EXPECT_LT(with_ours - before, kRingKb * 3 / 2);
  EXPECT_GE(with_libbpf - after_ours, 2 * kRingKb) << "libbpf maps it twice";
}

TEST(RingReader, RefusesAMapThatIsNoRing) {
  REQUIRE_ROOT();
  probes::Fd array(bpf_map_create(BPF_MAP_TYPE_ARRAY, "not_a_ring", 4, 8, 1, nullptr));
  ASSERT_TRUE(array);
  EXPECT_THROW(RingReader(array.get(), [](std::span<const std::byte>) {}), probes::ProbeError);
}

}  // namespace
}  // namespace tailcause::testing
