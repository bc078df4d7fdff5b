#include "probes/usdt_discovery.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "probes/handles.h"

namespace tailcause::probes {
namespace {

constexpr uint32_t kNtStapsdt = 3;  // note type of SystemTap SDT notes

struct ElfFile {
  Fd fd;  // declared first: outlives the Elf that maps it
  Elf* elf = nullptr;
  explicit ElfFile(const std::string& path) : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (!fd) return;
    elf_version(EV_CURRENT);
    elf = elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() {
    if (elf) elf_end(elf);
  }
};

// Adds the probe names of one SDT note's descriptor: three addresses (pc, base, semaphore),
// then provider, name and argument strings, each NUL-terminated.
void read_note(const char* desc, size_t size, size_t address_size, std::set<std::string>& out) {
  size_t pos = 3 * address_size;
  if (pos >= size) return;
  const char* provider = desc + pos;
  const size_t provider_len = strnlen(provider, size - pos);
  pos += provider_len + 1;
  if (pos >= size) return;
  const char* name = desc + pos;
  const size_t name_len = strnlen(name, size - pos);
  if (pos + name_len >= size) return;  // not terminated
  if (std::string_view(provider, provider_len) == kUsdtProvider) out.emplace(name, name_len);
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return pids;
}

std::set<std::string> tailcause_probes_in(const std::string& path) {
  std::set<std::string> probes;
  ElfFile f(path);
  if (!f.elf || elf_kind(f.elf) != ELF_K_ELF) return probes;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(f.elf, &shstrndx) != 0) return probes;
  const size_t address_size = gelf_getclass(f.elf) == ELFCLASS32 ? 4 : 8;
  for (Elf_Scn* scn = elf_nextscn(f.elf, nullptr); scn; scn = elf_nextscn(f.elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    const char* name = elf_strptr(f.elf, shstrndx, sh.sh_name);
    if (!name || std::strcmp(name, ".note.stapsdt") != 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) continue;
    const char* buf = static_cast<const char*>(data->d_buf);
    GElf_Nhdr nh;
    size_t name_off = 0, desc_off = 0;
    for (size_t off = 0; (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0;) {
      if (nh.n_type != kNtStapsdt || nh.n_namesz != 8 ||
          std::memcmp(buf + name_off, "stapsdt", 8) != 0) {
        continue;
      }
      read_note(buf + desc_off, nh.n_descsz, address_size, probes);
    }
  }
  return probes;
}

std::optional<MapsEntry> parse_maps_line(const std::string& line) {
  // start-end perms offset major:minor inode path
  std::istringstream in(line);
  std::string range, perms, offset, dev, path;
  uint64_t inode = 0;
  if (!(in >> range >> perms >> offset >> dev >> inode)) return std::nullopt;
  if (perms.size() < 3 || perms[2] != 'x' || inode == 0) return std::nullopt;
  std::getline(in >> std::ws, path);
  if (path.empty() || path.front() != '/') return std::nullopt;
  if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) {
    return std::nullopt;  // replaced on disk: its path names another file now
  }
  unsigned major = 0, minor = 0;
  if (sscanf(dev.c_str(), "%x:%x", &major, &minor) != 2) return std::nullopt;
  return MapsEntry{{makedev(major, minor), inode}, path};
}

const UsdtDiscovery::Cached* UsdtDiscovery::examine(pid_t pid, const MapsEntry& entry) {
  // The same file from here: the plain path when it is the same inode (same mount namespace),
  // else through the process's root.
  std::string path = entry.path;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || st.st_ino != entry.id.inode) {
    path = "/proc/" + std::to_string(pid) + "/root" + entry.path;
    if (stat(path.c_str(), &st) != 0) return nullptr;
  }
  auto it = cache_.find(entry.id);
  if (it != cache_.end() && it->second.mtime_ns == mtime_ns(st)) {
    if (it->second.path != path && access(it->second.path.c_str(), R_OK) != 0) {
      it->second.path = path;  // the process that showed us the file is gone
    }
    return &it->second;
  }
  Cached c{mtime_ns(st), path, tailcause_probes_in(path)};
  if (!c.probes.empty()) {
    spdlog::debug("attrib: {} carries {} tailcause probe(s)", path, c.probes.size());
  }
  return &(cache_[entry.id] = std::move(c));
}

void UsdtDiscovery::scan_into(pid_t pid, std::map<BinaryId, MappedBinary>& found,
                              std::set<BinaryId>& seen) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  std::set<BinaryId> in_this_process;
  while (std::getline(maps, line)) {
    auto entry = parse_maps_line(line);
    if (!entry || !in_this_process.insert(entry->id).second) continue;
    seen.insert(entry->id);
    const Cached* c = examine(pid, *entry);
    if (!c || c->probes.empty()) continue;
    MappedBinary& b = found[entry->id];
    if (b.path.empty()) b = MappedBinary{entry->id, c->path, c->probes, {}};
    b.pids.insert(pid);
  }
}

std::vector<MappedBinary> UsdtDiscovery::scan_process(pid_t pid) {
  std::map<BinaryId, MappedBinary> found;
  std::set<BinaryId> seen;
  scan_into(pid, found, seen);
  std::vector<MappedBinary> out;
  for (auto& [id, b] : found) out.push_back(std::move(b));
  return out;
}

std::map<BinaryId, MappedBinary> UsdtDiscovery::scan_all() {
  std::map<BinaryId, MappedBinary> found;
  std::set<BinaryId> seen;
  for (pid_t pid : all_pids()) scan_into(pid, found, seen);
  // Forget files no process maps any more, so the cache follows churn instead of growing.
  std::erase_if(cache_, [&](const auto& kv) { return !seen.count(kv.first); });
  return found;
}

}  // namespace tailcause::probes
