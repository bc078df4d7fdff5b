// SPDX-License-Identifier: Apache-2.0
// Calls the symbols of librecipe_target.so (tests/testprogs/lib/recipe_target.cpp) as a
// runtime without the SDK would, once told to on stdin (so the test attaches first):
//   recipe_user plain ROUNDS   tokenize + decode + recursive search + unlisted, per round
//   recipe_user sdk ROUNDS     the same inside SDK requests (request id 1000 + round)
//   recipe_user escape ROUNDS  per round, a decode left by siglongjmp from a signal handler
//                              (its return is never seen), then a decode that returns;
//                              prints how many were left that way
//   recipe_user loop MS        no wait: short tokenize calls back to back for MS ms, writing
//                              'r' on stdout once the first has run (the test attaches then);
//                              prints the number of calls
#include <tailcause/sdk.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
uint64_t llama_tokenize(uint64_t iterations);
uint64_t llama_decode(uint64_t iterations, long sleep_ms, long gpu_ms);
uint64_t faiss_search(int depth, uint64_t iterations);
uint64_t unlisted_work(uint64_t iterations);
}

namespace {

sigjmp_buf escape_to;
volatile sig_atomic_t inside = 0;

void on_alarm(int) {
  if (inside) siglongjmp(escape_to, 1);
}

int escape(int rounds) {
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  int escaped = 0;
  uint64_t sink = 0;
  for (int i = 0; i < rounds; ++i) {
    if (sigsetjmp(escape_to, 1) == 0) {
      itimerval t{};
      t.it_value.tv_usec = 20'000;  // inside the 500 ms sleep of the decode below
      inside = 1;
      setitimer(ITIMER_REAL, &t, nullptr);
      sink ^= llama_decode(1000, 500, 0);
      inside = 0;
    } else {
      inside = 0;
      ++escaped;
    }
    sink ^= llama_decode(1'000'000, 5, 0);
  }
  std::printf("escaped %d %llu\n", escaped, static_cast<unsigned long long>(sink & 1));
  return 0;
}

int loop(long ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  uint64_t sink = llama_tokenize(200'000);
  long calls = 1;
  if (write(1, "r", 1) != 1) return 1;
  while (std::chrono::steady_clock::now() < end) {
    sink ^= llama_tokenize(200'000);
    ++calls;
  }
  std::printf(" %ld %llu\n", calls, static_cast<unsigned long long>(sink & 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: recipe_user plain|sdk|escape ROUNDS | loop MS\n");
    return 2;
  }
  if (std::strcmp(argv[1], "loop") == 0) return loop(std::atol(argv[2]));
  const bool sdk = std::strcmp(argv[1], "sdk") == 0;
  const int rounds = std::atoi(argv[2]);
  char go;
  if (read(0, &go, 1) != 1) return 1;
  if (std::strcmp(argv[1], "escape") == 0) return escape(rounds);
  uint64_t sink = 0;
  for (int i = 0; i < rounds; ++i) {
    const uint64_t id = 1000 + i;
    if (sdk) tailcause_request_begin(id, "sdk-tenant", "recipe-test", nullptr);
    sink ^= llama_tokenize(20'000'000);
    sink ^= llama_decode(20'000'000, 30, 50);
    sink ^= faiss_search(5, 2'000'000);
    sink ^= unlisted_work(10'000'000);
    if (sdk) tailcause_request_end(id, 0);
  }
  std::printf("%llu\n", static_cast<unsigned long long>(sink & 1));
  return 0;
}
