// SPDX-License-Identifier: Apache-2.0
// The endpoint's admission policy: who is let in, who gives way, and who never does.
#include <gtest/gtest.h>

#include <string>

#include "export/http/connection_table.h"

namespace tailcause::exporter::http {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(ConnectionTable, ANewcomerFromAFullAddressEvictsThatAddressesOldest) {
  ConnectionTable t({.total = 100, .per_address = 3, .reserved = 10});
  for (ConnectionTable::Id id = 1; id <= 3; ++id) {
    ASSERT_TRUE(t.admit(id, "127.0.0.1", id * kSecond).admitted);
  }
  ASSERT_TRUE(t.admit(9, "127.0.0.2", 4 * kSecond).admitted);  // another address: untouched
  const auto a = t.admit(4, "127.0.0.1", 5 * kSecond);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(a.evicted, std::vector<ConnectionTable::Id>{1});
  EXPECT_EQ(t.from("127.0.0.1"), 3u);
  EXPECT_EQ(t.size(), 4u);
}

TEST(ConnectionTable, NeverAnsweredConnectionsGoBeforeAnsweredOnes) {
  ConnectionTable t({.total = 4, .per_address = 4, .reserved = 0});
  ASSERT_TRUE(t.admit(1, "a", 1).admitted);  // the oldest, but it has been answered
  t.answering(1);
  t.idle(1, 2);
  ASSERT_TRUE(t.admit(2, "b", 3).admitted);
  ASSERT_TRUE(t.admit(3, "c", 4).admitted);
  ASSERT_TRUE(t.admit(4, "d", 5).admitted);
  const auto a = t.admit(5, "e", 6);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(a.evicted, std::vector<ConnectionTable::Id>{2});
}

TEST(ConnectionTable, UnansweredConnectionsCannotTakeTheReservedSlots) {
  ConnectionTable t({.total = 10, .per_address = 10, .reserved = 4});
  ASSERT_TRUE(t.admit(100, "scraper", 0).admitted);
  t.answering(100);
  t.idle(100, 1);  // a keep-alive scraper between scrapes
  // Idle sockets from many addresses fill the 6 unreserved slots, then push each other out.
  for (ConnectionTable::Id id = 1; id <= 50; ++id) {
    const auto a = t.admit(id, "10.0.0." + std::to_string(id), static_cast<int64_t>(id) + 10);
    ASSERT_TRUE(a.admitted);
    if (id > 6) {
      EXPECT_EQ(a.evicted, std::vector<ConnectionTable::Id>{id - 6});
    }
  }
  EXPECT_EQ(t.size(), 7u);  // 6 idle, and the scraper, never evicted
}

TEST(ConnectionTable, AConnectionBeingAnsweredIsNeverEvicted) {
  ConnectionTable t({.total = 2, .per_address = 2, .reserved = 0});
  ASSERT_TRUE(t.admit(1, "a", 1).admitted);
  ASSERT_TRUE(t.admit(2, "a", 2).admitted);
  t.answering(1);
  t.answering(2);
  const auto refused = t.admit(3, "b", 3);
  EXPECT_FALSE(refused.admitted);
  EXPECT_TRUE(refused.evicted.empty());
  // A slow reader is evictable again once its answer is being written.
  t.writing(2, 4);
  const auto a = t.admit(4, "b", 5);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(a.evicted, std::vector<ConnectionTable::Id>{2});
}

TEST(ConnectionTable, RemovedConnectionsFreeTheirSlots) {
  ConnectionTable t({.total = 2, .per_address = 1, .reserved = 0});
  ASSERT_TRUE(t.admit(1, "a", 1).admitted);
  ASSERT_TRUE(t.admit(2, "b", 2).admitted);
  t.remove(1);
  const auto a = t.admit(3, "a", 3);
  EXPECT_TRUE(a.admitted);
  EXPECT_TRUE(a.evicted.empty());
}

TEST(ConnectionTable, LimitsAreKeptConsistent) {
  ConnectionTable t({.total = 0, .per_address = 0, .reserved = 5});
  EXPECT_EQ(t.limits().total, 1u);
  EXPECT_EQ(t.limits().per_address, 1u);
  EXPECT_EQ(t.limits().reserved, 0u);
  EXPECT_TRUE(t.admit(1, "a", 1).admitted);
}

}  // namespace
}  // namespace tailcause::exporter::http
