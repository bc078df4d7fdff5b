// SPDX-License-Identifier: Apache-2.0
// libFuzzer: ring-buffer records as the daemon decodes them. The SDK fills them from inside the
// traced (untrusted) process, so names, trace ids and sizes are hostile; label values must come
// out as valid UTF-8 whatever went in.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "core/record/stage_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailcause::core;
  (void)decode_record(std::span(reinterpret_cast<const std::byte*>(data), size));
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  bool invalid = false;
  const std::string value = label_value(raw, size % 2 == 0, &invalid);
  if (!valid_utf8(value)) std::abort();
  // A valid label cut anywhere, then trimmed, stays valid (what truncation in the SDK does).
  if (!valid_utf8(
          trim_partial_utf8(std::string_view(value).substr(0, size % (value.size() + 1))))) {
    std::abort();
  }
  if (!valid_utf8(stage_label(size > 0 ? data[0] % 12 : 0, raw, false, &invalid))) std::abort();
  if (auto id = normalize_trace_id(raw); id && id->size() != 32) std::abort();
  return 0;
}
