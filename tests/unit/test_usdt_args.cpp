// SPDX-License-Identifier: Apache-2.0
// USDT argument strings as compilers write them into SDT notes, turned into the specs the BPF
// side's bpf_usdt_arg() reads.
#include <gtest/gtest.h>

#include "probes/usdt_args.h"

namespace tailcause::probes {
namespace {

UsdtSpec parse(std::string_view s) {
  auto r = parse_usdt_args(s, UsdtArch::X86_64);
  if (auto* err = std::get_if<std::string>(&r)) ADD_FAILURE() << s << ": " << *err;
  return std::get_if<UsdtSpec>(&r) ? std::get<UsdtSpec>(r) : UsdtSpec{};
}

std::string error_of(std::string_view s) {
  auto r = parse_usdt_args(s, UsdtArch::X86_64);
  return std::get_if<std::string>(&r) ? std::get<std::string>(r) : "";
}

TEST(UsdtArgs, RegisterDereferenceAndConstant) {
  const UsdtSpec s = parse("8@%rdi -4@-20(%rbp) 8@$5 -8@%rax 1@(%rsi) -2@$-9");
  ASSERT_EQ(s.arg_cnt, 6);
  EXPECT_EQ(s.args[0].arg_type, kUsdtArgReg);
  EXPECT_EQ(s.args[0].reg_off, 112);
  EXPECT_FALSE(s.args[0].arg_signed);
  EXPECT_EQ(s.args[0].arg_bitshift, 0);

  EXPECT_EQ(s.args[1].arg_type, kUsdtArgRegDeref);
  EXPECT_EQ(s.args[1].reg_off, 32);  // rbp
  EXPECT_EQ(static_cast<int64_t>(s.args[1].val_off), -20);
  EXPECT_TRUE(s.args[1].arg_signed);
  EXPECT_EQ(s.args[1].arg_bitshift, 32);

  EXPECT_EQ(s.args[2].arg_type, kUsdtArgConst);
  EXPECT_EQ(s.args[2].val_off, 5u);

  EXPECT_EQ(s.args[3].reg_off, 80);  // rax
  EXPECT_TRUE(s.args[3].arg_signed);

  EXPECT_EQ(s.args[4].arg_type, kUsdtArgRegDeref);
  EXPECT_EQ(s.args[4].reg_off, 104);  // rsi
  EXPECT_EQ(s.args[4].val_off, 0u);
  EXPECT_EQ(s.args[4].arg_bitshift, 56);

  EXPECT_EQ(static_cast<int64_t>(s.args[5].val_off), -9);
  EXPECT_EQ(s.args[5].arg_bitshift, 48);
}

TEST(UsdtArgs, NarrowRegistersShareTheirFullRegistersSlot) {
  for (auto [name, off] : {std::pair{"eax", 80},
                           {"al", 80},
                           {"r8d", 72},
                           {"r15b", 0},
                           {"sil", 104},
                           {"rsp", 152},
                           {"rip", 128},
                           {"r11w", 48}}) {
    EXPECT_EQ(pt_regs_offset(name, UsdtArch::X86_64), off) << name;
  }
  EXPECT_EQ(pt_regs_offset("xmm0", UsdtArch::X86_64), -1);
  EXPECT_EQ(pt_regs_offset("", UsdtArch::X86_64), -1);
  EXPECT_EQ(parse("-4@%r9d 4@0x10(%r12)").args[1].val_off, 0x10u);
}

TEST(UsdtArgs, NoArgumentsIsAnEmptySpec) {
  EXPECT_EQ(parse("").arg_cnt, 0);
  EXPECT_EQ(parse("  ").arg_cnt, 0);
}

TEST(UsdtArgs, WhatCannotBeReadIsAnErrorNamingIt) {
  EXPECT_NE(error_of("%rdi").find("SIZE@"), std::string::npos);
  EXPECT_NE(error_of("3@%rdi").find("size 3"), std::string::npos);
  EXPECT_NE(error_of("8@%xmm0").find("unknown register"), std::string::npos);
  EXPECT_NE(error_of("8@(%rax,%rbx,8)").find("expected )"), std::string::npos);
  EXPECT_NE(error_of("8@foo(%rip)").find("unsupported"), std::string::npos);
  EXPECT_NE(error_of("8@$x").find("bad constant"), std::string::npos);
  EXPECT_NE(error_of("8@%rdi)").find("trailing"), std::string::npos);
  std::string thirteen;
  for (int i = 0; i < 13; ++i) thirteen += "8@%rdi ";
  EXPECT_NE(error_of(thirteen).find("more than 12"), std::string::npos);
  EXPECT_EQ(parse(thirteen.substr(0, 12 * 7)).arg_cnt, 12);
}

}  // namespace
}  // namespace tailcause::probes

namespace tailcause::probes {
namespace {

TEST(UsdtArgs, Arm64Syntax) {
  auto r = parse_usdt_args("8@x0 -4@[sp, 12] 8@[x29] 4@5 -8@[x1, -8] 4@w3", UsdtArch::Arm64);
  ASSERT_TRUE(std::holds_alternative<UsdtSpec>(r)) << std::get<std::string>(r);
  const UsdtSpec& s = std::get<UsdtSpec>(r);
  ASSERT_EQ(s.arg_cnt, 6);
  EXPECT_EQ(s.args[0].arg_type, kUsdtArgReg);
  EXPECT_EQ(s.args[0].reg_off, 0);
  EXPECT_EQ(s.args[1].arg_type, kUsdtArgRegDeref);
  EXPECT_EQ(s.args[1].reg_off, 248);  // sp
  EXPECT_EQ(s.args[1].val_off, 12u);
  EXPECT_TRUE(s.args[1].arg_signed);
  EXPECT_EQ(s.args[2].reg_off, 29 * 8);
  EXPECT_EQ(s.args[2].val_off, 0u);
  EXPECT_EQ(s.args[3].arg_type, kUsdtArgConst);
  EXPECT_EQ(s.args[3].val_off, 5u);
  EXPECT_EQ(static_cast<int64_t>(s.args[4].val_off), -8);
  EXPECT_EQ(s.args[5].reg_off, 24);
  EXPECT_EQ(pt_regs_offset("x31", UsdtArch::Arm64), -1);
  EXPECT_EQ(pt_regs_offset("rax", UsdtArch::Arm64), -1);
  EXPECT_TRUE(std::holds_alternative<std::string>(parse_usdt_args("8@[x0", UsdtArch::Arm64)));
  EXPECT_TRUE(std::holds_alternative<std::string>(parse_usdt_args("8@%rdi", UsdtArch::Arm64)));
}

}  // namespace
}  // namespace tailcause::probes
