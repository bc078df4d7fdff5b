// SPDX-License-Identifier: Apache-2.0
#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace tailcause::cli {
namespace {

constexpr auto kTerminalInterval = std::chrono::milliseconds(100);
constexpr auto kLineInterval = std::chrono::seconds(5);
constexpr size_t kBarWidth = 30;

std::string bar(double elapsed_seconds, double total_seconds) {
  const double share =
      total_seconds > 0 ? std::clamp(elapsed_seconds / total_seconds, 0.0, 1.0) : 1.0;
  const auto filled = static_cast<size_t>(std::floor(share * static_cast<double>(kBarWidth)));
  return "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "]";
}

}  // namespace

Progress::Progress(std::string what, double total_seconds, std::FILE* out)
    : what_(std::move(what)),
      total_(total_seconds),
      out_(out),
      tty_(::isatty(::fileno(out)) == 1) {}

Progress::~Progress() {
  // An exception path: leave the terminal's line clean.
  if (tty_ && drawn_ && !finished_) fmt::print(out_, "\r\x1b[K");
}

void Progress::update(double elapsed_seconds, const std::string& status) {
  if (finished_) return;
  const auto now = Clock::now();
  const bool first = !drawn_;
  if (!first && now - last_draw_ <
                    (tty_ ? Clock::duration(kTerminalInterval) : Clock::duration(kLineInterval)))
    return;
  last_draw_ = now;
  drawn_ = true;
  const double shown = std::min(elapsed_seconds, total_);
  if (tty_) {
    fmt::print(out_, "\r{} {} {:.0f}/{:.0f} s  {}\x1b[K", what_, bar(elapsed_seconds, total_),
               std::floor(shown), total_, status);
  } else {
    fmt::print(out_, "tailcause: {}: {:.0f} of {:.0f} s, {}\n", what_, std::floor(shown), total_,
               status);
  }
  std::fflush(out_);
}

void Progress::finish(const std::string& summary) {
  if (finished_) return;
  finished_ = true;
  if (tty_ && drawn_) fmt::print(out_, "\r\x1b[K");
  fmt::print(out_, "tailcause: {}\n", summary);
  std::fflush(out_);
}

}  // namespace tailcause::cli
