// SPDX-License-Identifier: Apache-2.0
// `tailcause run`: the daemon (src/daemon/daemon.h), with SIGINT/SIGTERM stopping it and
// SIGHUP reloading its configuration.
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "daemon/daemon.h"
#include "daemon/signals.h"

namespace tailcause::cli {

int run_daemon(const CommonOptions& options) {
  daemon::Daemon d(options, daemon::prepare(options));
  daemon::SignalRouting signals(d.flags(), /*reload=*/true);
  return d.run();
}

}  // namespace tailcause::cli
