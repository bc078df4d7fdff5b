// SPDX-License-Identifier: Apache-2.0
// A small shared library exporting symbols shaped like those the shipped uprobe recipes name
// (llama.cpp, a CUDA sync call, a FAISS-like recursive search), doing real work, for
// tests/bpf/test_recipes.cpp. C linkage, so the recipe names the plain symbol.
#include <time.h>

#include <cstdint>

namespace {
uint64_t spin(uint64_t iterations) {
  volatile uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}
void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
}  // namespace

extern "C" {

// Arithmetic only: on CPU.
__attribute__((visibility("default"), noinline)) uint64_t llama_tokenize(uint64_t iterations) {
  return spin(iterations);
}

// Like cudaStreamSynchronize: the caller waits for "the GPU" (a sleep of `ms`).
__attribute__((visibility("default"), noinline)) int cuStreamSynchronize(void* ms) {
  sleep_ms(reinterpret_cast<intptr_t>(ms));
  return 0;
}

// Arithmetic, a plain sleep, then a GPU sync: on_cpu, sleep and gpu components.
__attribute__((visibility("default"), noinline)) uint64_t llama_decode(uint64_t iterations,
                                                                       long sleep, long gpu) {
  const uint64_t r = spin(iterations);
  sleep_ms(sleep);
  cuStreamSynchronize(reinterpret_cast<void*>(static_cast<intptr_t>(gpu)));
  return r;
}

// Recursive: one span per outermost call, whatever the depth.
__attribute__((visibility("default"), noinline)) uint64_t faiss_search(int depth,
                                                                       uint64_t iterations) {
  const uint64_t r = spin(iterations);
  return depth > 0 ? r ^ faiss_search(depth - 1, iterations) : r;
}

// Named by a recipe whose library glob matches no file: found by the symbol it defines.
__attribute__((visibility("default"), noinline)) uint64_t unlisted_work(uint64_t iterations) {
  return spin(iterations);
}
}
