// SPDX-License-Identifier: Apache-2.0
#include "export/http/connection_table.h"

#include <algorithm>

namespace tailcause::exporter::http {

ConnectionTable::ConnectionTable(ConnectionLimits limits) : limits_(limits) {
  limits_.total = std::max<size_t>(limits_.total, 1);
  limits_.reserved = std::min(limits_.reserved, limits_.total - 1);
  limits_.per_address = std::clamp<size_t>(limits_.per_address, 1, limits_.total);
}

ConnectionTable::Entry* ConnectionTable::find(Id id) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; });
  return it == entries_.end() ? nullptr : &*it;
}

size_t ConnectionTable::from(const std::string& address) const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(),
                                           [&](const Entry& e) { return e.address == address; }));
}

std::optional<size_t> ConnectionTable::victim(
    const std::function<bool(const Entry&)>& in_group) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.answering || !in_group(e)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Entry& b = entries_[*best];
    // Never-answered first, then the longest waiting.
    if (e.proven != b.proven ? !e.proven : e.since_ns < b.since_ns) best = i;
  }
  return best;
}

ConnectionTable::Admission ConnectionTable::admit(Id id, const std::string& address,
                                                  int64_t now_ns) {
  Admission out;
  // Makes room in one group; false when nothing there may go.
  auto make_room = [&](const std::function<bool(const Entry&)>& in_group) {
    const auto v = victim(in_group);
    if (!v) return false;
    out.evicted.push_back(entries_[*v].id);
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(*v));
    return true;
  };
  const auto unproven = [this] {
    return static_cast<size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.proven; }));
  };
  const bool ok = (from(address) < limits_.per_address ||
                   make_room([&](const Entry& e) { return e.address == address; })) &&
                  (unproven() < limits_.total - limits_.reserved ||
                   make_room([](const Entry& e) { return !e.proven; })) &&
                  (entries_.size() < limits_.total || make_room([](const Entry&) { return true; }));
  if (!ok) return out;
  entries_.push_back({id, address, now_ns});
  out.admitted = true;
  return out;
}

void ConnectionTable::answering(Id id) {
  if (Entry* e = find(id)) {
    e->proven = true;
    e->answering = true;
  }
}

void ConnectionTable::writing(Id id, int64_t now_ns) {
  if (Entry* e = find(id)) {
    e->answering = false;
    e->since_ns = now_ns;
  }
}

void ConnectionTable::idle(Id id, int64_t now_ns) { writing(id, now_ns); }

void ConnectionTable::remove(Id id) {
  std::erase_if(entries_, [id](const Entry& e) { return e.id == id; });
}

}  // namespace tailcause::exporter::http
