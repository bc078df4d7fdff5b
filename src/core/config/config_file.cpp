// SPDX-License-Identifier: Apache-2.0
// Reading the configuration file itself: only a regular file, only so many bytes. A directory
// put in its place must not read as an empty file (every default applied on SIGHUP), and a
// FIFO or /dev/zero must not hang or exhaust the daemon.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/config/config.h"
#include "core/config/config_yaml.h"

namespace tailcause::core {

std::string read_config_file(const std::string& path) {
  auto fail = [&](const std::string& why) {
    return ConfigError(fmt::format("{}: cannot read the configuration file: {}", path, why));
  };
  // O_NONBLOCK: opening a FIFO with no writer must not block; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw fail(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw fail("it is a directory, not a regular file");
  if (!S_ISREG(st.st_mode)) throw fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) {
    throw fail(fmt::format("{} bytes, more than the {} a configuration may hold", st.st_size,
                           kMaxConfigBytes));
  }
  // Read at most one byte past the cap: the file may grow between fstat() and read().
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fail(std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) {
      throw fail(fmt::format("more than the {} bytes a configuration may hold", kMaxConfigBytes));
    }
  }
  return text;
}

Config load_config_file(const std::string& path) { return load_config_file(path, Config{}); }

Config load_config_file(const std::string& path, Config base) {
  Config c = parse_config(read_config_file(path), path, std::move(base));
  load_recipe_files(c.attrib, path);
  if (!c.glitch.slo_file.empty()) {
    std::string slo = c.glitch.slo_file;
    if (slo.front() != '/') {
      const auto slash = path.rfind('/');
      if (slash != std::string::npos) slo = path.substr(0, slash + 1) + slo;
    }
    std::string text;
    try {
      text = read_config_file(slo);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: glitch.slo_file: {}", path, e.what()));
    }
    apply_slo_file(text, slo, c.glitch);
  }
  return c;
}

}  // namespace tailcause::core
