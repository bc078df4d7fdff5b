// SPDX-License-Identifier: Apache-2.0
// Cost of one SDK probe call, next to an empty (not inlined) function call.
//
// Untraced (the normal case) a probe is a load of its semaphore and a not-taken branch; the
// benchmark label says "untraced" or "traced" from the semaphores at the time it ran. To
// measure the traced cost, attach bpftrace to this binary and to libtailcause_sdk.so and run
// with --wait-for-tracer=SECONDS (sdk/README.md has the script). One call per iteration, so
// the Time column is ns per call; BM_RequestWithStage fires 4 probes per iteration.
#include <tailcause/sdk.hpp>
#include <tailcause/sdk_lib.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// The baseline: a call the compiler must make, with two arguments, that does nothing.
__attribute__((noinline)) void empty_call(std::uint64_t a, std::uint64_t b) {
  asm volatile("" ::"r"(a), "r"(b));
}

// All probes of this binary (inlined from sdk.h) traced?
bool binary_traced() {
  return tailcause_request_begin_semaphore && tailcause_request_end_semaphore &&
         tailcause_stage_begin_semaphore && tailcause_stage_end_semaphore &&
         tailcause_token_semaphore && tailcause_cache_lookup_semaphore;
}

void label(benchmark::State& state, bool traced) { state.SetLabel(traced ? "traced" : "untraced"); }

void BM_EmptyFunctionCall(benchmark::State& state) {
  std::uint64_t i = 0;
  for (auto _ : state) empty_call(42, i++);
  label(state, false);
}
BENCHMARK(BM_EmptyFunctionCall);

// ---- probes inlined from sdk.h into this binary ----------------------------------------

void BM_Token(benchmark::State& state) {
  std::uint64_t i = 0;
  for (auto _ : state) tailcause_token(42, i++);
  label(state, tailcause_token_semaphore != 0);
}
BENCHMARK(BM_Token);

void BM_RequestBegin(benchmark::State& state) {
  const std::string tenant = "tenant-a", agent = "agent", trace = tailcause::new_trace_id();
  std::uint64_t i = 0;
  for (auto _ : state) tailcause_request_begin(i++, tenant.c_str(), agent.c_str(), trace.c_str());
  label(state, tailcause_request_begin_semaphore != 0);
}
BENCHMARK(BM_RequestBegin);

void BM_CacheLookup(benchmark::State& state) {
  std::uint64_t i = 0;
  for (auto _ : state) {
    tailcause::cache_lookup(42, "vectors", tailcause::CacheResult::hit, std::chrono::nanoseconds(i),
                            i * 31);
    ++i;
  }
  label(state, tailcause_cache_lookup_semaphore != 0);
}
BENCHMARK(BM_CacheLookup);

// The RAII types: a request with one stage is 4 probes and two small strings per iteration.
void BM_RequestWithStage(benchmark::State& state) {
  std::uint64_t i = 0;
  for (auto _ : state) {
    tailcause::Request request(++i, "tenant-a", "agent");
    tailcause::Stage stage(request, tailcause::StageKind::generation);
  }
  label(state, binary_traced());
}
BENCHMARK(BM_RequestWithStage);

// ---- the same probes through libtailcause_sdk.so (what FFI / Python users call) ----------

bool library_traced(unsigned bit) { return tailcause_sdk_enabled_mask() >> bit & 1; }

void BM_LibraryToken(benchmark::State& state) {
  std::uint64_t i = 0;
  for (auto _ : state) tailcause_sdk_token(42, i++);
  label(state, library_traced(TAILCAUSE_SDK_PROBE_TOKEN));
}
BENCHMARK(BM_LibraryToken);

void BM_LibraryRequestBegin(benchmark::State& state) {
  const std::string tenant = "tenant-a", agent = "agent", trace = tailcause::new_trace_id();
  std::uint64_t i = 0;
  for (auto _ : state)
    tailcause_sdk_request_begin(i++, tenant.c_str(), agent.c_str(), trace.c_str());
  label(state, library_traced(TAILCAUSE_SDK_PROBE_REQUEST_BEGIN));
}
BENCHMARK(BM_LibraryRequestBegin);

// --wait-for-tracer=SECONDS: wait until bpftrace has set the semaphores of this binary and of
// the library, so that every benchmark runs traced; fail if it does not happen in time.
bool wait_for_tracer(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (binary_traced() && library_traced(TAILCAUSE_SDK_PROBE_TOKEN) &&
        library_traced(TAILCAUSE_SDK_PROBE_REQUEST_BEGIN))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  double wait_seconds = -1;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--wait-for-tracer=", 18) == 0)
      wait_seconds = std::atof(argv[i] + 18);
    else
      args.push_back(argv[i]);
  }
  if (wait_seconds >= 0) {
    if (!wait_for_tracer(wait_seconds)) {
      std::fprintf(stderr,
                   "no tracer attached to the tailcause probes of this binary "
                   "and libtailcause_sdk.so within %.0f s\n",
                   wait_seconds);
      return 1;
    }
    std::fprintf(stderr, "tracer attached: measuring the traced cost\n");
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
