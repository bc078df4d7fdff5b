// SPDX-License-Identifier: Apache-2.0
// The qdisc poller: once a second, every interface's qdiscs (root and children) and their
// statistics, dumped over rtnetlink (RTM_GETQDISC, parsed with libmnl; every attribute's length
// checked). A qdisc that held traffic back since the previous reading (over its limit, dropping,
// queue growing) goes to the evidence board, where a network verdict names it ("qdisc tbf 8001:
// on lo over its limit 312 times"); those that ever did are exported as counters per device and
// qdisc. Owned by the tcp family, ticked and collected with it on the collector thread. Needs no
// privilege: any process may dump qdiscs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/host/evidence_board.h"
#include "core/aggregate/label_budget.h"
#include "core/record/metrics.h"
#include "core/host/qdisc.h"

struct mnl_socket;

namespace tailcause::probes {

// One qdisc of a dump.
struct QdiscReading {
  uint32_t ifindex = 0;
  uint32_t handle = 0;
  uint32_t parent = 0;
  std::string kind;
  core::QdiscCounters counters;
  bool has_stats = false;  // TCA_STATS2 carried basic or queue statistics
};

// Parses one RTM_NEWQDISC message (header included, `bytes` long as received); nullopt when it
// is not one or is malformed. Exposed for the unit tests.
std::optional<QdiscReading> parse_qdisc_message(std::span<const std::byte> message);

class QdiscStats {
 public:
  // Opens the rtnetlink socket; throws std::runtime_error with the reason when it cannot.
  explicit QdiscStats(size_t top_k);
  ~QdiscStats();
  QdiscStats(const QdiscStats&) = delete;
  QdiscStats& operator=(const QdiscStats&) = delete;

  // Dumps the qdiscs and posts each one's delta since the previous poll to the board. False
  // (and a warning, once) when the dump failed.
  bool poll(core::EvidenceBoard& board, uint64_t now_ns);
  void collect(core::MetricSet& out) const;
  uint64_t folded() const { return budget_.folded(); }

 private:
  struct Totals {
    uint64_t overlimits = 0, drops = 0, bytes = 0;
  };
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, std::string>;  // ifindex, handle, parent

  // (Re)opens and binds the rtnetlink socket; false with errno set, and no socket, on failure.
  bool open_socket();
  bool dump(std::vector<QdiscReading>& out);

  mnl_socket* socket_ = nullptr;
  uint32_t port_ = 0;
  uint32_t seq_ = 0;
  bool warned_ = false;
  std::map<Key, core::QdiscCounters> last_;                       // each qdisc's previous reading
  core::LabelBudget budget_;                                      // keyed by "device qdisc"
  std::map<std::pair<std::string, std::string>, Totals> totals_;  // (device, "tbf 8001:")
  std::map<Key, Totals*> exported_;  // the live qdiscs that have a series, and theirs
};

}  // namespace tailcause::probes
