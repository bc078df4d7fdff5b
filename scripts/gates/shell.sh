#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gate: every tracked shell script (*.sh, and any tracked file whose first line is a sh/bash
# shebang: .ci/run, cmake/deb/*) passes shellcheck, sourced files followed from the script's own
# directory (`source "$(dirname "$0")/lib.sh"`). A deliberate construct is disabled on its line.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v shellcheck >/dev/null; then
  echo "shell: shellcheck is not installed (Debian: apt-get install shellcheck)" >&2
  exit 1
fi
# Candidates by name or by a shebang anywhere in the file; a shebang counts on the first line only.
mapfile -t candidates < <({
  git ls-files '*.sh'
  git grep -lIE '^#! ?(/usr)?/bin/(env +)?(ba|da)?sh( |$)' || true
} | sort -u)
files=()
for f in "${candidates[@]}"; do
  [ -f "$f" ] || continue  # tracked but deleted in the working tree
  case "$f" in
    *.sh) files+=("$f") ;;
    *) head -n1 "$f" | grep -qE '^#! ?(/usr)?/bin/(env +)?(ba|da)?sh( |$)' && files+=("$f") ;;
  esac
done
if ! shellcheck -x --source-path=SCRIPTDIR "${files[@]}"; then
  echo "shell: findings above (https://www.shellcheck.net/wiki/SCxxxx); a deliberate construct" \
    "gets '# shellcheck disable=SCxxxx  # why' on its line" >&2
  exit 1
fi
echo "shell: ${#files[@]} scripts clean"
