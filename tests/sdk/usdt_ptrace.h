// SPDX-License-Identifier: Apache-2.0
// A minimal USDT tracer built on ptrace, for tests that must see the SDK's probes fire without
// root (no BPF). It does what a real USDT tracer does, on a forked child of the test process:
// reads the probe sites from this executable's .note.stapsdt, plants int3 on each site's nop,
// optionally increments the probes' semaphores, and on each trap decodes the probe arguments
// from the argument specs in the note ("8@%rdi", "-8@-24(%rbp)", "8@$5").
//
// x86-64 only (the site is a nop, sdt.h's one-byte one or the SDK's five-byte one, so the child
// resumes past it and the trap stays planted). The child runs single-threaded code only: other
// threads are not traced.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace usdt_ptrace {

struct ArgSpec {
  int size = 8;  // bytes
  bool is_signed = false;
  enum Kind { reg, mem, imm } kind = reg;
  std::string reg_name;    // reg, mem
  std::int64_t value = 0;  // imm: the constant; mem: the displacement
};

// The SDK's probe site on x86-64 (sdk.h): the 5-byte nop the kernel can optimise.
inline constexpr unsigned char kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

struct Site {
  std::string provider;
  std::string name;
  std::uintptr_t pc = 0;         // run-time address of the nop
  std::size_t nop_size = 0;      // 1 (0x90) or 5 (0f 1f 44 00 00), read when the tracer arms
  std::uintptr_t semaphore = 0;  // run-time address, 0 if none
  std::vector<ArgSpec> args;
};

struct Event {
  std::string name;
  std::vector<std::uint64_t> args;
  // Each argument read as a C string where it points at readable memory.
  std::vector<std::optional<std::string>> strings;
};

inline ArgSpec parse_arg(const std::string& text) {
  ArgSpec spec;
  const auto at = text.find('@');
  if (at == std::string::npos) throw std::runtime_error("usdt arg without size: " + text);
  const int size = std::stoi(text.substr(0, at));
  spec.is_signed = size < 0;
  spec.size = size < 0 ? -size : size;
  const std::string op = text.substr(at + 1);
  if (op.starts_with("$")) {
    spec.kind = ArgSpec::imm;
    spec.value = std::stoll(op.substr(1), nullptr, 0);
  } else if (op.starts_with("%")) {
    spec.kind = ArgSpec::reg;
    spec.reg_name = op.substr(1);
  } else if (const auto paren = op.find("(%"); paren != std::string::npos && op.back() == ')') {
    spec.kind = ArgSpec::mem;
    spec.value = paren == 0 ? 0 : std::stoll(op.substr(0, paren), nullptr, 0);
    spec.reg_name = op.substr(paren + 2, op.size() - paren - 3);
    if (spec.reg_name.find(',') != std::string::npos)
      throw std::runtime_error("usdt arg with an index register: " + text);
  } else {
    throw std::runtime_error("usdt arg not understood: " + text);
  }
  return spec;
}

// Load bias of the main executable (0 for a non-PIE binary).
inline std::uintptr_t main_program_bias() {
  std::uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
        return 1;  // the first object is the main program
      },
      &bias);
  return bias;
}

// The USDT sites of `provider` in this process's executable, at their run-time addresses.
inline std::vector<Site> sites_in_self(const std::string& provider) {
  std::ifstream file("/proc/self/exe", std::ios::binary);
  const std::vector<char> elf((std::istreambuf_iterator<char>(file)), {});
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0)
    throw std::runtime_error("/proc/self/exe is not ELF");
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(elf.data() + eh->e_shoff);
  const char* shstr = elf.data() + sh[eh->e_shstrndx].sh_offset;
  const Elf64_Shdr* notes = nullptr;
  std::uint64_t base_section = 0;
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    const std::string name = shstr + sh[i].sh_name;
    if (name == ".note.stapsdt")
      notes = &sh[i];
    else if (name == ".stapsdt.base")
      base_section = sh[i].sh_addr;
  }
  std::vector<Site> sites;
  if (!notes) return sites;
  const std::uintptr_t bias = main_program_bias();
  const auto align4 = [](std::size_t n) { return (n + 3) & ~std::size_t{3}; };
  std::size_t off = notes->sh_offset;
  const std::size_t end = notes->sh_offset + notes->sh_size;
  while (off + sizeof(Elf64_Nhdr) <= end) {
    const auto* nh = reinterpret_cast<const Elf64_Nhdr*>(elf.data() + off);
    const char* name = elf.data() + off + sizeof(Elf64_Nhdr);
    const char* desc = name + align4(nh->n_namesz);
    off += sizeof(Elf64_Nhdr) + align4(nh->n_namesz) + align4(nh->n_descsz);
    if (nh->n_type != 3 || std::strcmp(name, "stapsdt") != 0) continue;
    std::uint64_t pc, base, sema;
    std::memcpy(&pc, desc, 8);
    std::memcpy(&base, desc + 8, 8);
    std::memcpy(&sema, desc + 16, 8);
    Site site;
    site.provider = desc + 24;
    site.name = desc + 24 + site.provider.size() + 1;
    const std::string args = desc + 24 + site.provider.size() + 1 + site.name.size() + 1;
    if (site.provider != provider) continue;
    const std::uint64_t prelink = base_section ? base_section - base : 0;
    site.pc = pc + prelink + bias;
    site.semaphore = sema ? sema + prelink + bias : 0;
    for (std::size_t pos = 0; pos < args.size();) {
      const auto space = args.find(' ', pos);
      const auto token = args.substr(pos, space - pos);
      if (!token.empty()) site.args.push_back(parse_arg(token));
      pos = space == std::string::npos ? args.size() : space + 1;
    }
    sites.push_back(std::move(site));
  }
  return sites;
}

