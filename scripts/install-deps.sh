#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages tailcause needs, skipping what is already there so `make run` /
# `make test` stay fast on a prepared machine.
#   scripts/install-deps.sh [run]   building and running the daemon (`make run`)
#   scripts/install-deps.sh test    the above, plus what the tests and benchmarks need (`make test`)
set -euo pipefail
profile=${1:-run}
run_pkgs=(
  build-essential cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
  systemtap-sdt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libcpp-httplib-dev libssl-dev protobuf-compiler libprotobuf-dev libcap2-bin
  libmicrohttpd-dev libyaml-dev libhnswlib-dev libpng-dev libmnl-dev
  libabsl-dev  # the vector cache's open-addressing maps (absl::flat_hash_map)
  libfreetype-dev libfontconfig-dev fonts-dejavu-core  # `heatmap --out FILE.png`'s labels
)
test_pkgs=(
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus stress-ng linux-perf bpftrace iproute2 util-linux procps curl python3 python3-numpy
  chromium tmux
  # packaging tests: cpack's dpkg-shlibdeps, an offline pip install, systemd-analyze
  dpkg-dev file python3-venv python3-setuptools python3-pip systemd
  python3-torch python3-faiss  # zero-code tests: recipes and `tailcause instrument` (tests/zerocode)
  python3-requests python3-httpx  # ... and its HTTP-client hooks
  python3-yaml  # deploy/prometheus/generate.py, tests/prometheus (rules and dashboards)
)
case "$profile" in
  run) pkgs=("${run_pkgs[@]}") ;;
  test)
    pkgs=("${run_pkgs[@]}" "${test_pkgs[@]}")
    # The OTLP receiver test (tests/e2e/otlp_receiver) runs on node >= 18.19 with npm: Debian's
    # nodejs/npm only when there is none on the PATH (a vendor build is as good).
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
      pkgs+=(nodejs npm)
    fi
    # The Kubernetes manifests test renders deploy/kubernetes with `kubectl kustomize`: Debian's
    # kubectl only when there is none on the PATH.
    command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
    ;;
  *) echo "usage: $0 [run|test]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "install-deps ($profile): installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian's prometheus package starts a server in the background; the tests run their own.
if command -v systemctl >/dev/null && systemctl is-active -q prometheus 2>/dev/null; then
  systemctl stop prometheus || true
fi
