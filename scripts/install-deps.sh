#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages tailcause needs, skipping what is already there so `make run` /
# `make test` stay fast on a prepared machine.
#   scripts/install-deps.sh [run]   building and running the daemon (`make run`)
#   scripts/install-deps.sh test    the above, plus what the tests and benchmarks need (`make test`)
#   scripts/install-deps.sh gates   the style and lint gates only (.ci/run runs them first)
#   scripts/install-deps.sh cross-arm64   the arm64 cross build and its unit tests under qemu-user
#                                   (`make cross-arm64`); adds the arm64 architecture to dpkg
set -euo pipefail
profile=${1:-run}
run_pkgs=(
  build-essential cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
  systemtap-sdt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libcpp-httplib-dev libssl-dev protobuf-compiler libprotobuf-dev libcap2-bin
  libboost-dev libyaml-dev libhnswlib-dev libpng-dev libmnl-dev
  libabsl-dev  # the vector cache's open-addressing maps (absl::flat_hash_map)
  libfreetype-dev libfontconfig-dev fonts-dejavu-core  # `heatmap --out FILE.png`'s labels
  python3-dev  # the Python SDK's C hot paths (sdk/python/tailcause/_speedups.c), for `instrument`
)
test_pkgs=(
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus stress-ng linux-perf bpftrace iproute2 util-linux procps curl python3 python3-numpy
  chromium tmux
  # packaging tests: cpack's dpkg-shlibdeps, an offline pip install, systemd-analyze
  dpkg-dev file python3-venv python3-setuptools python3-pip systemd
  python3-torch python3-faiss  # zero-code tests: recipes and `tailcause instrument` (tests/zerocode)
  python3-requests python3-httpx  # ... and its HTTP-client hooks
  python3-onnx  # ... the ONNX model for the npm runtimes (tests/zerocode/npm)
  python3-yaml  # deploy/prometheus/generate.py, tests/prometheus (rules and dashboards)
)
# The gates (scripts/gates/): format, clang-tidy, shellcheck, layering.
gate_pkgs=(clang-format clang-tidy shellcheck git python3)
# The arm64 cross build (cmake/toolchain-aarch64.cmake): the host's compilers and build-time
# programs, Debian's aarch64-linux-gnu cross toolchain, qemu-user, and the :arm64 (multiarch)
# libraries the daemon, the SDK and the unit tests link. Header-only packages (Architecture: all)
# serve both architectures.
host_arch=$(dpkg --print-architecture)
cross_arm64_host_pkgs=(
  cmake pkg-config clang bpftool protobuf-compiler file crossbuild-essential-arm64 qemu-user-static
  libcli11-dev nlohmann-json3-dev libhnswlib-dev
  # libyaml-cpp-dev is not Multi-Arch: same in Debian 12, so its :arm64 package would replace the
  # host's (and break the native build): the host's provides the headers (arch-independent),
  # libyaml-cpp0.7:arm64 the library (the toolchain file imports it). Qualified with the host
  # architecture, since an unqualified query is also satisfied by an installed :arm64 one.
  "libyaml-cpp-dev:$host_arch"
  "libboost-dev:$host_arch"  # Boost.Beast and Asio: headers only, the same for both
)
cross_arm64_pkgs=(
  libbpf-dev libelf-dev zlib1g-dev libspdlog-dev libfmt-dev libsqlite3-dev libcpp-httplib-dev
  libssl-dev libprotobuf-dev libyaml-dev libpng-dev libmnl-dev libabsl-dev
  libfreetype-dev libfontconfig-dev libyaml-cpp0.7 libgtest-dev libgmock-dev
  systemtap-sdt-dev  # <sys/sdt.h> lives in the multiarch include directory
  linux-libc-dev  # <asm/errno.h> for the BPF objects (-idirafter /usr/include/aarch64-linux-gnu)
)
case "$profile" in
  run) pkgs=("${run_pkgs[@]}") ;;
  test)
    pkgs=("${run_pkgs[@]}" "${test_pkgs[@]}" "${gate_pkgs[@]}")
    # The OTLP receiver test (tests/e2e/otlp_receiver) runs on node >= 18.19 with npm: Debian's
    # nodejs/npm only when there is none on the PATH (a vendor build is as good).
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
      pkgs+=(nodejs npm)
    fi
    # The Kubernetes manifests test renders deploy/kubernetes with `kubectl kustomize`: Debian's
    # kubectl only when there is none on the PATH.
    command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
    ;;
  gates) pkgs=("${gate_pkgs[@]}") ;;
  cross-arm64)
    pkgs=("${cross_arm64_host_pkgs[@]}" "${cross_arm64_pkgs[@]/%/:arm64}")
    ;;
  *) echo "usage: $0 [run|test|gates|cross-arm64]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
  [ "$profile" != cross-arm64 ] || echo "install-deps: after: sudo dpkg --add-architecture arm64; sudo apt-get update" >&2
  exit 1
fi
echo "install-deps ($profile): installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# :arm64 packages come from the same mirror once dpkg knows the architecture (the update below
# fetches its package lists).
if [ "$profile" = cross-arm64 ] && [ "$host_arch" != arm64 ] &&
  ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian's prometheus package starts a server in the background; the tests run their own.
if command -v systemctl >/dev/null && systemctl is-active -q prometheus 2>/dev/null; then
  systemctl stop prometheus || true
fi