inline std::uint64_t register_value(const user_regs_struct& r, const std::string& name) {
  using Field = decltype(user_regs_struct::rax) user_regs_struct::*;
  static const std::map<std::string, Field> regs = {
      {"rax", &user_regs_struct::rax}, {"rbx", &user_regs_struct::rbx},
      {"rcx", &user_regs_struct::rcx}, {"rdx", &user_regs_struct::rdx},
      {"rsi", &user_regs_struct::rsi}, {"rdi", &user_regs_struct::rdi},
      {"rbp", &user_regs_struct::rbp}, {"rsp", &user_regs_struct::rsp},
      {"r8", &user_regs_struct::r8},   {"r9", &user_regs_struct::r9},
      {"r10", &user_regs_struct::r10}, {"r11", &user_regs_struct::r11},
      {"r12", &user_regs_struct::r12}, {"r13", &user_regs_struct::r13},
      {"r14", &user_regs_struct::r14}, {"r15", &user_regs_struct::r15},
      {"rip", &user_regs_struct::rip},
  };
  // 32-bit names of the same registers: eax..edi, r8d..r15d.
  static const std::map<std::string, std::string> low = {
      {"eax", "rax"}, {"ebx", "rbx"}, {"ecx", "rcx"}, {"edx", "rdx"},
      {"esi", "rsi"}, {"edi", "rdi"}, {"ebp", "rbp"}, {"esp", "rsp"},
  };
  std::string full = name;
  if (auto it = low.find(name); it != low.end())
    full = it->second;
  else if (name.size() > 2 && name[0] == 'r' && name.back() == 'd')
    full = name.substr(0, name.size() - 1);
  const auto it = regs.find(full);
  if (it == regs.end()) throw std::runtime_error("usdt arg in an unknown register %" + name);
  return r.*(it->second);
}

// Narrows a raw value to the spec's size and signedness, as a tracer reports it.
inline std::uint64_t narrow(std::uint64_t raw, const ArgSpec& spec) {
  if (spec.size >= 8) return raw;
  const unsigned bits = static_cast<unsigned>(spec.size) * 8;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  std::uint64_t v = raw & mask;
  if (spec.is_signed && (v >> (bits - 1))) v |= ~mask;
  return v;
}

class Tracer {
 public:
  explicit Tracer(std::vector<Site> sites) : sites_(std::move(sites)) {}

