// SPDX-License-Identifier: Apache-2.0
// USDT argument specifications ("8@%rdi -4@-20(%rbp) 8@$5") turned into the form libbpf's
// <bpf/usdt.bpf.h> reads on the BPF side (bpf_usdt_arg()): one struct per probe site, kept
// in the __bpf_usdt_specs map under the id the site's uprobe carries as its BPF cookie.
// The layout mirrors usdt.bpf.h's internal structs; the attacher checks the map's value size
// against it before using it. x86-64 and arm64 (AArch64) argument syntax.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace tailcause::probes {

inline constexpr int kUsdtMaxArgs = 12;  // BPF_USDT_MAX_ARG_CNT

enum UsdtArgType : uint32_t { kUsdtArgConst = 0, kUsdtArgReg = 1, kUsdtArgRegDeref = 2 };

struct UsdtArgSpec {
  uint64_t val_off = 0;  // the constant, or the offset added to the register's value
  UsdtArgType arg_type = kUsdtArgConst;
  int16_t reg_off = 0;  // the register's offset in struct pt_regs
  bool arg_signed = false;
  int8_t arg_bitshift = 0;  // 64 - size in bits: what to clear (and sign-extend) of the u64
};

struct UsdtSpec {
  UsdtArgSpec args[kUsdtMaxArgs];
  uint64_t usdt_cookie = 0;
  int16_t arg_cnt = 0;
};
static_assert(sizeof(UsdtArgSpec) == 16 && sizeof(UsdtSpec) == 208,
              "must match struct __bpf_usdt_spec of <bpf/usdt.bpf.h>");

enum class UsdtArch { X86_64, Arm64 };
#if defined(__aarch64__)
inline constexpr UsdtArch kHostUsdtArch = UsdtArch::Arm64;
#else
inline constexpr UsdtArch kHostUsdtArch = UsdtArch::X86_64;
#endif

// The spec of one site's argument string, or why it cannot be read. x86-64 (AT&T):
// "8@%rdi -4@-20(%rbp) 8@$5"; arm64: "8@x0 -4@[sp, 12] 8@[x1] 4@5".
std::variant<UsdtSpec, std::string> parse_usdt_args(std::string_view args,
                                                    UsdtArch arch = kHostUsdtArch);

// Offset of a register in the architecture's struct pt_regs; -1 if unknown. x86-64 names of any
// width (rax, eax, ax, al) share the full register's slot, as arm64's wN share xN's.
int pt_regs_offset(std::string_view reg, UsdtArch arch = kHostUsdtArch);

}  // namespace tailcause::probes
