#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make bench` entry point: bench/run.sh BUILD_DIR [overhead.py options].
# Runs the node-level overhead benchmark (bench/README.md explains the figures).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-build}"
shift || true

if [ "$(id -u)" -ne 0 ]; then
  echo "bench: run as root: tailcause and bpftrace load BPF programs (try: sudo make bench)" >&2
  exit 2
fi
if [ ! -x "$build/tailcause" ]; then
  echo "bench: $build/tailcause not found; build it first (make build)" >&2
  exit 2
fi
for tool in perf bpftrace; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench: $tool not found; scripts/install-deps.sh installs it (linux-perf, bpftrace)" >&2
    exit 2
  fi
done
# Debian's interpreter, standard library only: nothing to install.
/usr/bin/python3 "$here/overhead.py" "$build" "$@"
/usr/bin/python3 "$here/agent_overhead.py" "$build"
/usr/bin/python3 "$here/idle_cost.py" "$build"
"$build/bench/series_memory"
