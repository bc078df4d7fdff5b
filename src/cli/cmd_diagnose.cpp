// SPDX-License-Identifier: Apache-2.0
// `tailcause diagnose --duration 30s`: collects for a while with a progress indicator, then
// prints the one-shot report (tables, or JSON on stdout with --json). Ctrl-C ends the
// collection early and still prints the report.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/report/diagnosis.h"
#include "core/config/duration.h"
#include "daemon/collection.h"
#include "daemon/signals.h"

namespace tailcause::cli {

int diagnose(const CommonOptions& options, const DiagnoseOptions& diagnose_options) {
  const uint64_t duration_ns = core::parse_duration_ns(diagnose_options.duration);  // validated
  const auto startup = daemon::prepare(options);

  const double seconds = static_cast<double>(duration_ns) * 1e-9;
  daemon::RunFlags flags;
  daemon::SignalRouting signals(flags, /*reload=*/false);
  {
    daemon::Collection collection(startup, duration_ns + 10'000'000'000);
    collection.begin();
    Progress progress("collecting", seconds);
    while (!flags.stop && collection.elapsed_seconds() < seconds) {
      collection.poll(100);
      const uint64_t g = collection.glitches();
      progress.update(collection.elapsed_seconds(),
                      fmt::format("{} glitch{}", g, g == 1 ? "" : "es"));
    }
    const bool interrupted = flags.stop;
    core::Diagnosis d = collection.finish();
    progress.finish(fmt::format("collected {:.1f} s{}", d.duration_seconds,
                                interrupted ? " (stopped early)" : ""));
    if (diagnose_options.json) {
      auto j = core::diagnosis_json(d);
      j["interrupted"] = interrupted;
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}\n\n{}", core::diagnosis_headline(d), core::render_diagnosis_text(d));
    }
  }
  return 0;
}

}  // namespace tailcause::cli
