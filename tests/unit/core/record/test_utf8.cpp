// SPDX-License-Identifier: Apache-2.0
// The one strict UTF-8 decoder (core/record/utf8.h): the boundaries of every sequence length,
// overlongs, surrogates, code points past U+10FFFF, truncated and stray bytes, and how far a bad
// sequence is skipped.
#include <gtest/gtest.h>

#include <string>

#include "core/record/utf8.h"

namespace tailcause::core {
namespace {

TEST(Utf8, AcceptsValidAndRejectsMalformedSequences) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("tenant-a"));
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9"));               // é
  EXPECT_TRUE(valid_utf8("\xe6\x97\xa5\xe6\x9c\xac"));  // 日本
  EXPECT_TRUE(valid_utf8("\xf0\x9f\x98\x80"));          // an emoji
  EXPECT_FALSE(valid_utf8("\xff\xfe"));
  EXPECT_FALSE(valid_utf8("ab\xe6\x97"));  // cut short
  EXPECT_FALSE(valid_utf8("a\x80"));       // stray continuation byte
  EXPECT_FALSE(valid_utf8("\xc3(x"));      // a lead byte followed by no continuation
}

TEST(Utf8, AcceptsTheEdgesOfEachLength) {
  EXPECT_TRUE(valid_utf8(std::string("\0", 1)));  // U+0000
  EXPECT_TRUE(valid_utf8("\x7f"));                // U+007F
  EXPECT_TRUE(valid_utf8("\xc2\x80"));            // U+0080
  EXPECT_TRUE(valid_utf8("\xdf\xbf"));            // U+07FF
  EXPECT_TRUE(valid_utf8("\xe0\xa0\x80"));        // U+0800
  EXPECT_TRUE(valid_utf8("\xed\x9f\xbf"));        // U+D7FF, below the surrogates
  EXPECT_TRUE(valid_utf8("\xee\x80\x80"));        // U+E000, above them
  EXPECT_TRUE(valid_utf8("\xef\xbf\xbf"));        // U+FFFF
  EXPECT_TRUE(valid_utf8("\xf0\x90\x80\x80"));    // U+10000
  EXPECT_TRUE(valid_utf8("\xf4\x8f\xbf\xbf"));    // U+10FFFF
}

TEST(Utf8, RejectsOverlongForms) {
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));               // '/' in two bytes
  EXPECT_FALSE(valid_utf8("\xc1\xbf"));               // U+007F in two bytes
  EXPECT_FALSE(valid_utf8("\xe0\x80\xaf"));           // '/' in three bytes
  EXPECT_FALSE(valid_utf8("\xe0\x9f\xbf"));           // U+07FF in three bytes
  EXPECT_FALSE(valid_utf8("\xf0\x80\x80\xaf"));       // '/' in four bytes
  EXPECT_FALSE(valid_utf8("\xf0\x8f\xbf\xbf"));       // U+FFFF in four bytes
  EXPECT_FALSE(valid_utf8(std::string("\xc0\x80")));  // "modified UTF-8" NUL
}

TEST(Utf8, RejectsSurrogatesAndCodePointsPastTheLast) {
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));              // U+D800
  EXPECT_FALSE(valid_utf8("\xed\xbf\xbf"));              // U+DFFF
  EXPECT_FALSE(valid_utf8("\xed\xa0\xbd\xed\xb8\x80"));  // a CESU-8 pair
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));          // U+110000
  EXPECT_FALSE(valid_utf8("\xf5\x80\x80\x80"));          // a lead byte past F4
  EXPECT_FALSE(valid_utf8("\xf8\x88\x80\x80\x80"));      // the old five-byte form
}

TEST(Utf8, RejectsTruncatedSequences) {
  EXPECT_FALSE(valid_utf8("\xc3"));
  EXPECT_FALSE(valid_utf8("\xe2\x82"));
  EXPECT_FALSE(valid_utf8("\xf0\x9f\x98"));
  EXPECT_FALSE(valid_utf8("\xf0\x9f\x98x"));  // cut by an ASCII byte, not by the end
}

TEST(Utf8, DecodesCodePoints) {
  auto at0 = [](std::string_view s) { return decode_utf8(s, 0); };
  EXPECT_EQ(at0("A").code_point, U'A');
  EXPECT_EQ(at0("\xc3\xa9").code_point, U'\u00e9');
  EXPECT_EQ(at0("\xc3\xa9").length, 2u);
  EXPECT_EQ(at0("\xe2\x86\x92").code_point, U'\u2192');
  EXPECT_EQ(at0("\xf0\x9f\x98\x80").code_point, U'\U0001F600');
  EXPECT_EQ(at0("\xf4\x8f\xbf\xbf").code_point, U'\U0010FFFF');
  EXPECT_TRUE(at0("\xf4\x8f\xbf\xbf").valid);
  EXPECT_EQ(decode_utf8("ab\xe6\x97\xa5", 2).code_point, U'\u65e5');
}

TEST(Utf8, ABadSequenceIsOneReplacementOverItsMaximalSubpart) {
  auto at0 = [](std::string_view s) { return decode_utf8(s, 0); };
  for (const char* bad : {"\x80", "\xc0\xaf", "\xff", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xe2\x82", "\xe2(x"}) {
    const Utf8Char c = at0(bad);
    EXPECT_FALSE(c.valid) << bad;
    EXPECT_EQ(c.code_point, kReplacementCharacter) << bad;
    EXPECT_EQ(utf8_sequence_length(bad, 0), 0u) << bad;
  }
  // A lead that can never begin a valid sequence (C0, continuation bytes), or whose second byte
  // is out of its range (overlong, surrogate, past U+10FFFF), is one byte; a valid prefix cut
  // short is the whole prefix.
  EXPECT_EQ(at0("\xc0\xaf").length, 1u);
  EXPECT_EQ(at0("\xe0\x80\xaf").length, 1u);
  EXPECT_EQ(at0("\xed\xa0\x80").length, 1u);
  EXPECT_EQ(at0("\xf4\x90\x80\x80").length, 1u);
  EXPECT_EQ(at0("\xe2\x82").length, 2u);
  EXPECT_EQ(at0("\xf0\x9f\x98x").length, 3u);
  EXPECT_EQ(utf8_sequence_length("\xe2\x86\x92", 0), 3u);
}

TEST(Utf8, CountsWhatADecoderShows) {
  EXPECT_EQ(utf8_code_points(""), 0u);
  EXPECT_EQ(utf8_code_points("12:00:00"), 8u);
  EXPECT_EQ(utf8_code_points("caf\xc3\xa9 \xe2\x86\x92"), 6u);
  EXPECT_EQ(utf8_code_points("a\xc0\xafz"), 4u);  // two bad bytes, two replacements
  EXPECT_EQ(utf8_code_points("a\xe2\x82z"), 3u);  // one cut sequence, one replacement
}

TEST(Utf8, TrimsOnlyAnIncompleteTrailingSequence) {
  EXPECT_EQ(trim_partial_utf8("abc\xe6\x97"), "abc");
  EXPECT_EQ(trim_partial_utf8("ab\xf0\x9f"), "ab");
  EXPECT_EQ(trim_partial_utf8("abc\xe6\x97\xa5"), "abc\xe6\x97\xa5");
  EXPECT_EQ(trim_partial_utf8("abc"), "abc");
  EXPECT_EQ(trim_partial_utf8(""), "");
  EXPECT_EQ(trim_partial_utf8("ab\xff"), "ab\xff");  // invalid, not partial: left to the validator
}

}  // namespace
}  // namespace tailcause::core
