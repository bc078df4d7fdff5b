// SPDX-License-Identifier: Apache-2.0
#include "export/breaker_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/host/clock.h"

namespace tailcause::exporter {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "tailcause-breaker-state";
constexpr const char* kVersion = "v1";
constexpr size_t kMaxFileBytes = 16 << 20;  // 4096 pairs take well under 2 MiB

std::string errno_text(int err) { return std::system_category().message(err); }

bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char ch : s) {
    if (ch <= ' ' || ch >= 0x7f) return false;
  }
  return true;
}

// Closes `fd` and removes `tmp` on every exit but a successful rename.
struct TempFile {
  std::string path;
  int fd = -1;
  bool renamed = false;
  ~TempFile() {
    if (fd >= 0) close(fd);
    if (!renamed && !path.empty()) unlink(path.c_str());
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw BreakerStoreError(fmt::format("breaker state file {}: {}", path, what));
}

struct Header {
  std::string boot_id;
  uint64_t monotonic_ns = 0;
};

std::optional<Header> parse_header(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string tok; in >> tok;) f.push_back(tok);
  if (f.size() != 4 || f[0] != kMagic || f[1] != kVersion) return std::nullopt;
  const std::string boot_key = "boot_id=", mono_key = "monotonic_ns=";
  if (f[2].rfind(boot_key, 0) != 0 || f[3].rfind(mono_key, 0) != 0) return std::nullopt;
  Header h;
  h.boot_id = f[2].substr(boot_key.size());
  const std::string mono = f[3].substr(mono_key.size());
  auto [p, ec] = std::from_chars(mono.data(), mono.data() + mono.size(), h.monotonic_ns);
  if (h.boot_id.empty() || mono.empty() || ec != std::errc() || p != mono.data() + mono.size()) {
    return std::nullopt;
  }
  return h;
}

}  // namespace

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id) || !is_token(id)) return "unknown";
  return id;
}

void save_breaker_state(const core::CircuitBreaker& breaker, const std::string& path,
                        uint64_t now_ns, const std::string& boot_id) {
  if (path.empty()) throw BreakerStoreError("breaker state file: empty path");
  const std::string id = is_token(boot_id) ? boot_id : "unknown";
  const std::string text =
      fmt::format("{} {} boot_id={} monotonic_ns={}\n", kMagic, kVersion, id, now_ns) +
      breaker.serialize();

  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) fail(path, fmt::format("cannot create directory {}: {}", dir.string(), ec.message()));
    chmod(dir.c_str(), 0755);
  }

  TempFile tmp;
  tmp.path = path + ".tmp-XXXXXX";
  tmp.fd = mkostemp(tmp.path.data(), O_CLOEXEC);  // created 0600
  if (tmp.fd < 0) {
    const int err = errno;
    tmp.path.clear();
    fail(path, fmt::format("cannot create a temporary file: {}", errno_text(err)));
  }
  if (fchmod(tmp.fd, 0600) != 0) fail(path, fmt::format("fchmod: {}", errno_text(errno)));
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(tmp.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(path, fmt::format("write: {}", errno_text(n < 0 ? errno : EIO)));
    done += static_cast<size_t>(n);
  }
  if (fsync(tmp.fd) != 0) fail(path, fmt::format("fsync: {}", errno_text(errno)));
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (close(fd) != 0) fail(path, fmt::format("close: {}", errno_text(errno)));
  if (rename(tmp.path.c_str(), path.c_str()) != 0) {
    fail(path, fmt::format("rename from {}: {}", tmp.path, errno_text(errno)));
  }
  tmp.renamed = true;
  // The rename is durable once the directory is.
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) fail(path, fmt::format("open directory: {}", errno_text(errno)));
  const int rc = fsync(dir_fd);
  const int err = errno;
  close(dir_fd);
  if (rc != 0) fail(path, fmt::format("fsync directory: {}", errno_text(err)));
}

bool load_breaker_state(core::CircuitBreaker& breaker, const std::string& path, uint64_t now_ns,
                        const std::string& boot_id) {
  breaker.clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    fail(path, fmt::format("cannot open: {}", errno_text(errno)));
  }
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      fail(path, fmt::format("read: {}", errno_text(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes) {
      close(fd);
      fail(path, fmt::format("larger than {} bytes; not a breaker state file?", kMaxFileBytes));
    }
  }
  close(fd);

  const size_t nl = text.find('\n');
  auto header = parse_header(text.substr(0, nl));
  if (!header) {
    fail(path, fmt::format("corrupt: the first line is not \"{} {} boot_id=ID monotonic_ns=N\"",
                           kMagic, kVersion));
  }
  if (nl == std::string::npos || !breaker.deserialize(text.substr(nl + 1))) {
    breaker.clear();
    fail(path, "corrupt: the breaker state after the header is malformed");
  }
  if (header->boot_id != boot_id || header->boot_id == "unknown" || header->monotonic_ns > now_ns) {
    // Another boot (or a clock that went back): judge the quiet periods at the time of the
    // save, then restart the open ones on the new clock.
    breaker.close_quiet(header->monotonic_ns);
    breaker.restart_clock(now_ns);
  }
  return true;
}

}  // namespace tailcause::exporter
