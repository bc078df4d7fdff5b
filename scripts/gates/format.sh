#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gate: every tracked C and C++ file is on its .clang-format (`make format` fixes a slip).
# vmlinux.h is generated and left as bpftool writes it.
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp' | grep -v '/vmlinux\.h$')
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "format: files above are off .clang-format: run 'make format'" >&2
  exit 1
fi
echo "format: ${#files[@]} files on .clang-format"
