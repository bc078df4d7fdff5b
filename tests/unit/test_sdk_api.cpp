// SPDX-License-Identifier: Apache-2.0
// The C++ SDK (sdk.hpp) without root: its probes are observed by a small ptrace-based USDT
// tracer (tests/sdk/usdt_ptrace.h) on a forked child, which plants traps on this binary's
// probe sites and sets the semaphores the way the kernel does for a uprobe tracer. That shows
// the RAII order of begin/end events, that moves never end twice, the exact argument values,
// and that nothing fires while the semaphores are 0.
#if defined(__x86_64__)  // the ptrace tracer decodes x86-64 registers and int3 traps
#include "../sdk/usdt_ptrace.h"
#endif

#include <tailcause/sdk.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace {

using namespace std::chrono_literals;
using tailcause::CacheResult;
using tailcause::Request;
using tailcause::Stage;
using tailcause::StageKind;

#if defined(__x86_64__)

// An event as "probe arg arg ..." with strings and signed arguments as the contract says.
std::string describe(const usdt_ptrace::Event& e) {
  static const std::map<std::string, std::set<std::size_t>> strings = {
      {"request_begin", {1, 2, 3}}, {"stage_begin", {2}}, {"cache_lookup", {1}}};
  static const std::map<std::string, std::set<std::size_t>> signed_args = {
      {"request_end", {1}}, {"stage_begin", {1}}, {"stage_end", {1}}, {"cache_lookup", {2}}};
  std::string out = e.name;
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    out += ' ';
    if (strings.count(e.name) && strings.at(e.name).count(i))
      out += e.args[i] == 0 ? "null" : e.strings[i].value_or("<unreadable>");
    else if (signed_args.count(e.name) && signed_args.at(e.name).count(i))
      out += std::to_string(static_cast<std::int64_t>(e.args[i]));
    else
      out += std::to_string(e.args[i]);
  }
  return out;
}

class SdkProbes : public ::testing::Test {
 protected:
  // A kernel uprobe tracer already on this binary (a tailcause daemon of another test run, a
  // bpftrace) holds the semaphores up and owns the probe sites' breakpoints, so the ptrace
  // tracer below would read its traps, not ours: such a run says so instead of failing.
  void SetUp() override {
    for (const auto& site : sites()) {
      if (site.semaphore == 0) continue;
      const auto count = *reinterpret_cast<const volatile unsigned short*>(site.semaphore);
      if (count != 0) {
        GTEST_SKIP() << "another USDT tracer is attached to this binary (semaphore of " << site.name
                     << " is " << count << "); stop it to run these tests";
      }
    }
  }

  static const std::vector<usdt_ptrace::Site>& sites() {
    static const auto all = usdt_ptrace::sites_in_self("tailcause");
    return all;
  }

  // The events `body` fires in a traced child, described; semaphores set unless told not to.
  static std::vector<std::string> trace(const std::function<void()>& body, bool enabled = true) {
    usdt_ptrace::Tracer tracer(sites());
    std::vector<std::string> out;
    for (const auto& event : tracer.run(body, enabled)) out.push_back(describe(event));
    return out;
  }
};

TEST_F(SdkProbes, EveryProbeOfTheContractIsInTheBinaryWithItsSemaphore) {
  const std::map<std::string, std::size_t> arity = {
      {"request_begin", 4},  {"request_end", 2},    {"stage_begin", 3},   {"stage_end", 2},
      {"context_attach", 1}, {"context_detach", 1}, {"cache_lookup", 5},  {"token", 2},
      {"layer_begin", 2},    {"layer_end", 2},      {"output_quality", 2}};
  std::set<std::string> seen;
  for (const auto& site : sites()) {
    ASSERT_TRUE(arity.count(site.name)) << "unexpected probe " << site.name;
    EXPECT_EQ(site.args.size(), arity.at(site.name)) << site.name;
    EXPECT_NE(site.semaphore, 0u) << site.name << " has no semaphore in its note";
    seen.insert(site.name);
  }
  EXPECT_EQ(seen.size(), arity.size());
}

