// SPDX-License-Identifier: Apache-2.0
#include "probes/usdt_args.h"

#include <charconv>
#include <cstddef>
#include <utility>

#include <fmt/format.h>

namespace tailcause::probes {
namespace {

// struct pt_regs of x86-64 (arch/x86/include/uapi/asm/ptrace.h, the kernel's own view).
struct Reg {
  std::string_view names[4];
  int offset;
};
constexpr Reg kRegs[] = {
    {{"r15", "r15d", "r15w", "r15b"}, 0},  {{"r14", "r14d", "r14w", "r14b"}, 8},
    {{"r13", "r13d", "r13w", "r13b"}, 16}, {{"r12", "r12d", "r12w", "r12b"}, 24},
    {{"rbp", "ebp", "bp", "bpl"}, 32},     {{"rbx", "ebx", "bx", "bl"}, 40},
    {{"r11", "r11d", "r11w", "r11b"}, 48}, {{"r10", "r10d", "r10w", "r10b"}, 56},
    {{"r9", "r9d", "r9w", "r9b"}, 64},     {{"r8", "r8d", "r8w", "r8b"}, 72},
    {{"rax", "eax", "ax", "al"}, 80},      {{"rcx", "ecx", "cx", "cl"}, 88},
    {{"rdx", "edx", "dx", "dl"}, 96},      {{"rsi", "esi", "si", "sil"}, 104},
    {{"rdi", "edi", "di", "dil"}, 112},    {{"rip", "eip", "ip", ""}, 128},
    {{"rsp", "esp", "sp", "spl"}, 152},
};

// A signed integer (decimal or 0x hex) at the front of `s`, consumed.
bool take_int(std::string_view& s, int64_t& out) {
  bool neg = false;
  std::string_view t = s;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (ec != std::errc() || end == t.data()) return false;
  out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  s = std::string_view(end, t.data() + t.size() - end);
  return true;
}

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// A register name at the front of `s` (after `%` on x86-64), consumed.
bool take_reg(std::string_view& s, int& offset, UsdtArch arch) {
  size_t n = 0;
  if (arch == UsdtArch::X86_64) {
    if (s.empty() || s[0] != '%') return false;
    n = 1;
  }
  const size_t from = n;
  while (n < s.size() && is_name_char(s[n])) ++n;
  offset = pt_regs_offset(s.substr(from, n - from), arch);
  s.remove_prefix(n);
  return offset >= 0;
}

bool take(std::string_view& s, char c) {
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  if (s.empty() || s[0] != c) return false;
  s.remove_prefix(1);
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  return true;
}

// arm64 LOCATION: CONST, REG, [REG], [REG, OFF].
std::variant<UsdtArgSpec, std::string> parse_arm64_location(std::string_view text,
                                                            std::string_view s, UsdtArgSpec a) {
  int reg = -1;
  if (take(s, '[')) {
    if (!take_reg(s, reg, UsdtArch::Arm64)) {
      return fmt::format("argument \"{}\": unknown register", text);
    }
    int64_t off = 0;
    if (take(s, ',') && !take_int(s, off)) {
      return fmt::format("argument \"{}\": bad offset", text);
    }
    if (!take(s, ']')) return fmt::format("argument \"{}\": expected ]", text);
    a.arg_type = kUsdtArgRegDeref;
    a.val_off = static_cast<uint64_t>(off);
  } else if (!s.empty() && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) {
    int64_t v = 0;
    if (!take_int(s, v)) return fmt::format("argument \"{}\": bad constant", text);
    a.arg_type = kUsdtArgConst;
    a.val_off = static_cast<uint64_t>(v);
  } else {
    if (!take_reg(s, reg, UsdtArch::Arm64)) {
      return fmt::format("argument \"{}\": unknown register", text);
    }
    a.arg_type = kUsdtArgReg;
  }
  if (!s.empty()) return fmt::format("argument \"{}\": trailing \"{}\"", text, s);
  a.reg_off = static_cast<int16_t>(reg < 0 ? 0 : reg);
  return a;
}

// One argument: SIZE@LOCATION, LOCATION (x86-64) one of $CONST, %REG, OFF(%REG), (%REG).
std::variant<UsdtArgSpec, std::string> parse_arg(std::string_view text, UsdtArch arch) {
  std::string_view s = text;
  int64_t size = 0;
  if (!take_int(s, size) || s.empty() || s[0] != '@') {
    return fmt::format("argument \"{}\": no SIZE@ prefix", text);
  }
  s.remove_prefix(1);
  const int64_t bytes = size < 0 ? -size : size;
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) {
    return fmt::format("argument \"{}\": size {} is not 1, 2, 4 or 8", text, size);
  }
  UsdtArgSpec a;
  a.arg_signed = size < 0;
  a.arg_bitshift = static_cast<int8_t>(64 - bytes * 8);
  if (arch == UsdtArch::Arm64) return parse_arm64_location(text, s, a);
  int reg = -1;
  if (!s.empty() && s[0] == '$') {
    s.remove_prefix(1);
    int64_t v = 0;
    if (!take_int(s, v)) return fmt::format("argument \"{}\": bad constant", text);
    a.arg_type = kUsdtArgConst;
    a.val_off = static_cast<uint64_t>(v);
  } else if (!s.empty() && s[0] == '%') {
    if (!take_reg(s, reg, arch)) return fmt::format("argument \"{}\": unknown register", text);
    a.arg_type = kUsdtArgReg;
  } else {
    int64_t off = 0;
    if (!s.empty() && s[0] != '(' && !take_int(s, off)) {
      return fmt::format("argument \"{}\": unsupported location", text);
    }
    if (s.empty() || s[0] != '(') return fmt::format("argument \"{}\": expected (%REG)", text);
    s.remove_prefix(1);
    if (!take_reg(s, reg, arch)) return fmt::format("argument \"{}\": unknown register", text);
    if (s.empty() || s[0] != ')') return fmt::format("argument \"{}\": expected )", text);
    s.remove_prefix(1);
    a.arg_type = kUsdtArgRegDeref;
    a.val_off = static_cast<uint64_t>(off);
  }
  if (!s.empty()) return fmt::format("argument \"{}\": trailing \"{}\"", text, s);
  a.reg_off = static_cast<int16_t>(reg < 0 ? 0 : reg);
  return a;
}

}  // namespace

