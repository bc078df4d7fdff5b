// SPDX-License-Identifier: Apache-2.0
// Which device a peer's traffic leaves through, asked of the kernel's routing tables over
// rtnetlink (RTM_GETROUTE, what `ip route get ADDR` does; libmnl), so a network verdict names the
// qdisc on that device: "lo" for the host's own addresses, whatever their range, the route's
// device for the rest. Sends no traffic and needs no privilege. Answers are cached for a while:
// it is asked only for glitching stages, and routes rarely change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

struct mnl_socket;

namespace tailcause::probes {

class RouteLookup {
 public:
  static constexpr uint64_t kCacheNs = 10'000'000'000;
  static constexpr size_t kMaxCached = 256;

  // Opens the rtnetlink socket; throws std::runtime_error with the reason when it cannot.
  RouteLookup();
  ~RouteLookup();
  RouteLookup(const RouteLookup&) = delete;
  RouteLookup& operator=(const RouteLookup&) = delete;

  // The device traffic to `peer` ("10.0.0.7:443", "[fd00::2]:8080") goes out through; nullopt
  // when the peer is not an address, there is no route, or the lookup failed.
  std::optional<std::string> device_for(const std::string& peer, uint64_t now_ns);
  uint64_t lookups() const { return lookups_; }  // asked of the kernel (not from the cache)

 private:
  std::optional<std::string> ask_kernel(const std::string& peer);

  mnl_socket* socket_ = nullptr;
  uint32_t port_ = 0;
  uint32_t seq_ = 0;
  uint64_t lookups_ = 0;
  struct Cached {
    std::optional<std::string> device;
    uint64_t at_ns = 0;
  };
  std::map<std::string, Cached> cache_;
};

}  // namespace tailcause::probes
