#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates bpf/<arch>/vmlinux.h from the running kernel's BTF.
# CO-RE relocations make the checked-in header valid on other kernels too;
# regenerate only to reach types or fields added by newer kernels.
set -euo pipefail
arch=$(uname -m)
case "$arch" in x86_64) dir=x86 ;; aarch64) dir=arm64 ;; *) dir=$arch ;; esac
out="$(dirname "$0")/../bpf/$dir/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file "${BTF:-/sys/kernel/btf/vmlinux}" format c > "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
