// SPDX-License-Identifier: Apache-2.0
#include "core/record/utf8.h"

namespace tailcause::core {
namespace {

// Length of the sequence a lead byte starts, 0 for a byte that cannot lead one.
size_t lead_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Char c = decode_utf8(s, i);
    if (!c.valid) return false;
    i += c.length;
  }
  return true;
}

std::string_view trim_partial_utf8(std::string_view s) {
  // Walk back over at most three continuation bytes to the last lead byte; cut it when the
  // sequence it leads needs more bytes than are left.
  size_t start = s.size();
  for (size_t back = 0; back < 4 && start > 0; ++back) {
    const auto c = static_cast<unsigned char>(s[start - 1]);
    --start;
    if ((c & 0xc0) != 0x80) {
      const size_t len = lead_length(c);
      return len > s.size() - start ? s.substr(0, start) : s;
    }
  }
  return s;
}

size_t utf8_code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) i += decode_utf8(s, i).length;
  return n;
}

}  // namespace tailcause::core
