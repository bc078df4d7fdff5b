#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gate: the one version is the one project() sets in CMakeLists.txt. Files that cannot read it
# at build time (the Python package's metadata, the Kubernetes image tags) must spell the same.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(sed -nE 's/^project\(tailcause VERSION ([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' CMakeLists.txt)
[[ -n $version ]] || { echo "version: no project(tailcause VERSION x.y.z) in CMakeLists.txt" >&2; exit 1; }
bad=0
expect() {  # FILE PATTERN: the file must hold a line matching the pattern (version substituted)
  if ! grep -qE "$2" "$1"; then
    echo "version: $1 does not say $version (project() in CMakeLists.txt): want /$2/" >&2
    bad=1
  fi
}
v=${version//./\\.}
expect sdk/python/pyproject.toml "^version = \"$v\"$"
expect deploy/kubernetes/base/kustomization.yaml "^ *newTag: \"$v\"$"
expect deploy/kubernetes/overlays/arm64/kustomization.yaml "^ *newTag: \"$v-arm64\"$"
expect CHANGELOG.md "^## \\[?$v\\]?"
# Nothing else may type it: C, C++ and the tests take it from the build.
if others=$(git grep -nwF "$version" -- ':!CMakeLists.txt' ':!CHANGELOG.md' \
    ':!sdk/python/pyproject.toml' ':!deploy/kubernetes/*kustomization.yaml'); then
  echo "version: $version typed outside the files above (take it from the build):" >&2
  echo "$others" >&2
  bad=1
fi
[[ $bad == 0 ]] && echo "version: $version in every file that spells it"
exit $bad
