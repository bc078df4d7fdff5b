#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The systemd unit as `cmake --install` writes it passes `systemd-analyze verify`, keeps the
# hardening it is meant to have, and its `systemd-analyze security` exposure is printed (the
# README quotes it). No root: the unit is written to a temporary prefix. Skips (77) without
# systemd-analyze.
set -euo pipefail
: "${SRC_DIR:?}" "${BUILD_DIR:?}"
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze (Debian: systemd)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
mkdir -p "$prefix/bin"
ln -s "$BUILD_DIR/tailcause" "$prefix/bin/tailcause"
cmake -DTC_SRC="$SRC_DIR" -DTC_BIN="$tmp" -DTC_BINDIR=bin -DCMAKE_INSTALL_PREFIX="$prefix" \
  -P "$SRC_DIR/cmake/install_daemon_files.cmake"
unit=$prefix/lib/systemd/system/tailcause.service
test -f "$prefix/etc/tailcause/tailcause.yaml"
grep -qx "ExecStart=$prefix/bin/tailcause run --config $prefix/etc/tailcause/tailcause.yaml" "$unit"
if grep -n '@[A-Z_]*@' "$unit"; then echo "FAIL: unsubstituted placeholder"; exit 1; fi
# verify prints problems on stderr and still exits 0 for some of them: any output fails.
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; echo "FAIL: verify"; exit 1; }
if [ -n "$out" ]; then echo "$out"; echo "FAIL: verify complained"; exit 1; fi
for want in ProtectSystem=strict NoNewPrivileges=yes StateDirectory=tailcause \
  RuntimeDirectory=tailcause "CapabilityBoundingSet=CAP_BPF CAP_PERFMON"; do
  grep -q "^$want" "$unit" || { echo "FAIL: $want missing"; exit 1; }
done
systemd-analyze security --offline=yes "$unit" 2>&1 | tail -3
echo PASS
