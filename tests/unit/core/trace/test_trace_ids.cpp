// SPDX-License-Identifier: Apache-2.0
// Derived trace and span ids: well-formed, stable for one request within a daemon run (so its
// stages and the request agree), different across requests, processes and daemon runs.
#include <gtest/gtest.h>

#include <set>

#include "core/trace/trace_ids.h"

using namespace tailcause::core;

namespace {
bool lower_hex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}
}  // namespace

TEST(TraceIds, DerivedTraceIdsAreStablePerRequestAndDistinctAcrossRequests) {
  const std::string a = derive_trace_id(42, 7, 0x1234);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_TRUE(lower_hex(a)) << a;
  EXPECT_EQ(derive_trace_id(42, 7, 0x1234), a);
  EXPECT_NE(derive_trace_id(42, 8, 0x1234), a);
  EXPECT_NE(derive_trace_id(43, 7, 0x1234), a);
  EXPECT_NE(derive_trace_id(42, 7, 0x1235), a) << "another daemon run";
  std::set<std::string> seen;
  for (uint64_t r = 0; r < 10000; r++) seen.insert(derive_trace_id(1, r, 99));
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_NE(derive_trace_id(0, 0, 0), std::string(32, '0'));
}

TEST(TraceIds, SpanIdsAreSixteenHexDigitsPerSpan) {
  const std::string t = derive_trace_id(42, 7, 1);
  const std::string request = derive_span_id(t, 0, 0);
  EXPECT_EQ(request.size(), 16u);
  EXPECT_TRUE(lower_hex(request));
  EXPECT_EQ(derive_span_id(t, 0, 0), request);
  EXPECT_NE(derive_span_id(t, 1000, 42), request);
  EXPECT_NE(derive_span_id(t, 1000, 42), derive_span_id(t, 1000, 43)) << "same start, other thread";
  EXPECT_NE(derive_span_id(derive_trace_id(42, 8, 1), 0, 0), request);
}
