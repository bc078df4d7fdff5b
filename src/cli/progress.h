// SPDX-License-Identifier: Apache-2.0
// A progress indicator on stderr while `diagnose` and `demo` collect: a bar redrawn in place
// when stderr is a terminal, otherwise (logs, CI) a plain line every few seconds.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace tailcause::cli {

class Progress {
 public:
  // `what` names the work ("collecting"); `total_seconds` is the expected duration.
  Progress(std::string what, double total_seconds, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Cheap to call often: a terminal is redrawn at most 10 times a second, other outputs get a
  // line every 5 s. `status` follows the bar ("3 glitches").
  void update(double elapsed_seconds, const std::string& status);
  // Clears the bar (a terminal) and prints `summary` on its own line, once.
  void finish(const std::string& summary);

  bool terminal() const { return tty_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  double total_;
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false, finished_ = false;
  Clock::time_point last_draw_{};
};

}  // namespace tailcause::cli