  // Forks, runs `body` in the traced child and returns the probe events it produced, in order.
  // With enable_semaphores false the traps are planted but the semaphores stay 0.
  std::vector<Event> run(const std::function<void()>& body, bool enable_semaphores) {
    const pid_t child = fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
      if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0)
        _exit(4);  // ptrace denied (Yama scope 3, seccomp): the parent reports it
      raise(SIGSTOP);
      try {
        body();
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFSTOPPED(status))
      throw std::runtime_error("traced child did not stop (is ptrace allowed here?)");
    ptrace(PTRACE_SETOPTIONS, child, nullptr, reinterpret_cast<void*>(PTRACE_O_EXITKILL));
    mem_ = open(("/proc/" + std::to_string(child) + "/mem").c_str(), O_RDWR);
    if (mem_ < 0) throw std::runtime_error("cannot open the child's memory");
    std::vector<Event> events;
    try {
      arm(enable_semaphores);
      events = follow(child);
    } catch (...) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
      close(mem_);
      throw;
    }
    close(mem_);
    return events;
  }

 private:
  void arm(bool enable_semaphores) {
    std::set<std::uintptr_t> semaphores;
    for (Site& site : sites_) {
      site.nop_size = nop_size_at(site);
      const unsigned char trap = 0xcc;
      if (pwrite(mem_, &trap, 1, static_cast<off_t>(site.pc)) != 1)
        throw std::runtime_error("cannot plant a trap at " + site.name);
      if (site.semaphore) semaphores.insert(site.semaphore);
    }
    if (!enable_semaphores) return;
    for (std::uintptr_t addr : semaphores) {  // what the kernel's uprobe ref_ctr does
      unsigned short value = 0;
      if (pread(mem_, &value, 2, static_cast<off_t>(addr)) != 2)
        throw std::runtime_error("cannot read a semaphore");
      ++value;
      if (pwrite(mem_, &value, 2, static_cast<off_t>(addr)) != 2)
        throw std::runtime_error("cannot write a semaphore");
    }
  }

  std::vector<Event> follow(pid_t child) {
    std::vector<Event> events;
    int signal = 0;
    for (;;) {
      ptrace(PTRACE_CONT, child, nullptr, reinterpret_cast<void*>(std::intptr_t{signal}));
      int status = 0;
      if (waitpid(child, &status, 0) < 0) throw std::runtime_error("waitpid failed");
      if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) != 0)
          throw std::runtime_error("traced child exited with " +
                                   std::to_string(WEXITSTATUS(status)));
        return events;
      }
      if (WIFSIGNALED(status))
        throw std::runtime_error("traced child killed by signal " +
                                 std::to_string(WTERMSIG(status)));
      signal = WSTOPSIG(status);
      if (signal != SIGTRAP) continue;  // deliver it
      signal = 0;
      user_regs_struct regs{};
      ptrace(PTRACE_GETREGS, child, nullptr, &regs);
      const Site* site = site_at(regs.rip - 1);
      if (!site) throw std::runtime_error("SIGTRAP outside a probe site");
      events.push_back(decode(*site, regs));
      regs.rip = site->pc + site->nop_size;  // past the nop the trap's byte replaced
      ptrace(PTRACE_SETREGS, child, nullptr, &regs);
    }
  }

  std::size_t nop_size_at(const Site& site) const {
    unsigned char bytes[5] = {};
    if (pread(mem_, bytes, sizeof bytes, static_cast<off_t>(site.pc)) != sizeof bytes)
      throw std::runtime_error("cannot read probe site " + site.name);
    if (bytes[0] == 0x90) return 1;
    if (std::memcmp(bytes, kNop5, sizeof kNop5) == 0) return 5;
    throw std::runtime_error("probe site " + site.name + " is not a nop");
  }

  const Site* site_at(std::uintptr_t pc) const {
    for (const Site& site : sites_)
      if (site.pc == pc) return &site;
    return nullptr;
  }

  Event decode(const Site& site, const user_regs_struct& regs) const {
    Event event{site.name, {}, {}};
    for (const ArgSpec& spec : site.args) {
      std::uint64_t raw = 0;
      if (spec.kind == ArgSpec::imm) {
        raw = static_cast<std::uint64_t>(spec.value);
      } else if (spec.kind == ArgSpec::reg) {
        raw = register_value(regs, spec.reg_name);
      } else {
        const std::uint64_t addr = register_value(regs, spec.reg_name) + spec.value;
        if (pread(mem_, &raw, spec.size, static_cast<off_t>(addr)) != spec.size)
          throw std::runtime_error("cannot read a memory argument");
      }
      const std::uint64_t value = narrow(raw, spec);
      event.args.push_back(value);
      event.strings.push_back(read_string(value));
    }
    return event;
  }

  std::optional<std::string> read_string(std::uint64_t addr) const {
    if (addr < 4096 || addr > 0x7fffffffffffULL) return std::nullopt;
    char buf[256];
    const ssize_t got = pread(mem_, buf, sizeof(buf), static_cast<off_t>(addr));
    if (got <= 0) return std::nullopt;
    const void* nul = std::memchr(buf, '\0', static_cast<std::size_t>(got));
    if (!nul) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(static_cast<const char*>(nul) - buf));
  }

  std::vector<Site> sites_;
  int mem_ = -1;
};

}  // namespace usdt_ptrace
