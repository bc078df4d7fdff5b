// SPDX-License-Identifier: Apache-2.0
#include "core/trace/trace_ids.h"

namespace tailcause::core {
namespace {

// SplitMix64: a fast, well-mixed 64-bit hash step (ids must look random, not be secret).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hash_text(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then mixed
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return mix(h);
}

// 16 lower-case hex digits at `out` (fmt would do, at several times the cost on the record
// path: this runs for every record of a request without an agent trace id).
void write_hex(char* out, uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 0xf];
}

}  // namespace

std::string derive_trace_id(uint32_t pid, uint64_t request_id, uint64_t salt) {
  uint64_t hi = mix(salt ^ mix(pid));
  uint64_t lo = mix(hi ^ request_id);
  if (hi == 0 && lo == 0) lo = 1;
  char out[32];
  write_hex(out, hi);
  write_hex(out + 16, lo);
  return std::string(out, sizeof out);
}

std::string derive_span_id(const std::string& trace_id, uint64_t what, uint32_t tid) {
  uint64_t v = mix(hash_text(trace_id) ^ mix(what) ^ (static_cast<uint64_t>(tid) << 1));
  if (v == 0) v = 1;
  char out[16];
  write_hex(out, v);
  return std::string(out, sizeof out);
}

}  // namespace tailcause::core
