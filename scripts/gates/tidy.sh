#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gate: clang-tidy's agreed checks (.clang-tidy) on every C++ source of the daemon (src/),
# from a configured build tree's compile_commands.json: scripts/gates/tidy.sh BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: scripts/gates/tidy.sh BUILD_DIR}
[[ -f $build/compile_commands.json ]] || { echo "tidy: no $build/compile_commands.json" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cpp')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# One clang-tidy per core; a file's findings come out whole.
if ! printf '%s\n' "${files[@]}" |
    xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet >"$log" 2>&1; then
  grep -E 'error:|warning:' -A3 "$log" | grep -v '^--$' >&2 || cat "$log" >&2
  echo "tidy: findings above (.clang-tidy lists the checks)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