int pt_regs_offset(std::string_view reg, UsdtArch arch) {
  if (reg.empty()) return -1;
  if (arch == UsdtArch::Arm64) {
    // struct pt_regs of arm64 begins with user_pt_regs: regs[31], sp, pc.
    if (reg == "sp") return 31 * 8;
    if (reg.size() < 2 || (reg[0] != 'x' && reg[0] != 'w')) return -1;
    unsigned n = 0;
    auto [end, ec] = std::from_chars(reg.data() + 1, reg.data() + reg.size(), n);
    if (ec != std::errc() || end != reg.data() + reg.size() || n > 30) return -1;
    return static_cast<int>(n * 8);
  }
  for (const Reg& r : kRegs) {
    for (std::string_view n : r.names) {
      if (n == reg) return r.offset;
    }
  }
  return -1;
}

std::variant<UsdtSpec, std::string> parse_usdt_args(std::string_view args, UsdtArch arch) {
  UsdtSpec spec;
  size_t pos = 0;
  while (true) {
    while (pos < args.size() && args[pos] == ' ') ++pos;
    if (pos >= args.size()) break;
    // Arguments are separated by spaces, except inside arm64's brackets ("[sp, 12]").
    size_t end = pos;
    for (int depth = 0; end < args.size() && (depth > 0 || args[end] != ' '); ++end) {
      depth += args[end] == '[' ? 1 : args[end] == ']' ? -1 : 0;
    }
    if (spec.arg_cnt == kUsdtMaxArgs) {
      return fmt::format("more than {} arguments in \"{}\"", kUsdtMaxArgs, args);
    }
    auto arg = parse_arg(args.substr(pos, end - pos), arch);
    if (auto* err = std::get_if<std::string>(&arg)) return std::move(*err);
    spec.args[spec.arg_cnt++] = std::get<UsdtArgSpec>(arg);
    pos = end;
  }
  return spec;
}

}  // namespace tailcause::probes
