#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives every source file of the repository its SPDX licence line (first line, or second after a
# shebang); --check only lists the files without the right one and fails if there are any.
#   scripts/spdx.sh           add or correct the lines (idempotent: a second run changes nothing)
#   scripts/spdx.sh --check   exit 1 and name each file missing its line or carrying another licence
# Licences by path: bpf/ and every *.bpf.c (loaded into the kernel, which wants GPL-compatible
# code) GPL-2.0-only OR BSD-2-Clause; sdk/ (compiled into users' agents) MIT; the rest Apache-2.0.
# Files are those git tracks plus untracked ones it does not ignore, so a new file is caught
# before its commit. Generated or data files (vmlinux.h, fuzz corpora, JSON, Markdown) are left out.
set -euo pipefail

mode=fix
case "${1:-}" in
  --check) mode=check ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

# Sets $licence for a path (no subshell per file: the whole tree takes well under a second).
licence_of() {
  case "$1" in
    bpf/* | *.bpf.c) licence="GPL-2.0-only OR BSD-2-Clause" ;;
    sdk/*) licence="MIT" ;;
    *) licence="Apache-2.0" ;;
  esac
}

# Sets $style by name: "//", "/*" (C block, for linker scripts), "#", or empty (not a source file).
style_of() {  # path first-line
  style=
  case "$1" in
    */vmlinux.h | tests/fuzz/corpus/*) return ;;
  esac
  case "${1##*/}" in
    *.c | *.h | *.cpp | *.hpp | *.cc | *.proto | *.js | *.bt | *.bt.in) style="//" ;;
    *.map) style="/*" ;;
    *.sh | *.py | *.yaml | *.yml | *.cmake | *.cmake.in | CMakeLists.txt | Makefile | .clang-format | \
      *.toml | *.service | *.pc.in) style="#" ;;
    *.*) ;;
    *) case "$2" in "#!"*) style="#" ;; esac ;;  # scripts without an extension (.ci/run)
  esac
}

bad=0
while IFS= read -r -d '' f; do
  { [ -f "$f" ] && [ ! -L "$f" ]; } || continue
  l1='' l2='' l3=''
  { IFS= read -r l1 || true; IFS= read -r l2 || true; IFS= read -r l3 || true; } < "$f"
  style_of "$f" "$l1"
  [ -n "$style" ] || continue
  licence_of "$f"
  want="SPDX-License-Identifier: $licence"
  case "$style" in
    "/*") line="/* $want */" ;;
    *) line="$style $want" ;;
  esac
  # Where the line belongs: after a shebang, else first.
  at=1
  case "$l1" in "#!"*) at=2 ;; esac
  [ $at = 1 ] && cur=$l1 || cur=$l2
  [ "$cur" = "$line" ] && continue
  has_other=0
  case "$l1$l2$l3" in *SPDX-License-Identifier:*) has_other=1 ;; esac
  if [ $mode = check ]; then
    if [ $has_other = 1 ]; then
      echo "$f: wrong SPDX line (want: $line)"
    else
      echo "$f: no SPDX line (want: $line)"
    fi
    bad=1
    continue
  fi
  if [ $has_other = 1 ]; then
    # Correct it in place (within the first three lines), whatever the licence it named.
    sed -i "1,3{/SPDX-License-Identifier:/c\\
$line
}" "$f"
    # ... and move it where it belongs if it was elsewhere.
    [ "$(sed -n "${at}p" "$f")" = "$line" ] || echo "$f: SPDX line not at line $at, fix by hand" >&2
  elif [ ! -s "$f" ]; then
    printf '%s\n' "$line" > "$f"
  elif [ $at = 2 ]; then
    sed -i "1a\\
$line" "$f"
  else
    sed -i "1i\\
$line" "$f"
  fi
  echo "spdx: $f"
done < <(git ls-files -z --cached --others --exclude-standard)

if [ $mode = check ] && [ $bad = 1 ]; then
  echo "run scripts/spdx.sh to add the missing lines" >&2
  exit 1
fi
exit 0
