// SPDX-License-Identifier: Apache-2.0
#include "probes/route_lookup.h"

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "core/host/peer_address.h"

namespace tailcause::probes {

RouteLookup::RouteLookup() {
  socket_ = mnl_socket_open(NETLINK_ROUTE);
  if (socket_ == nullptr || mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int err = errno;
    if (socket_) mnl_socket_close(socket_);
    socket_ = nullptr;
    throw std::runtime_error(std::string("rtnetlink socket: ") + std::strerror(err));
  }
  // Asked on the collector thread: a reply that never comes must not hold it.
  timeval timeout{0, 200'000};
  setsockopt(mnl_socket_get_fd(socket_), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  port_ = mnl_socket_get_portid(socket_);
  seq_ = static_cast<uint32_t>(time(nullptr));
}

RouteLookup::~RouteLookup() {
  if (socket_) mnl_socket_close(socket_);
}

std::optional<std::string> RouteLookup::device_for(const std::string& peer, uint64_t now_ns) {
  auto it = cache_.find(peer);
  if (it != cache_.end() && now_ns - it->second.at_ns < kCacheNs) return it->second.device;
  if (it == cache_.end() && cache_.size() >= kMaxCached) cache_.clear();  // rare: start afresh
  Cached& c = cache_[peer];
  c.device = ask_kernel(peer);
  c.at_ns = now_ns;
  return c.device;
}

std::optional<std::string> RouteLookup::ask_kernel(const std::string& peer) {
  const auto addr = core::parse_peer_address(peer);
  if (!addr) return std::nullopt;
  ++lookups_;
  alignas(nlmsghdr) char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETROUTE;
  nlh->nlmsg_flags = NLM_F_REQUEST;
  nlh->nlmsg_seq = ++seq_;
  auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rt->rtm_family = static_cast<unsigned char>(addr->family);
  rt->rtm_dst_len = static_cast<unsigned char>(addr->length() * 8);
  mnl_attr_put(nlh, RTA_DST, addr->length(), addr->bytes.data());
  if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) return std::nullopt;

  uint32_t oif = 0;
  const auto on_message = [](const nlmsghdr* m, void* data) -> int {
    if (m->nlmsg_type != RTM_NEWROUTE) return MNL_CB_OK;
    const auto on_attr = [](const nlattr* a, void* out) -> int {
      if (mnl_attr_get_type(a) == RTA_OIF && mnl_attr_validate(a, MNL_TYPE_U32) == 0)
        *static_cast<uint32_t*>(out) = mnl_attr_get_u32(a);
      return MNL_CB_OK;
    };
    mnl_attr_parse(m, sizeof(rtmsg), on_attr, data);
    return MNL_CB_STOP;
  };
  // One reply, or an error (no route). Replies to earlier requests that timed out come first:
  // skipped by their sequence number.
  for (int i = 0; i < 4; ++i) {
    const ssize_t n = mnl_socket_recvfrom(socket_, buf, sizeof buf);
    if (n < static_cast<ssize_t>(sizeof(nlmsghdr))) return std::nullopt;
    if (reinterpret_cast<const nlmsghdr*>(buf)->nlmsg_seq != seq_) continue;
    mnl_cb_run(buf, static_cast<size_t>(n), seq_, port_, on_message, &oif);  // an error: no oif
    break;
  }
  if (oif == 0) return std::nullopt;
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(oif, name) == nullptr) return std::nullopt;
  return std::string(name);
}

}  // namespace tailcause::probes
