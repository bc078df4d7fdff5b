// SPDX-License-Identifier: Apache-2.0
// Who may hold a connection to the endpoint: the admission and eviction policy, without I/O.
// Idle and slow connections cost the daemon nothing but a descriptor, so they are let in and
// pushed out again by age when room is needed, instead of refusing the newcomer: a scraper
// that connects behind 300 idle sockets (from its own address or many) still gets a slot.
//  - A connection that has not yet sent a whole request may use only `total - reserved` slots;
//    the reserved ones are for connections that have (a keep-alive scraper, the web UI).
//  - At a limit (the address's, the unproven share, the total) the oldest evictable connection
//    of that group goes: never-answered ones before answered ones, then by how long they have
//    waited. A connection whose request is being answered is never evicted.
//  - A newcomer is refused only when every connection it could replace is being answered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tailcause::exporter::http {

struct ConnectionLimits {
  size_t total = 256;       // open connections, all clients together
  size_t per_address = 32;  // open connections from one client address
  size_t reserved = 64;     // of `total`, held for connections that completed a request
};

class ConnectionTable {
 public:
  using Id = uint64_t;
  explicit ConnectionTable(ConnectionLimits limits = {});

  struct Admission {
    bool admitted = false;
    std::vector<Id> evicted;  // to close now, oldest first
  };
  // A new connection from `address` at `now_ns`.
  Admission admit(Id id, const std::string& address, int64_t now_ns);
  // Its request is complete and being answered: not evictable until idle() or writing().
  void answering(Id id);
  // Its answer is being written (a slow reader is evictable again, aged from now).
  void writing(Id id, int64_t now_ns);
  // Answered; it waits for another request on the same connection.
  void idle(Id id, int64_t now_ns);
  void remove(Id id);

  size_t size() const { return entries_.size(); }
  size_t from(const std::string& address) const;
  const ConnectionLimits& limits() const { return limits_; }

 private:
  struct Entry {
    Id id;
    std::string address;
    int64_t since_ns;     // accepted, or last state change
    bool proven = false;  // has sent a whole request
    bool answering = false;
  };
  Entry* find(Id id);
  // The entry to evict among those `in_group` selects, if any may go.
  std::optional<size_t> victim(const std::function<bool(const Entry&)>& in_group) const;

  ConnectionLimits limits_;
  std::vector<Entry> entries_;  // a few hundred at most: scanned, not indexed
};

}  // namespace tailcause::exporter::http
