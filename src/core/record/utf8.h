// SPDX-License-Identifier: Apache-2.0
// The one strict UTF-8 decoder (RFC 3629) every layer uses: labels from the SDK, the breaker
// socket's lines, the Prometheus exposition and the heatmap's text. Overlong forms, UTF-16
// surrogates (U+D800..U+DFFF), code points past U+10FFFF and truncated sequences are invalid.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <string_view>

namespace tailcause::core {

inline constexpr char32_t kReplacementCharacter = 0xfffd;

// One step of decoding: a code point, or a bad sequence shown as U+FFFD.
struct Utf8Char {
  char32_t code_point = kReplacementCharacter;
  // Bytes consumed, 1..4. A bad sequence consumes its maximal subpart (Unicode 3.9, U+FFFD
  // substitution): the lead byte and the continuation bytes that could still have begun a
  // valid sequence, at least one byte.
  size_t length = 1;
  bool valid = false;
};

// The character at s[at]; `at` must be below s.size().
inline Utf8Char decode_utf8(std::string_view s, size_t at) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[at + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1, true};
  size_t length = 0;
  char32_t cp = 0;
  unsigned char low = 0x80, high = 0xbf;  // the range of the next byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    cp = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    cp = lead & 0x0f;
    if (lead == 0xe0) low = 0xa0;   // overlong below U+0800
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    cp = lead & 0x07;
    if (lead == 0xf0) low = 0x90;   // overlong below U+10000
    if (lead == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return {};  // a continuation byte, an overlong lead (C0, C1) or F5..FF
  }
  for (size_t k = 1; k < length; ++k) {
    if (at + k >= s.size() || byte(k) < low || byte(k) > high) return {kReplacementCharacter, k};
    cp = cp << 6 | (byte(k) & 0x3f);
    low = 0x80;
    high = 0xbf;
  }
  return {cp, length, true};
}

// Length of the valid sequence at s[at] (at < s.size()), 0 when the bytes there are not one.
inline size_t utf8_sequence_length(std::string_view s, size_t at) {
  const Utf8Char c = decode_utf8(s, at);
  return c.valid ? c.length : 0;
}

bool valid_utf8(std::string_view s);
// Drops an incomplete multi-byte sequence at the end (what cutting a string at N bytes leaves).
std::string_view trim_partial_utf8(std::string_view s);
// Characters as decode_utf8 steps through them: code points, each bad sequence one U+FFFD.
size_t utf8_code_points(std::string_view s);

}  // namespace tailcause::core
