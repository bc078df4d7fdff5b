// SPDX-License-Identifier: Apache-2.0
#include "core/detect/breaker_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/record/utf8.h"

namespace tailcause::core {

const char* breaker_error_name(BreakerError kind) {
  switch (kind) {
    case BreakerError::unknown_command: return "unknown_command";
    case BreakerError::arity: return "arity";
    case BreakerError::encoding: return "encoding";
    case BreakerError::too_long: return "too_long";
    case BreakerError::not_utf8: return "not_utf8";
    case BreakerError::incomplete: return "incomplete";
    case BreakerError::busy: return "busy";
    case BreakerError::internal: return "internal";
  }
  return "internal";
}

namespace {

bool is_control(unsigned char ch) { return ch < 0x20 || ch == 0x7f; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      i++;
      continue;
    }
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(i, end - i));
    i = end;
  }
  return fields;
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "key=N" -> N.
template <typename T>
bool parse_field(std::string_view field, std::string_view key, T& out) {
  if (field.size() <= key.size() || field.substr(0, key.size()) != key ||
      field[key.size()] != '=') {
    return false;
  }
  return parse_number(field.substr(key.size() + 1), out);
}

// A command name worth echoing in an error: short printable ASCII only.
std::string printable(std::string_view s) {
  if (s.size() > 32) return {};
  for (unsigned char ch : s) {
    if (ch <= ' ' || ch >= 0x7f || ch == '"') return {};
  }
  return fmt::format(" \"{}\"", s);
}

}  // namespace

std::variant<BreakerRequest, BreakerParseError> parse_breaker_request(std::string_view line) {
  if (line.size() + 1 > kBreakerMaxLine) {
    return BreakerParseError{BreakerError::too_long,
                             fmt::format("request longer than {} bytes", kBreakerMaxLine)};
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!valid_utf8(line)) return BreakerParseError{BreakerError::not_utf8, "request is not UTF-8"};
  for (unsigned char ch : line) {
    if (is_control(ch)) {
      return BreakerParseError{BreakerError::encoding,
                               fmt::format("raw control byte 0x{:02x}: percent-encode it", ch)};
    }
  }
  const auto fields = split_fields(line);
  if (fields.empty()) return BreakerParseError{BreakerError::unknown_command, "empty request"};
  const std::string_view command = fields[0];
  if (command == "ping" || command == "list") {
    if (fields.size() != 1) {
      return BreakerParseError{BreakerError::arity, fmt::format("{} takes no argument", command)};
    }
    BreakerRequest request;
    request.command = command == "ping" ? BreakerCommand::ping : BreakerCommand::list;
    return request;
  }
  if (command == "state" || command == "cache") {
    const bool state = command == "state";
    const std::string_view second = state ? "AGENT" : "CACHE";
    if (fields.size() != 3) {
      return BreakerParseError{BreakerError::arity,
                               fmt::format("usage: {} TENANT {}", command, second)};
    }
    auto tenant = breaker_percent_decode(fields[1]);
    if (!tenant) return BreakerParseError{BreakerError::encoding, "bad percent-encoding in TENANT"};
    auto name = breaker_percent_decode(fields[2]);
    if (!name) {
      return BreakerParseError{BreakerError::encoding,
                               fmt::format("bad percent-encoding in {}", second)};
    }
    if (state)
      return BreakerRequest{BreakerCommand::state, std::move(*tenant), std::move(*name), {}};
    return BreakerRequest{BreakerCommand::cache, std::move(*tenant), {}, std::move(*name)};
  }
  return BreakerParseError{
      BreakerError::unknown_command,
      fmt::format("command{} (expected state, list, cache or ping)", printable(command))};
}

uint64_t breaker_retry_ms(uint64_t retry_after_ns) {
  return retry_after_ns / 1'000'000 + (retry_after_ns % 1'000'000 != 0);
}

std::string format_breaker_state(BreakerState state, uint32_t consecutive,
                                 uint64_t retry_after_ms) {
  return fmt::format("ok {} consecutive={} retry_after_ms={}\n", breaker_state_name(state),
                     consecutive, retry_after_ms);
}

std::string format_breaker_list(const std::vector<BreakerView>& open) {
  std::string out;
  for (const auto& v : open) {
    if (v.state != BreakerState::open) continue;
    out += fmt::format("open {} {} retry_after_ms={}\n", breaker_percent_encode(v.tenant),
                       breaker_percent_encode(v.agent), breaker_retry_ms(v.retry_after_ns));
  }
  out += "end\n";
  return out;
}

std::string format_breaker_pong() { return "ok pong\n"; }

namespace {
uint32_t permille(double share) {
  return static_cast<uint32_t>(std::lround(std::clamp(share, 0.0, 1.0) * 1000));
}
}  // namespace

std::string format_cache_state(const CacheBreakdownStatus& status) {
  return fmt::format("ok {} competition_permille={} miss_permille={} lookups={}\n",
                     status.in_breakdown ? "breakdown" : "healthy", permille(status.competition),
                     permille(status.ratio), status.lookups);
}

