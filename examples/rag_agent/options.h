// SPDX-License-Identifier: Apache-2.0
// Command-line options of the example agent, validated up front so that a bad flag exits 2
// before any cgroup or child process exists.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rag {

enum class FaultKind { Quota, Hog, ColdCache, SlowPeer, Lock, Entropy, CacheBust };

const char* fault_kind_name(FaultKind kind);

struct Fault {
  FaultKind kind;
  std::string tenant;
};

struct Options {
  std::vector<std::string> tenants{"a", "b"};
  double rate = 5.0;            // requests per second per tenant, open loop
  int concurrency = 2;          // worker threads per tenant
  double duration = 10.0;       // seconds of load
  std::string data_dir;         // index files; default <binary dir>/data
  std::size_t vectors = 50000;  // per tenant index
  std::size_t dim = 128;
  std::vector<Fault> faults;
  std::string cgroup_root;          // empty: detect the hierarchy with the cpu controller
  std::string report_path;          // empty: no JSON report
  bool shed_when_open = false;      // refuse new requests while tailcause's breaker is open
  bool cache_loop = false;          // retrieval caches follow the daemon's verdicts (CacheFeedback)
  std::size_t cache_entries = 128;  // each tenant's retrieval cache; 0: none
  std::size_t nprobe = 6;           // IVF lists each retrieval scans

  bool has_fault(FaultKind kind, const std::string& tenant) const;
  bool has_fault(FaultKind kind) const;
};

// Parses and validates argv. On --help returns nullopt with exit_code 0; on a bad flag prints a
// clear message to stderr and returns nullopt with exit_code 2.
std::optional<Options> parse_options(int argc, char** argv, int& exit_code);

}  // namespace rag
