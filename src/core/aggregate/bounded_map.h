// SPDX-License-Identifier: Apache-2.0
// Per-series state keyed by names that come from outside (tenants, caches, stages): a map that
// may not grow past a bound, counting what it had to refuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tailcause::core {

// The value of `key` in `map`, made by `make()` when absent and the map holds fewer than `max`
// entries; nullptr (and one more `refused`) when it is full.
template <typename Map, typename Make>
typename Map::mapped_type* bounded_slot(Map& map, typename Map::key_type key, size_t max,
                                        uint64_t& refused, Make&& make) {
  auto it = map.find(key);
  if (it != map.end()) return &it->second;
  if (map.size() >= max) {
    refused++;
    return nullptr;
  }
  return &map.emplace(std::move(key), make()).first->second;
}

}  // namespace tailcause::core
