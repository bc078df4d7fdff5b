// SPDX-License-Identifier: Apache-2.0
// Peers read back into addresses, and the device the kernel routes them through (RTM_GETROUTE):
// lo for loopback and for the host's own addresses, the route's device for others, nothing for
// an unroutable one; cached. The last test builds its own network namespace with a veth pair
// and a gateway route (root only, skipped otherwise); no test sends a packet.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/host/peer_address.h"
#include "probes/route_lookup.h"

namespace tailcause {
namespace {

using core::parse_peer_address;

TEST(PeerAddress, ReadsBackWhatTheDecoderPrints) {
  auto v4 = parse_peer_address("10.0.0.7:443");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->family, AF_INET);
  EXPECT_EQ(v4->length(), 4u);
  EXPECT_EQ(v4->port, 443);
  EXPECT_EQ(v4->bytes[0], 10);
  EXPECT_EQ(v4->bytes[3], 7);
  auto v6 = parse_peer_address("[fd00::2]:8080");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->family, AF_INET6);
  EXPECT_EQ(v6->length(), 16u);
  EXPECT_EQ(v6->port, 8080);
  EXPECT_EQ(v6->bytes[0], 0xfd);
  EXPECT_EQ(v6->bytes[15], 2);
  EXPECT_TRUE(parse_peer_address("[::ffff:10.0.0.1]:1"));
  for (const char* bad : {"", ":", "10.0.0.7", "10.0.0.7:", "10.0.0.7:65536", "10.0.0.7:-1",
                          "10.0.0.7:80x", "10.0.0.256:80", "host:80", "[fd00::2]", "[fd00::2:80",
                          "fd00::2:80", "[]:80", "[10.0.0.1]:80"}) {
    EXPECT_FALSE(parse_peer_address(bad)) << bad;
  }
}

TEST(RouteLookup, LoopbackAndTheHostsOwnAddressesGoThroughLo) {
  probes::RouteLookup routes;
  EXPECT_EQ(routes.device_for("127.0.0.1:8080", 1), "lo");
  EXPECT_EQ(routes.device_for("127.3.4.5:80", 1), "lo");
  // Every address of this host's interfaces, whatever its range: local traffic stays on lo.
  ifaddrs* all = nullptr;
  ASSERT_EQ(getifaddrs(&all), 0);
  int checked = 0;
  for (ifaddrs* a = all; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    EXPECT_EQ(routes.device_for(std::string(text) + ":9", 1), "lo")
        << text << " on " << a->ifa_name;
    ++checked;
  }
  freeifaddrs(all);
  EXPECT_GE(checked, 1);
  EXPECT_EQ(routes.device_for("not a peer", 1), std::nullopt);
}

TEST(RouteLookup, AnswersAreCachedForAWhile) {
  probes::RouteLookup routes;
  const uint64_t t0 = 1'000'000'000;
  EXPECT_EQ(routes.device_for("127.0.0.1:1", t0), "lo");
  EXPECT_EQ(routes.device_for("127.0.0.1:1", t0 + 1), "lo");
  EXPECT_EQ(routes.lookups(), 1u);
  EXPECT_EQ(routes.device_for("127.0.0.1:1", t0 + probes::RouteLookup::kCacheNs), "lo");
  EXPECT_EQ(routes.lookups(), 2u);
}

// In a network namespace of its own (a child process): a veth pair 10.213.0.1/24 <-> peer, a
// route to 10.214.0.0/24 through 10.213.0.2, no default route.
TEST(RouteLookup, OtherPeersGoThroughTheirRoutesDevice) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace with a veth pair)";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(77);
    if (std::system("ip link set lo up && ip link add tcv0 type veth peer name tcv1 && "
                    "ip addr add 10.213.0.1/24 dev tcv0 && ip link set tcv0 up && "
                    "ip link set tcv1 up && ip route add 10.214.0.0/24 via 10.213.0.2 dev tcv0") !=
        0)
      _exit(77);
    probes::RouteLookup routes;
    int failed = 0;
    failed |= routes.device_for("10.213.0.2:80", 1) != "tcv0";          // on the link
    failed |= (routes.device_for("10.214.0.9:443", 1) != "tcv0") << 1;  // through the gateway
    failed |= (routes.device_for("10.213.0.1:80", 1) != "lo") << 2;     // its own address
    failed |= (routes.device_for("198.51.100.1:80", 1) != std::nullopt) << 3;  // no route
    _exit(failed);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace or veth here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks (bits: link, gateway, own, none)";
}

}  // namespace
}  // namespace tailcause
