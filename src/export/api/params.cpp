// SPDX-License-Identifier: Apache-2.0
#include "export/api/params.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tailcause::exporter::api {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding (RFC 3986, 2.1): %XX with two hex digits is that byte; anything else, '+'
// included, stays as sent. By hand: Debian 12's Boost (1.74) has no URL library yet.
std::string unescape(std::string_view raw) {
  std::string s;
  s.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const int hi = raw[i] == '%' && i + 2 < raw.size() ? hex_digit(raw[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit(raw[i + 2]) : -1;
    if (lo < 0) {
      s += raw[i];
      continue;
    }
    s += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return s;
}

// For error messages: the value as sent, cut short, printable ASCII without markup or quotes
// (a client may show the message in a page).
std::string shown(std::string_view v) {
  static constexpr std::string_view kUnsafe = "\"\\<>&'`";
  std::string out;
  for (char c : v.substr(0, 40))
    out += (c >= 0x20 && c < 0x7f && kUnsafe.find(c) == std::string_view::npos) ? c : '?';
  if (v.size() > 40) out += "...";
  return out;
}

}  // namespace

Reply json_reply(const nlohmann::json& body) {
  // Invalid UTF-8 from a label (it should not happen: the SDK checks) is replaced, never thrown.
  return {200, "application/json",
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

Reply error_reply(unsigned status, const std::string& message) {
  return {status, "application/json",
          nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace) +
              "\n"};
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '/' || c == '@' || c == '-';
  });
}

Params Params::parse(std::string_view query, std::initializer_list<std::string_view> allowed) {
  Params p;
  if (query.size() > kMaxParams * (kMaxValueBytes + kMaxNameBytes))
    throw BadRequest("query string too long");
  size_t count = 0;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    if (++count > kMaxParams) throw BadRequest(fmt::format("more than {} parameters", kMaxParams));
    const size_t eq = part.find('=');
    const std::string key = unescape(part.substr(0, eq));
    const std::string value =
        eq == std::string_view::npos ? std::string{} : unescape(part.substr(eq + 1));
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string known;
      for (auto a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
      throw BadRequest(fmt::format("unknown parameter \"{}\" (known here: {})", shown(key),
                                   known.empty() ? "none" : known));
    }
    if (value.empty()) throw BadRequest(fmt::format("parameter {} has no value", key));
    if (value.size() > kMaxValueBytes)
      throw BadRequest(fmt::format("parameter {} is longer than {} bytes", key, kMaxValueBytes));
    if (!p.values_.emplace(key, value).second)
      throw BadRequest(fmt::format("parameter {} given twice", key));
  }
  return p;
}

std::optional<std::string> Params::name(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  if (!valid_name(it->second)) {
    throw BadRequest(
        fmt::format("{}=\"{}\": not a name (1 to {} characters of A-Z a-z 0-9 _ . : / @ -)", key,
                    shown(it->second), kMaxNameBytes));
  }
  return it->second;
}

int64_t Params::integer(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc{} || end != v.data() + v.size() || out < lo || out > hi) {
    throw BadRequest(
        fmt::format("{}=\"{}\": want a whole number from {} to {}", key, shown(v), lo, hi));
  }
  return out;
}

std::optional<double> Params::number(const std::string& key, double lo, double hi) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  const std::string& v = it->second;
  double out = 0;
  const auto [end, ec] =
      std::from_chars(v.data(), v.data() + v.size(), out, std::chars_format::fixed);
  if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(out) || out < lo ||
      out > hi) {
    throw BadRequest(fmt::format("{}=\"{}\": want a number from {} to {}", key, shown(v), lo, hi));
  }
  return out;
}

std::string Params::choice(const std::string& key, std::initializer_list<std::string_view> choices,
                           std::string fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  if (std::find(choices.begin(), choices.end(), it->second) == choices.end()) {
    std::string known;
    for (auto c : choices) known += (known.empty() ? "" : ", ") + std::string(c);
    throw BadRequest(fmt::format("{}=\"{}\": want one of {}", key, shown(it->second), known));
  }
  return it->second;
}

}  // namespace tailcause::exporter::api
