#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates bpf/<arch>/vmlinux.h from a kernel's BTF.
#   scripts/gen-vmlinux.sh          from the running kernel (BTF=FILE: from that BTF file)
#   scripts/gen-vmlinux.sh arm64    bpf/arm64/vmlinux.h from Debian's current arm64 kernel package,
#                                   on any host (the cross build, `make cross-arm64`, needs it)
# CO-RE relocations make the checked-in header valid on other kernels too;
# regenerate only to reach types or fields added by newer kernels.
set -euo pipefail
bpf_dir="$(dirname "$0")/../bpf"

dump() {  # BTF-file arch-dir
  local out="$bpf_dir/$2/vmlinux.h"
  mkdir -p "$(dirname "$out")"
  # Through a temporary file, so a failed dump leaves the checked-in header as it was.
  bpftool btf dump file "$1" format c > "$out.tmp" || { rm -f "$out.tmp"; return 1; }
  mv "$out.tmp" "$out"
  echo "wrote $out ($(wc -l < "$out") lines)"
}

case "${1:-}" in
  "")
    arch=$(uname -m)
    case "$arch" in x86_64) dir=x86 ;; aarch64) dir=arm64 ;; *) dir=$arch ;; esac
    dump "${BTF:-/sys/kernel/btf/vmlinux}" "$dir"
    exit 0
    ;;
  arm64) ;;
  *) echo "usage: $0 [arm64]" >&2; exit 2 ;;
esac

# ---- arm64 without an arm64 machine ---------------------------------------------------
# The header must describe an arm64 kernel (struct user_pt_regs, arm64's pt_regs and
# thread_struct), not the host's, so it is taken from the BTF built into Debian's own arm64
# kernel image (CONFIG_DEBUG_INFO_BTF=y). Needs the arm64 architecture in dpkg
# (scripts/install-deps.sh cross-arm64 adds it) and bpftool; nothing is installed.
command -v bpftool >/dev/null || PATH=$PATH:/usr/sbin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The kernel Debian 12 installs today: the one the linux-image-arm64 metapackage depends on
# (its candidate version, e.g. linux-image-6.1.0-57-arm64).
kernel=$(apt-cache show --no-all-versions linux-image-arm64:arm64 |
  sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | head -n1)
[ -n "$kernel" ] || { echo "gen-vmlinux: no linux-image-arm64:arm64 (dpkg --add-architecture arm64; apt-get update)" >&2; exit 1; }
# The -unsigned package: the same kernel as the signed one, without the EFI signature wrapper.
# apt-get download only fetches the .deb (no install, no dependencies); run it in $work, which
# _apt may not read, so it fetches as the caller.
(
  cd "$work"
  apt-get download -q "${kernel}-unsigned:arm64" >/dev/null 2>&1 || apt-get download -q "${kernel}:arm64"
)
deb=$(ls "$work"/*.deb)
echo "gen-vmlinux: BTF of $(basename "$deb")"
# Only /boot/vmlinuz-* is needed: unpack the package's data without dpkg -i.
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
image=$(ls "$work"/boot/vmlinuz-*)
# Debian's arm64 vmlinuz is the raw arm64 boot Image (no ELF, hence no .BTF section to read
# with objcopy); some kernels gzip it: undo that first.
if [ "$(head -c2 "$image" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
  gzip -dc < "$image" > "$work/Image"
else
  cp "$image" "$work/Image"
fi
# The BTF blob lies in the Image as the kernel links it (__start_BTF): find its header, the
# bytes of magic 0xeB9F, version 1, flags 0, hdr_len 24 (little-endian), then read type_off,
# type_len, str_off, str_len from it. The blob is the header plus both sections; a candidate
# is kept only if its sections are laid out as the kernel's are (types at 0, strings right
# after) and fit in the Image, so a stray match cannot pass for it.
size=$(stat -c %s "$work/Image")
best=0 best_off=
while IFS=: read -r off _; do
  read -r type_off type_len str_off str_len < <(od -An -tu4 -j $((off + 8)) -N 16 "$work/Image")
  { [ "$type_off" = 0 ] && [ "$str_off" = "$type_len" ]; } || continue
  len=$((24 + str_off + str_len))
  { [ $((off + len)) -le "$size" ] && [ "$len" -gt "$best" ]; } || continue
  best=$len best_off=$off
done < <(LC_ALL=C grep -obUaP '\x9f\xeb\x01\x00\x18\x00\x00\x00' "$work/Image")
[ -n "$best_off" ] || { echo "gen-vmlinux: no BTF in $(basename "$image")" >&2; exit 1; }
dd if="$work/Image" of="$work/vmlinux.btf" bs=64K iflag=skip_bytes,count_bytes \
  skip="$best_off" count="$best" status=none
# bpftool parses the blob (and fails on a truncated or corrupt one) and writes the C header.
dump "$work/vmlinux.btf" arm64
# An arm64 kernel's BTF has arm64's user register frame; an x86 one does not.
grep -q '^struct user_pt_regs {' "$bpf_dir/arm64/vmlinux.h" ||
  { echo "gen-vmlinux: bpf/arm64/vmlinux.h lacks struct user_pt_regs: not an arm64 kernel?" >&2; exit 1; }
