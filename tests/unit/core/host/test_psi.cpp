// SPDX-License-Identifier: Apache-2.0
// core/psi: the text of /proc/pressure/* and <cgroup>/*.pressure, as kernels print it and as
// they never should.
#include <gtest/gtest.h>

#include <string>

#include "core/host/psi.h"

namespace tailcause::core {
namespace {

TEST(Psi, ReadsBothLines) {
  const auto p = parse_psi(
      "some avg10=0.72 avg60=0.13 avg300=0.02 total=192769\n"
      "full avg10=0.54 avg60=0.09 avg300=0.02 total=143753\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->some.total_us, 192769u);
  EXPECT_DOUBLE_EQ(p->some.avg10, 0.72);
  ASSERT_TRUE(p->full);
  EXPECT_EQ(p->full->total_us, 143753u);
  EXPECT_DOUBLE_EQ(p->full->avg10, 0.54);
}

TEST(Psi, AFullLineIsOptional) {
  // Node-wide cpu on kernels before 5.13, and any text cut right after the first line.
  const auto p = parse_psi("some avg10=100.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->some, (PsiLine{0, 100.0}));
  EXPECT_FALSE(p->full);
  // No final newline, blank lines, the lines the other way round: the same numbers.
  EXPECT_EQ(parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=5"),
            (Psi{{5, 0.0}, std::nullopt}));
  EXPECT_EQ(parse_psi("\nfull avg10=1.00 total=3\n\nsome avg10=2.00 total=7\n\n"),
            (Psi{{7, 2.0}, PsiLine{3, 1.0}}));
}

TEST(Psi, SkipsFieldsALaterKernelMightAdd) {
  const auto p = parse_psi("some avg10=0.10 avg60=0.20 avg300=0.30 total=9 avg3600=0.01\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->some.total_us, 9u);
}

TEST(Psi, TotalsUpToTheLargestCounter) {
  const auto p = parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->some.total_us, UINT64_MAX);
}

TEST(Psi, RefusesOverflow) {
  EXPECT_FALSE(parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n"));
  EXPECT_FALSE(parse_psi("some avg10=0.00 total=99999999999999999999999999999999\n"));
  EXPECT_FALSE(parse_psi("some avg10=100.01 total=1\n")) << "a share over 100%";
  EXPECT_FALSE(parse_psi("some avg10=1e400 total=1\n"));
  EXPECT_FALSE(parse_psi(std::string("some avg10=0.00 total=1 x=") + std::string(2000, '1')))
      << "over the size bound";
}

TEST(Psi, RefusesTruncatedText) {
  const std::string good =
      "some avg10=0.72 avg60=0.13 avg300=0.02 total=192769\n"
      "full avg10=0.54 avg60=0.09 avg300=0.02 total=143753\n";
  EXPECT_TRUE(parse_psi(good));
  EXPECT_FALSE(parse_psi(""));
  EXPECT_FALSE(parse_psi("\n\n"));
  EXPECT_FALSE(parse_psi("some"));
  EXPECT_FALSE(parse_psi("some "));
  EXPECT_FALSE(parse_psi("some avg10=0.72 avg60=0.13 avg300=0.02 tot"));
  EXPECT_FALSE(parse_psi("some avg10=0.72 avg60=0.13 avg300=0.02 total="));
  EXPECT_FALSE(parse_psi("some avg10=0.72 avg60=0.13 avg300=0.02\n")) << "no total";
  EXPECT_FALSE(parse_psi("some avg60=0.13 avg300=0.02 total=1\n")) << "no avg10";
  EXPECT_FALSE(parse_psi("some avg10=0. total=1\n"));
  // A cut inside the full line leaves a line without its total: refused, not read as none.
  EXPECT_FALSE(parse_psi(good.substr(0, good.size() - 10)));
  EXPECT_FALSE(parse_psi(good.substr(0, good.find("full") + 4)));
  // Only "full": no "some".
  EXPECT_FALSE(parse_psi(good.substr(good.find("full"))));
}

TEST(Psi, RefusesGarbage) {
  for (const char* text : {
           "hello world\n",
           "some avg10=-0.72 total=1\n",
           "some avg10=+0.72 total=1\n",
           "some avg10=0.72 total=-1\n",
           "some avg10=0.72 total=+1\n",
           "some avg10=0.72 total=0x10\n",
           "some avg10=0.72 total=12abc\n",
           "some avg10=inf total=1\n",
           "some avg10=nan total=1\n",
           "some avg10=1e1 total=1\n",
           "some avg10=.5 total=1\n",
           "some avg10=0..5 total=1\n",
           "some avg10=0.5.1 total=1\n",
           "some avg10=0.72 total=1 total=2\n",
           "some avg10=0.72 avg10=0.1 total=1\n",
           "some avg10=0.72 avg60=x total=1\n",
           "some avg10=0.72 =1 total=1\n",
           "some avg10=0.72 total 1\n",
           "some avg10=0.72 total=1 junk\n",
           "some avg10=0.72 TOTAL=1 total=1\n",
           "some avg10=0.72 total=1\nsome avg10=0.72 total=1\n",
           "some avg10=0.72 total=1\nfull avg10=0.72 total=1\nfull avg10=0.72 total=1\n",
           "some avg10=0.72 total=1\npartial avg10=0.72 total=1\n",
           "SOME avg10=0.72 total=1\n",
           "some\tavg10=0.72\ttotal=1\x01\n",
       }) {
    EXPECT_FALSE(parse_psi(text)) << text;
  }
  EXPECT_FALSE(parse_psi(std::string("some avg10=0.72 total=1\0\n", 25)));
  // Too many fields on a line, each valid.
  std::string many = "some avg10=0.00 total=1";
  for (int i = 0; i < 20; i++) many += " x" + std::to_string(i) + "=1";
  EXPECT_FALSE(parse_psi(many));
}

}  // namespace
}  // namespace tailcause::core
