// SPDX-License-Identifier: Apache-2.0
// Service-pair labels: ephemeral ports folded to "*", IPv6 bracketed, v4-mapped as IPv4.
#include "core/record/service_pair.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tailcause::core {
namespace {

IpAddress v4(const char* text) {
  IpAddress a;
  a.family = AddressFamily::IPv4;
  if (inet_pton(AF_INET, text, a.bytes.data()) != 1) throw std::invalid_argument(text);
  return a;
}

IpAddress v6(const char* text) {
  IpAddress a;
  a.family = AddressFamily::IPv6;
  if (inet_pton(AF_INET6, text, a.bytes.data()) != 1) throw std::invalid_argument(text);
  return a;
}

TEST(ServicePair, ServerSideKeepsItsPortAndStarsTheClients) {
  const ServicePair p =
      service_pair(TcpDirection::Passive, v4("127.0.0.1"), 8080, v4("127.0.0.1"), 51234);
  EXPECT_EQ(p.local, "127.0.0.1:8080");
  EXPECT_EQ(p.remote, "127.0.0.1:*");
}

TEST(ServicePair, ClientSideStarsItsOwnPort) {
  const ServicePair p =
      service_pair(TcpDirection::Active, v4("127.0.0.1"), 51234, v4("127.0.0.1"), 8080);
  EXPECT_EQ(p.local, "127.0.0.1:*");
  EXPECT_EQ(p.remote, "127.0.0.1:8080");
}

TEST(ServicePair, ConnectionsFromManyEphemeralPortsShareOnePair) {
  const ServicePair first =
      service_pair(TcpDirection::Active, v4("10.0.0.7"), 40001, v4("10.0.0.9"), 443);
  const ServicePair second =
      service_pair(TcpDirection::Active, v4("10.0.0.7"), 61999, v4("10.0.0.9"), 443);
  EXPECT_EQ(first, second);
  const ServicePair other_service =
      service_pair(TcpDirection::Active, v4("10.0.0.7"), 40001, v4("10.0.0.9"), 8443);
  EXPECT_NE(first, other_service);
}

TEST(ServicePair, BothSidesOfOneConnectionMirrorEachOther) {
  const ServicePair client =
      service_pair(TcpDirection::Active, v4("192.168.1.2"), 45000, v4("192.168.1.3"), 5432);
  const ServicePair server =
      service_pair(TcpDirection::Passive, v4("192.168.1.3"), 5432, v4("192.168.1.2"), 45000);
  EXPECT_EQ(client.local, "192.168.1.2:*");
  EXPECT_EQ(client.remote, server.local);
  EXPECT_EQ(server.remote, "192.168.1.2:*");
}

TEST(ServicePair, Ipv6IsBracketedAndCompressed) {
  EXPECT_EQ(service_pair(TcpDirection::Passive, v6("::1"), 8080, v6("::1"), 50000).local,
            "[::1]:8080");
  EXPECT_EQ(service_pair(TcpDirection::Passive, v6("::1"), 8080, v6("::1"), 50000).remote,
            "[::1]:*");
  const ServicePair p = service_pair(TcpDirection::Active, v6("fe80:0:0:0:0:0:0:1"), 50000,
                                     v6("2001:0db8:0000:0000:0000:ff00:0042:8329"), 443);
  EXPECT_EQ(p.local, "[fe80::1]:*");
  EXPECT_EQ(p.remote, "[2001:db8::ff00:42:8329]:443");
}

TEST(ServicePair, V4MappedIpv6PrintsAsIpv4) {
  const ServicePair p = service_pair(TcpDirection::Passive, v6("::ffff:127.0.0.1"), 9436,
                                     v6("::ffff:10.1.2.3"), 33333);
  EXPECT_EQ(p.local, "127.0.0.1:9436");
  EXPECT_EQ(p.remote, "10.1.2.3:*");
  EXPECT_EQ(format_address(v6("::ffff:192.0.2.128")), "192.0.2.128");
}

TEST(ServicePair, OnlyTheMappedPrefixCountsAsIpv4) {
  // ::ffff:0:a.b.c.d (SIIT translated) is not v4-mapped: it stays IPv6.
  EXPECT_EQ(format_address(v6("::ffff:0:c000:280")), "::ffff:0:c000:280");
  EXPECT_EQ(format_endpoint(v6("::ffff:0:c000:280"), 80), "[::ffff:0:c000:280]:80");
  EXPECT_EQ(format_endpoint(v6("::1"), 1), "[::1]:1");
  EXPECT_EQ(format_endpoint(v6("1::ffff:c000:280"), 1), "[1::ffff:c000:280]:1");
}

TEST(ServicePair, PortsAndAddressExtremes) {
  EXPECT_EQ(format_endpoint(v4("0.0.0.0"), 0), "0.0.0.0:0");
  EXPECT_EQ(format_endpoint(v4("255.255.255.255"), 65535), "255.255.255.255:65535");
  EXPECT_EQ(format_endpoint(v4("10.0.0.1"), std::nullopt), "10.0.0.1:*");
  EXPECT_EQ(format_endpoint(v6("::"), std::nullopt), "[::]:*");
}

TEST(ServicePair, OrderingIsByLocalThenRemote) {
  const ServicePair a{"127.0.0.1:*", "127.0.0.1:80"};
  const ServicePair b{"127.0.0.1:*", "127.0.0.1:81"};
  const ServicePair c{"127.0.0.1:80", "127.0.0.1:*"};
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
}

}  // namespace
}  // namespace tailcause::core