// The probe site is the 5-byte nop (0f 1f 44 00 00) on x86-64: from Linux 6.18 the kernel
// turns a uprobe there into a call and a syscall after its first hit, about half the cost of
// the int3 trap a 1-byte nop keeps forever (docs/recipes.md has the figures).
TEST_F(SdkProbes, EveryProbeSiteIsTheFiveByteNopTheKernelOptimizes) {
  for (const auto& site : sites()) {
    EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(site.pc), usdt_ptrace::kNop5,
                          sizeof usdt_ptrace::kNop5),
              0)
        << site.name << " is not the 5-byte nop";
  }
}

void full_request() {
  Request request(42, "tenant-a", "agent-x", "0AF7651916CD43DD8448EB211C80319C");
  { Stage prompt(request, StageKind::prompt); }
  {
    Stage rerank(request, "rerank");
    Stage tool(request, StageKind::tool);
  }
}

TEST_F(SdkProbes, RequestAndStagesBeginAndEndInScopeOrder) {
  const std::vector<std::string> expected = {
      "request_begin 42 tenant-a agent-x 0af7651916cd43dd8448eb211c80319c",
      "stage_begin 42 0 prompt",
      "stage_end 42 0",
      "stage_begin 42 6 rerank",
      "stage_begin 42 4 tool",
      "stage_end 42 4",
      "stage_end 42 6",
      "request_end 42 0",
  };
  EXPECT_EQ(trace(full_request), expected);
}

