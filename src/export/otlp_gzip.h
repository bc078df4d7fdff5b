// SPDX-License-Identifier: Apache-2.0
// gzip (RFC 1952) of an OTLP/HTTP request body, sent with Content-Encoding: gzip
// (otlp.compression). zlib does the work; the inverse is here for the tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tailcause::exporter {

// The gzip member holding `data` (zlib's default level). Throws std::runtime_error when zlib
// fails (out of memory).
std::string gzip_compress(std::string_view data);

// The data of a gzip member; nullopt when it is not one, is cut short, or would exceed
// `max_bytes` once inflated.
std::optional<std::string> gzip_decompress(std::string_view data, size_t max_bytes = 64 << 20);

}  // namespace tailcause::exporter
