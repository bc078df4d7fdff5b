// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <stdexcept>

namespace rag {
namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr struct {
  const char* name;
  FaultKind kind;
} kFaultKinds[] = {{"quota", FaultKind::Quota},
                   {"hog", FaultKind::Hog},
                   {"cold-cache", FaultKind::ColdCache},
                   {"slow-peer", FaultKind::SlowPeer},
                   {"lock", FaultKind::Lock},
                   {"entropy", FaultKind::Entropy},
                   {"cache-bust", FaultKind::CacheBust}};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = text.find(sep, start);
    out.push_back(text.substr(start, pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

// Tenant names become cgroup directory names and probe strings: keep them short and plain.
// A leading '_' is reserved for the agent's own cgroups (_tools, _hog-<tenant>).
void check_tenant_name(const std::string& name) {
  if (name.empty()) throw UsageError("--tenants: empty tenant name");
  if (name.size() > 32)
    throw UsageError(fmt::format("--tenants: '{}' is longer than 32 characters", name));
  if (name[0] == '_' || name[0] == '-')
    throw UsageError(fmt::format("--tenants: '{}' must start with a letter or digit", name));
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok)
      throw UsageError(
          fmt::format("--tenants: '{}' may only hold letters, digits, '-' and '_'", name));
  }
}

Fault parse_fault(const std::string& spec, const std::vector<std::string>& tenants) {
  auto colon = spec.find(':');
  std::string kind_name = spec.substr(0, colon);
  std::string tenant = colon == std::string::npos ? tenants.front() : spec.substr(colon + 1);
  auto it = std::find_if(std::begin(kFaultKinds), std::end(kFaultKinds),
                         [&](const auto& k) { return kind_name == k.name; });
  if (it == std::end(kFaultKinds))
    throw UsageError(fmt::format(
        "--fault {}: unknown fault kind '{}' (expected quota, hog, cold-cache, slow-peer, lock, "
        "entropy or cache-bust)",
        spec, kind_name));
  if (std::find(tenants.begin(), tenants.end(), tenant) == tenants.end())
    throw UsageError(fmt::format("--fault {}: tenant '{}' is not one of --tenants {}", spec, tenant,
                                 fmt::join(tenants, ",")));
  return Fault{it->kind, tenant};
}

void validate(Options& o, const std::string& tenants_flag,
              const std::vector<std::string>& fault_specs) {
  o.tenants = split(tenants_flag, ',');
  std::set<std::string> seen;
  for (const auto& t : o.tenants) {
    check_tenant_name(t);
    if (!seen.insert(t).second) throw UsageError(fmt::format("--tenants: '{}' given twice", t));
  }
  if (!(o.rate > 0) || o.rate > 10000)
    throw UsageError(fmt::format("--rate must be in (0, 10000], got {}", o.rate));
  if (o.concurrency < 1 || o.concurrency > 64)
    throw UsageError(fmt::format("--concurrency must be in [1, 64], got {}", o.concurrency));
  if (!(o.duration > 0) || o.duration > 86400)
    throw UsageError(fmt::format("--duration must be in (0, 86400] seconds, got {}", o.duration));
  if (o.vectors < 1000 || o.vectors > 20'000'000)
    throw UsageError(fmt::format("--vectors must be in [1000, 20000000], got {}", o.vectors));
  if (o.dim < 8 || o.dim > 2048)
    throw UsageError(fmt::format("--dim must be in [8, 2048], got {}", o.dim));
  if (o.cache_entries > 100'000)
    throw UsageError(
        fmt::format("--cache-entries must be in [0, 100000], got {}", o.cache_entries));
  if (o.nprobe < 1 || o.nprobe > 4096)
    throw UsageError(fmt::format("--nprobe must be in [1, 4096], got {}", o.nprobe));
  if (o.cache_entries == 0 && o.cache_loop)
    throw UsageError("--cache-loop needs a retrieval cache (--cache-entries 0 turns it off)");
  for (const auto& spec : fault_specs) {
    Fault f = parse_fault(spec, o.tenants);
    bool dup = std::any_of(o.faults.begin(), o.faults.end(), [&](const Fault& g) {
      return g.kind == f.kind && g.tenant == f.tenant;
    });
    if (!dup) o.faults.push_back(f);
  }
}

}  // namespace

const char* fault_kind_name(FaultKind kind) {
  for (const auto& k : kFaultKinds)
    if (k.kind == kind) return k.name;
  return "?";
}

bool Options::has_fault(FaultKind kind, const std::string& tenant) const {
  return std::any_of(faults.begin(), faults.end(),
                     [&](const Fault& f) { return f.kind == kind && f.tenant == tenant; });
}

bool Options::has_fault(FaultKind kind) const {
  return std::any_of(faults.begin(), faults.end(), [&](const Fault& f) { return f.kind == kind; });
}

std::optional<Options> parse_options(int argc, char** argv, int& exit_code) {
  Options o;
  std::string tenants_flag = "a,b";
  std::vector<std::string> fault_specs;
  CLI::App app{
      "tailcause example: a multi-tenant RAG agent doing real work, with injectable faults"};
  app.add_option("--tenants", tenants_flag,
                 "comma-separated tenant names, one cgroup and process each")
      ->capture_default_str();
  app.add_option("--rate", o.rate, "requests per second per tenant (open loop)")
      ->capture_default_str();
  app.add_option("--concurrency", o.concurrency, "worker threads per tenant")
      ->capture_default_str();
  app.add_option("--duration", o.duration, "seconds of load before a clean shutdown")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "where index-<tenant>.f32 files live (default: data/ next to the binary)");
  app.add_option("--vectors", o.vectors, "vectors in each tenant's index")->capture_default_str();
  app.add_option("--dim", o.dim, "dimension of the index vectors")->capture_default_str();
  app.add_option(
         "--fault", fault_specs,
         "KIND[:TENANT], repeatable; KIND: quota, hog, cold-cache, slow-peer, lock, entropy, "
         "cache-bust (tenant: first)")
      ->allow_extra_args(false);
  app.add_option("--cgroup-root", o.cgroup_root,
                 "cgroup hierarchy with the cpu controller (default: detected, v2 preferred)");
  app.add_option("--report", o.report_path, "write a JSON summary here at the end");
  app.add_flag("--shed-when-open", o.shed_when_open,
               "shed new requests while the tenant's tailcause circuit breaker is open "
               "(read through the SDK from the daemon's socket, $TAILCAUSE_BREAKER_SOCKET)");
  app.add_option("--cache-entries", o.cache_entries,
                 "entries of each tenant's retrieval cache (0: no cache, every retrieval searches "
                 "the index)")
      ->capture_default_str();
  app.add_option("--nprobe", o.nprobe,
                 "IVF lists each retrieval scans (capped at the index's lists: one per 800 "
                 "vectors); more reads more of the index file per query")
      ->capture_default_str();
  app.add_flag("--cache-loop", o.cache_loop,
               "each tenant's retrieval cache follows tailcause's verdict on it (the same socket): "
               "warmed up when a breakdown begins, its quota rebalanced from the competition "
               "index (libtailcause_cache's CacheFeedback)");
  try {
    app.parse(argc, argv);
    validate(o, tenants_flag, fault_specs);
  } catch (const CLI::CallForHelp& e) {
    exit_code = app.exit(e);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    std::cerr << "rag-agent: " << e.what() << "\nRun with --help for the flags.\n";
    exit_code = 2;
    return std::nullopt;
  } catch (const UsageError& e) {
    std::cerr << "rag-agent: " << e.what() << "\n";
    exit_code = 2;
    return std::nullopt;
  }
  exit_code = 0;
  return o;
}

}  // namespace rag
