// SPDX-License-Identifier: Apache-2.0
// The JSON API's replies and its query parameters. Anyone who reaches the port can send any
// query, so every parameter is checked before it is used: only the endpoint's own names, each
// once, values of bounded length, names from a strict charset, numbers within a range. Anything
// else is a BadRequest, answered 400 with a JSON error and no other effect.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tailcause::exporter::api {

struct Reply {
  unsigned status = 200;
  std::string content_type;
  std::string body;
};

// 200 with the JSON text; 4xx with {"error": message}.
Reply json_reply(const nlohmann::json& body);
Reply error_reply(unsigned status, const std::string& message);

struct BadRequest : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr size_t kMaxParams = 16;
inline constexpr size_t kMaxValueBytes = 256;
inline constexpr size_t kMaxNameBytes = 128;

// True for 1..kMaxNameBytes characters of [A-Za-z0-9_.:/@-] (tenants, stages, cgroups, trace ids).
bool valid_name(std::string_view s);

class Params {
 public:
  // Parses a raw query string ("tenant=ta&since=300"), percent-decoding names and values.
  // Throws BadRequest for a name not in `allowed`, a repeated name, too many parameters, an
  // over-long or malformed one.
  static Params parse(std::string_view query, std::initializer_list<std::string_view> allowed);

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  // A name (valid_name), or nullopt when absent.
  std::optional<std::string> name(const std::string& key) const;
  // A whole number within [lo, hi], or `fallback` when absent.
  int64_t integer(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const;
  // A decimal number within [lo, hi] ("0.25"), or nullopt when absent.
  std::optional<double> number(const std::string& key, double lo, double hi) const;
  // One of `choices`, or `fallback` when absent.
  std::string choice(const std::string& key, std::initializer_list<std::string_view> choices,
                     std::string fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace tailcause::exporter::api