// A traceparent is passed through request_begin as it is; a generation stage names its model.
TEST_F(SdkProbes, TraceparentAndModelReachTheProbes) {
  const auto events = trace([] {
    Request request(43, "t", "a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    Stage gen = Stage::generation(request, "gpt-4o", "openai");
  });
  EXPECT_EQ(events,
            (std::vector<std::string>{
                "request_begin 43 t a 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "stage_begin 43 3 openai:gpt-4o", "stage_end 43 3", "request_end 43 0"}));
}

TEST_F(SdkProbes, NothingFiresWhileTheSemaphoresAreZero) {
  EXPECT_EQ(trace(full_request, /*enabled=*/false), std::vector<std::string>{});
  EXPECT_EQ(trace(
                [] {
                  tailcause::token(1, 2);
                  tailcause::cache_lookup(1, "c", CacheResult::hit, 5ns, 6);
                  tailcause::LayerScope layer(1, 2);
                },
                /*enabled=*/false),
            std::vector<std::string>{});
}

TEST_F(SdkProbes, ExplicitEndFiresOnceWithItsStatus) {
  const auto events = trace([] {
    Request request(7, "t", "a");
    request.end(-5);
    request.end(9);  // ignored: already ended
  });
  EXPECT_EQ(events, (std::vector<std::string>{"request_begin 7 t a null", "request_end 7 -5"}));
}

TEST_F(SdkProbes, MovingARequestOrStageNeverEndsItTwice) {
  const auto events = trace([] {
    std::vector<Request> many;
    Request first(1, "t", "a");
    Request moved(std::move(first));
    many.push_back(std::move(moved));
    many.reserve(16);  // relocates by moving: still one end
    Stage stage(many[0], StageKind::generation);
    Stage stage_moved(std::move(stage));
  });
  EXPECT_EQ(events,
            (std::vector<std::string>{"request_begin 1 t a null", "stage_begin 1 3 generation",
                                      "stage_end 1 3", "request_end 1 0"}));
}

TEST_F(SdkProbes, MoveAssignmentEndsTheRequestItReplaces) {
  const auto events = trace([] {
    Request target(1, "t", "a");
    Request source(2, "u", "b");
    target = std::move(source);
    Stage a(target, StageKind::embedding);
    Stage b(target, StageKind::retrieval);
    a = std::move(b);  // ends embedding, keeps retrieval
  });
  EXPECT_EQ(events, (std::vector<std::string>{
                        "request_begin 1 t a null", "request_begin 2 u b null", "request_end 1 0",
                        "stage_begin 2 1 embedding", "stage_begin 2 2 retrieval", "stage_end 2 1",
                        "stage_end 2 2", "request_end 2 0"}));
}

TEST_F(SdkProbes, EventsCarryTheirArguments) {
  const auto events = trace([] {
    Request request(9, "t", "a");
    {
      tailcause::ContextScope context(request);
      tailcause::cache_lookup(request, "vectors", CacheResult::stale, 1500ns, 0xabc);
      tailcause::cache_lookup(request, std::string_view("kv-cache!", 8), CacheResult::miss, -3ns,
                              1);
      tailcause::token(request, 0);
      tailcause::token(request.id(), 1);
      tailcause::LayerScope layer(3, 16);
    }
    tailcause::output_quality(request, 0.693147);
    tailcause::output_quality(request, 2.5);
    request.end(0);
  });
  EXPECT_EQ(
      events,
      (std::vector<std::string>{
          "request_begin 9 t a null", "context_attach 9", "cache_lookup 9 vectors 2 1500 2748",
          "cache_lookup 9 kv-cache 1 0 1",  // a string_view is copied with its NUL
          "token 9 0", "token 9 1", "layer_begin 3 16", "layer_end 3 16", "context_detach 9",
          "output_quality 9 693147", "output_quality 9 2500000", "request_end 9 0"}));
}

TEST_F(SdkProbes, RejectedInputFiresNothing) {
  const auto events = trace([] {
    const char with_nul[] = {'t', '\0', 'x'};
    for (auto make : std::initializer_list<std::function<void()>>{
             [] { Request r(1, "t", "a", "0af7651916cd43dd8448eb211c80319"); },
             [] { Request r(1, "t", "a", "0af7651916cd43dd8448eb211c80319g"); },
             [] { Request r(1, "t", "a", "00000000000000000000000000000000"); },
             [&] { Request r(1, std::string_view(with_nul, 3), "a"); },
             [&] { Request r(1, "t", std::string_view(with_nul, 3)); },
             [] { tailcause::output_quality(1, -0.5); },
             [] { tailcause::output_quality(1, std::nan("")); },
             [&] {
               tailcause::cache_lookup(1, std::string_view(with_nul, 3), CacheResult::hit, 0ns, 0);
             },
         }) {
      try {
        make();
        _exit(10);  // not rejected
      } catch (const std::invalid_argument&) {
      }
    }
  });
  EXPECT_EQ(events, std::vector<std::string>{});
}

#endif  // __x86_64__

// ---- no tracer needed -------------------------------------------------------------------

TEST(SdkApi, TypesAreMoveOnlyAndScopesAreFixed) {
  static_assert(!std::is_copy_constructible_v<Request> && !std::is_copy_assignable_v<Request>);
  static_assert(std::is_nothrow_move_constructible_v<Request>);
  static_assert(std::is_nothrow_move_assignable_v<Request>);
  static_assert(!std::is_copy_constructible_v<Stage> && !std::is_copy_assignable_v<Stage>);
  static_assert(std::is_nothrow_move_constructible_v<Stage>);
  static_assert(std::is_nothrow_move_assignable_v<Stage>);
  static_assert(!std::is_copy_constructible_v<tailcause::ContextScope>);
  static_assert(!std::is_move_constructible_v<tailcause::ContextScope>);
  static_assert(!std::is_move_constructible_v<tailcause::LayerScope>);
  static_assert(std::is_same_v<Stage::Kind, StageKind>);
  SUCCEED();
}

TEST(SdkApi, MovedFromObjectsAreInactive) {
  Request a(5, "tenant", "agent", "0af7651916cd43dd8448eb211c80319c");
  Request b(std::move(a));
  EXPECT_FALSE(a.active());
  EXPECT_TRUE(b.active());
  EXPECT_EQ(b.id(), 5u);
  EXPECT_EQ(b.tenant(), "tenant");
  EXPECT_EQ(b.agent(), "agent");
  EXPECT_EQ(b.trace_id(), "0af7651916cd43dd8448eb211c80319c");
  Stage s(b, "custom");
  EXPECT_EQ(s.kind(), StageKind::other);
  EXPECT_EQ(s.name(), "custom");
  EXPECT_EQ(s.request_id(), 5u);
  Stage t(std::move(s));
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(t.active());
  t.end();
  EXPECT_FALSE(t.active());
  b.end(1);
  EXPECT_FALSE(b.active());
}

TEST(SdkApi, TraceparentPerW3C) {
  const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  EXPECT_TRUE(tailcause::valid_traceparent(tp));
  Request r(1, "t", "a", tp);
  EXPECT_EQ(r.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(r.trace_context(), tp);
  r.end();
  auto with = [&](std::size_t pos, const std::string& part) {
    std::string v = tp;
    v.replace(pos, part.size(), part);
    return v;
  };
  for (const std::string& bad :
       {with(0, "01"), with(0, "ff"), with(3, "4BF9"), with(3, std::string(32, '0')),
        with(36, std::string(16, '0')), with(36, "00F0"), with(53, "0g"), with(52, "_"),
        with(2, "_"), tp.substr(0, 54) + "\n"}) {
    EXPECT_FALSE(tailcause::valid_traceparent(bad)) << bad;
    EXPECT_THROW(Request(1, "t", "a", bad), std::invalid_argument) << bad;
  }
  EXPECT_FALSE(tailcause::valid_traceparent(tp + "-00"));  // version 00 is exactly 55
  EXPECT_THROW(Stage::generation(r, ""), std::invalid_argument);
}

TEST(SdkApi, TraceIdsAreRandom128BitLowerHex) {
  std::unordered_set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = tailcause::new_trace_id();
    ASSERT_EQ(id.size(), 32u);
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ASSERT_NE(id, std::string(32, '0'));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 2000u);
  // Every hex digit position varies (a fixed prefix or suffix would be a bug).
  std::vector<std::set<char>> digits(32);
  for (const auto& id : seen)
    for (std::size_t i = 0; i < 32; ++i) digits[i].insert(id[i]);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_GT(digits[i].size(), 8u) << "position " << i;
}

TEST(SdkApi, RequestIdsAreUniqueAndNonZeroAcrossThreads) {
  constexpr int threads = 4, per_thread = 25000;
  std::vector<std::vector<std::uint64_t>> ids(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) ids[t].push_back(tailcause::new_request_id());
    });
  for (auto& w : workers) w.join();
  std::unordered_set<std::uint64_t> all;
  for (const auto& v : ids)
    for (auto id : v) {
      ASSERT_NE(id, 0u);
      all.insert(id);
    }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(threads * per_thread));
  // Auto ids are used when none is given; they spread over the 64 bits.
  Request a("t", "a"), b("t", "a");
  EXPECT_NE(a.id(), b.id());
  EXPECT_TRUE(a.trace_id().empty());
  int high_bits = 0;
  for (auto id : ids[0]) high_bits += (id >> 63) & 1;
  EXPECT_GT(high_bits, per_thread / 4);
  EXPECT_LT(high_bits, per_thread * 3 / 4);
}

TEST(SdkApi, EntropyIsSentInMillionths) {
  EXPECT_EQ(tailcause::entropy_to_micro(0.0), 0u);
  EXPECT_EQ(tailcause::entropy_to_micro(1.25), 1250000u);
  EXPECT_EQ(tailcause::entropy_to_micro(0.0000004), 0u);
  EXPECT_EQ(tailcause::entropy_to_micro(0.0000006), 1u);
  EXPECT_EQ(tailcause::entropy_to_micro(1e300), UINT64_MAX);
  EXPECT_THROW(tailcause::entropy_to_micro(-1e-9), std::invalid_argument);
  EXPECT_THROW(tailcause::entropy_to_micro(INFINITY), std::invalid_argument);
}

TEST(SdkApi, StageNamesMatchTheContract) {
  EXPECT_EQ(tailcause::stage_name(StageKind::prompt), "prompt");
  EXPECT_EQ(tailcause::stage_name(StageKind::response), "response");
  EXPECT_EQ(static_cast<int>(StageKind::other), TAILCAUSE_STAGE_OTHER);
  EXPECT_EQ(static_cast<int>(CacheResult::stale), TAILCAUSE_CACHE_STALE);
  Request r(1, "t", "a");
  EXPECT_THROW(Stage(r, ""), std::invalid_argument);
}

}  // namespace
