// SPDX-License-Identifier: Apache-2.0
// A stage's network peer as the decoder prints it ("10.0.0.7:443", "[fd00::2]:8080") read back
// into an address, for the route lookup that finds the device its traffic leaves through.
// Pure: no I/O.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tailcause::core {

struct PeerAddress {
  int family = 0;                   // AF_INET or AF_INET6
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 in the first 4
  uint16_t port = 0;
  size_t length() const { return family == AF_INET ? 4 : 16; }
};

// nullopt for anything but "A.B.C.D:PORT" or "[IPv6]:PORT".
std::optional<PeerAddress> parse_peer_address(std::string_view peer);

}  // namespace tailcause::core
