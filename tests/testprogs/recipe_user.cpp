// SPDX-License-Identifier: Apache-2.0
// Calls the symbols of librecipe_target.so (tests/testprogs/lib/recipe_target.cpp) as a
// runtime without the SDK would, once told to on stdin (so the test attaches first):
//   recipe_user plain ROUNDS   tokenize + decode + recursive search + unlisted, per round
//   recipe_user sdk ROUNDS     the same inside SDK requests (request id 1000 + round)
#include <tailcause/sdk.h>
#include <unistd.h>

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

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: recipe_user plain|sdk ROUNDS\n");
    return 2;
  }
  const bool sdk = std::strcmp(argv[1], "sdk") == 0;
  const int rounds = std::atoi(argv[2]);
  char go;
  if (read(0, &go, 1) != 1) return 1;
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
