// SPDX-License-Identifier: Apache-2.0
#include "core/host/peer_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <string>

namespace tailcause::core {

std::optional<PeerAddress> parse_peer_address(std::string_view peer) {
  PeerAddress out;
  std::string_view host, port;
  if (peer.starts_with('[')) {
    const size_t close = peer.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = peer.substr(1, close - 1);
    port = peer.substr(close + 2);
    out.family = AF_INET6;
  } else {
    const size_t colon = peer.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = peer.substr(0, colon);
    port = peer.substr(colon + 1);
    out.family = AF_INET;
  }
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN || port.empty()) return std::nullopt;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) return std::nullopt;
  out.port = static_cast<uint16_t>(value);
  const std::string text(host);  // inet_pton needs a terminated string
  if (inet_pton(out.family, text.c_str(), out.bytes.data()) != 1) return std::nullopt;
  return out;
}

}  // namespace tailcause::core
