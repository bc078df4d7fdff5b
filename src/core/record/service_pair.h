// SPDX-License-Identifier: Apache-2.0
// Service pairs: the bounded labels a TCP connection is reported under. A connection is
// "local <-> remote" with the client's ephemeral port replaced by "*", so all connections
// from clients of one service to it share a pair:
//   server side (passive):  local="127.0.0.1:8080"  remote="127.0.0.1:*"
//   client side (active):   local="127.0.0.1:*"     remote="127.0.0.1:8080"
// IPv6 addresses are bracketed ("[::1]:8080"); v4-mapped IPv6 ("::ffff:10.0.0.1") prints as
// IPv4, since a dual-stack socket talking to an IPv4 peer is an IPv4 connection.
// Pure: no I/O.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace tailcause::core {

enum class AddressFamily { IPv4, IPv6 };

// Who opened the connection: this host (connect(), the client) or the peer (accept()).
enum class TcpDirection { Active, Passive };

struct IpAddress {
  AddressFamily family = AddressFamily::IPv4;
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 in the first 4 bytes
};

// "10.0.0.1", "::1", "2001:db8::1" (RFC 5952 form); v4-mapped IPv6 as IPv4.
std::string format_address(const IpAddress& address);

// "10.0.0.1:80", "[::1]:80"; "*" for the port when it is absent.
std::string format_endpoint(const IpAddress& address, std::optional<uint16_t> port);

struct ServicePair {
  std::string local;
  std::string remote;
  auto operator<=>(const ServicePair&) const = default;
};

// The pair for a connection between local and remote endpoints; the port on the client's
// side (local when active, remote when passive) becomes "*".
ServicePair service_pair(TcpDirection direction, const IpAddress& local_address,
                         uint16_t local_port, const IpAddress& remote_address,
                         uint16_t remote_port);

}  // namespace tailcause::core
