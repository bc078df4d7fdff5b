// SPDX-License-Identifier: Apache-2.0
// `tailcause top`: a live view over the JSON API (core/top_view lays out the screen). On a
// terminal: the alternate screen in raw mode, redrawn every --interval, keys sort, `q` quits;
// the terminal is restored on every way out (q, Ctrl-C, SIGTERM, an error). Not a terminal
// (or --once): one plain frame on stdout.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <algorithm>

#include "cli/api_client.h"
#include "cli/commands.h"
#include "core/report/top_view.h"

namespace tailcause::cli {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_stop_signal(int) { g_stop = 1; }

// Raw mode and the alternate screen while alive; the terminal as it was afterwards.
class Terminal {
 public:
  Terminal() {
    if (tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fmt::print("\x1b[?1049h\x1b[?25l");
    std::fflush(stdout);
  }
  ~Terminal() {
    fmt::print("\x1b[?25h\x1b[?1049l");
    std::fflush(stdout);
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

 private:
  termios saved_{};
  bool restore_ = false;
};

std::string clock_now() {
  const time_t t = time(nullptr);
  tm local{};
  localtime_r(&t, &local);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
}

std::vector<core::TopRow> fetch(ApiClient& api, std::string& status) {
  try {
    auto rows =
        core::top_rows(api.get("/api/v1/stages?since=60&step=60"),
                       api.get("/api/v1/caches?since=60"), api.get("/api/v1/contention?since=60"));
    status = "updated " + clock_now();
    return rows;
  } catch (const std::exception& e) {
    status = std::string("error: ") + e.what();
    return {};
  }
}

// One frame at the terminal's current size, drawn over the last one.
void draw(const std::vector<core::TopRow>& rows, core::TopScreen& screen) {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    screen.width = ws.ws_col;
    screen.height = ws.ws_row;
  }
  std::string frame = "\x1b[H";
  for (const auto& line : core::render_top(rows, screen)) frame += line + "\x1b[K\r\n";
  frame += "\x1b[J";
  fmt::print("{}", frame);
  std::fflush(stdout);
}

// Not a terminal, or --once: one plain frame on stdout; 1 when the API could not be read.
int print_once(ApiClient& api, core::TopScreen& screen) {
  screen.width = 200;
  screen.height = 10000;
  screen.color = false;
  auto rows = fetch(api, screen.status);
  for (const auto& line : core::render_top(rows, screen)) fmt::print("{}\n", line);
  return screen.status.rfind("error", 0) == 0 ? 1 : 0;
}

// The live view until q, Ctrl-C or a stop signal: fetch every interval, redraw on a key, a
// resize or new rows.
void run_live(ApiClient& api, core::TopScreen& screen, int interval_ms) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  Terminal terminal;
  using Clock = std::chrono::steady_clock;
  auto next = Clock::now();
  std::vector<core::TopRow> rows;
  bool redraw = true;
  while (!g_stop) {
    if (Clock::now() >= next) {
      rows = fetch(api, screen.status);
      next = Clock::now() + std::chrono::milliseconds(interval_ms);
      redraw = true;
    }
    if (redraw) draw(rows, screen);
    redraw = false;
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    if (poll(&in, 1, static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 250))) <= 0) {
      redraw = true;  // a resize shows at once
      continue;
    }
    char key = 0;
    if (read(STDIN_FILENO, &key, 1) != 1) continue;
    if (key == 'q' || key == 'Q' || key == 3 /* Ctrl-C in raw mode */) return;
    if (auto sort = core::top_sort_for_key(key)) {
      screen.sort = *sort;
      redraw = true;
    }
  }
}

}  // namespace

int run_top(const TopOptions& options) {
  ApiClient api(options.url);
  core::TopScreen screen;
  screen.source = options.url;
  screen.sort = core::top_sort_for_key(options.sort.empty() ? 'p' : options.sort[0])
                    .value_or(core::TopSort::p99);
  const char* no_color = std::getenv("NO_COLOR");
  const bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
  screen.color = tty && !(no_color && *no_color) && !options.no_color;
  if (!tty || options.once) return print_once(api, screen);
  run_live(api, screen, options.interval_ms);
  return 0;
}

}  // namespace tailcause::cli
