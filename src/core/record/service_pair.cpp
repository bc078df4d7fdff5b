// SPDX-License-Identifier: Apache-2.0
#include "core/record/service_pair.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>

namespace tailcause::core {
namespace {

// ::ffff:a.b.c.d
bool is_v4_mapped(const std::array<uint8_t, 16>& b) {
  return std::all_of(b.begin(), b.begin() + 10, [](uint8_t x) { return x == 0; }) &&
         b[10] == 0xff && b[11] == 0xff;
}

// The address as it should be shown: v4-mapped IPv6 becomes the IPv4 it carries.
IpAddress canonical(const IpAddress& a) {
  if (a.family != AddressFamily::IPv6 || !is_v4_mapped(a.bytes)) return a;
  IpAddress v4;
  v4.family = AddressFamily::IPv4;
  std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
  return v4;
}

}  // namespace

std::string format_address(const IpAddress& address) {
  const IpAddress a = canonical(address);
  char buf[INET6_ADDRSTRLEN] = {};
  const int af = a.family == AddressFamily::IPv4 ? AF_INET : AF_INET6;
  // inet_ntop only fails for an unknown family or a short buffer, neither possible here.
  inet_ntop(af, a.bytes.data(), buf, sizeof buf);
  return buf;
}

std::string format_endpoint(const IpAddress& address, std::optional<uint16_t> port) {
  const std::string host = format_address(address);
  const std::string p = port ? std::to_string(*port) : "*";
  if (canonical(address).family == AddressFamily::IPv6) return fmt::format("[{}]:{}", host, p);
  return fmt::format("{}:{}", host, p);
}

ServicePair service_pair(TcpDirection direction, const IpAddress& local_address,
                         uint16_t local_port, const IpAddress& remote_address,
                         uint16_t remote_port) {
  const bool active = direction == TcpDirection::Active;
  return ServicePair{
      format_endpoint(local_address, active ? std::nullopt : std::optional<uint16_t>(local_port)),
      format_endpoint(remote_address,
                      active ? std::optional<uint16_t>(remote_port) : std::nullopt)};
}

}  // namespace tailcause::core