std::string format_breaker_error(BreakerError kind, std::string_view detail) {
  std::string out = fmt::format("error {}", breaker_error_name(kind));
  if (!detail.empty()) {
    out += ' ';
    for (char ch : detail) out += (ch == '\n' || ch == '\r') ? ' ' : ch;
  }
  out += '\n';
  return out;
}

std::string answer_breaker_request(const CircuitBreaker& breaker, const BreakerRequest& request,
                                   uint64_t now_ns, const CacheBreakdownDetector* caches) {
  switch (request.command) {
    case BreakerCommand::cache: {
      CacheBreakdownStatus unseen;
      return format_cache_state(caches ? caches->status(request.tenant, request.cache, now_ns)
                                       : unseen);
    }
    case BreakerCommand::state: {
      const BreakerView v = breaker.view(request.tenant, request.agent, now_ns);
      return format_breaker_state(v.state, v.consecutive, breaker_retry_ms(v.retry_after_ns));
    }
    case BreakerCommand::list: return format_breaker_list(breaker.open_breakers(now_ns));
    case BreakerCommand::ping: break;
  }
  return format_breaker_pong();
}

std::string breaker_percent_encode(std::string_view raw) {
  if (raw.empty()) return "%";
  std::string out;
  for (size_t i = 0; i < raw.size();) {
    const auto ch = static_cast<unsigned char>(raw[i]);
    if (ch >= 0x80) {
      if (size_t n = utf8_sequence_length(raw, i)) {
        out.append(raw.substr(i, n));
        i += n;
        continue;
      }
    }
    if (ch == '%' || ch <= ' ' || ch >= 0x7f)
      out += fmt::format("%{:02X}", ch);
    else
      out += static_cast<char>(ch);
    i++;
  }
  return out;
}

std::optional<std::string> breaker_percent_decode(std::string_view token) {
  if (token == "%") return std::string();
  std::string out;
  for (size_t i = 0; i < token.size(); i++) {
    if (token[i] != '%') {
      out += token[i];
      continue;
    }
    if (i + 2 >= token.size()) return std::nullopt;  // truncated escape
    const int hi = hex_value(token[i + 1]), lo = hex_value(token[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string format_breaker_request(const BreakerRequest& request) {
  switch (request.command) {
    case BreakerCommand::state:
      return fmt::format("state {} {}\n", breaker_percent_encode(request.tenant),
                         breaker_percent_encode(request.agent));
    case BreakerCommand::cache:
      return fmt::format("cache {} {}\n", breaker_percent_encode(request.tenant),
                         breaker_percent_encode(request.cache));
    case BreakerCommand::list: return "list\n";
    case BreakerCommand::ping: break;
  }
  return "ping\n";
}

std::optional<BreakerStateReply> parse_breaker_state_reply(std::string_view line) {
  const auto f = split_fields(line);
  if (f.size() != 4 || f[0] != "ok") return std::nullopt;
  BreakerStateReply r;
  if (f[1] == "open")
    r.state = BreakerState::open;
  else if (f[1] != "closed")
    return std::nullopt;
  if (!parse_field(f[2], "consecutive", r.consecutive) ||
      !parse_field(f[3], "retry_after_ms", r.retry_after_ms)) {
    return std::nullopt;
  }
  return r;
}

std::optional<CacheStateReply> parse_cache_state_reply(std::string_view line) {
  const auto f = split_fields(line);
  if (f.size() != 5 || f[0] != "ok" || (f[1] != "healthy" && f[1] != "breakdown"))
    return std::nullopt;
  CacheStateReply r;
  r.breakdown = f[1] == "breakdown";
  if (!parse_field(f[2], "competition_permille", r.competition_permille) ||
      !parse_field(f[3], "miss_permille", r.miss_permille) ||
      !parse_field(f[4], "lookups", r.lookups) || r.competition_permille > 1000 ||
      r.miss_permille > 1000) {
    return std::nullopt;
  }
  return r;
}

std::optional<BreakerListLine> parse_breaker_list_line(std::string_view line) {
  const auto f = split_fields(line);
  if (f.size() == 1 && f[0] == "end") {
    BreakerListLine end;
    end.end = true;
    return end;
  }
  if (f.size() != 4 || f[0] != "open") return std::nullopt;
  auto tenant = breaker_percent_decode(f[1]);
  auto agent = breaker_percent_decode(f[2]);
  BreakerListLine r;
  if (!tenant || !agent || !parse_field(f[3], "retry_after_ms", r.retry_after_ms)) {
    return std::nullopt;
  }
  r.tenant = std::move(*tenant);
  r.agent = std::move(*agent);
  return r;
}

std::optional<BreakerError> parse_breaker_error_reply(std::string_view line) {
  const auto f = split_fields(line);
  if (f.size() < 2 || f[0] != "error") return std::nullopt;
  for (size_t k = 0; k < kBreakerErrorKinds; k++) {
    const auto kind = static_cast<BreakerError>(k);
    if (f[1] == breaker_error_name(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace tailcause::core
