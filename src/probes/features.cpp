// SPDX-License-Identifier: Apache-2.0
#include "probes/features.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <utility>

#include "probes/handles.h"
#include "probes/usdt_attach.h"

namespace tailcause::probes {
namespace {

constexpr const char* kKernelBtf = "/sys/kernel/btf/vmlinux";

// r0 = 0; exit
const bpf_insn kReturnZero[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};

std::string err_text(int err) { return strerror(err < 0 ? -err : err); }

// Loads a tracing program against a BTF id and attaches it; `kind` is the attach type.
Feature probe_tracing(const char* name, const btf* vmlinux, const char* target, __u32 btf_kind,
                      bpf_attach_type kind) {
  Feature f{name, false, ""};
  if (!vmlinux) {
    f.detail = "needs kernel BTF";
    return f;
  }
  const int id = btf__find_by_name_kind(vmlinux, target, btf_kind);
  if (id < 0) {
    f.detail = std::string("no BTF for ") + target;
    return f;
  }
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = kind, .attach_btf_id = (__u32)id);
  const Fd prog(bpf_prog_load(BPF_PROG_TYPE_TRACING, "probe", "GPL", kReturnZero, 2, &opts));
  if (!prog) {
    f.detail = "load: " + err_text(errno);
    return f;
  }
  const Fd link(bpf_link_create(prog.get(), 0, kind, nullptr));
  if (!link) {
    f.detail = "attach: " + err_text(errno);
  } else {
    f.available = true;
  }
  return f;
}

Feature probe_raw_tp() {
  Feature f{"raw_tracepoint", false, ""};
  const Fd prog(
      bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "probe", "GPL", kReturnZero, 2, nullptr));
  if (!prog) {
    f.detail = "load: " + err_text(errno);
    return f;
  }
  const Fd link(bpf_raw_tracepoint_open("sched_switch", prog.get()));
  if (!link) {
    f.detail = "attach: " + err_text(errno);
  } else {
    f.available = true;
  }
  return f;
}

Feature probe_map(const char* name, bpf_map_type type) {
  Feature f{name, false, ""};
  const int r = libbpf_probe_bpf_map_type(type, nullptr);
  f.available = r == 1;
  if (r < 0) f.detail = err_text(r);
  if (r == 0) f.detail = "not supported by this kernel";
  return f;
}

// Typed ksyms resolve through kallsyms, which lists data symbols only with KALLSYMS_ALL.
bool kallsyms_has(const std::string& name) {
  std::ifstream in("/proc/kallsyms");
  const std::string suffix = " " + name;
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > suffix.size() &&
        line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

Feature probe_perf_event() {
  Feature f{"perf_event", false, ""};
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = 10;
  attr.disabled = 1;
  const Fd fd(
      static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)));
  if (!fd) {
    f.detail = "perf_event_open: " + err_text(errno);
    return f;
  }
  f.available = true;
  return f;
}

// Loads a uprobe_multi program and links it to offset 0 of our own executable: a real link
// (no executable mapping covers that offset, so nothing is placed), closed again.
Feature probe_uprobe_multi() {
  Feature f{"uprobe_multi", false, ""};
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
  const Fd prog(bpf_prog_load(BPF_PROG_TYPE_KPROBE, "probe", "GPL", kReturnZero, 2, &opts));
  if (!prog) {
    f.detail = "load: " + err_text(errno) + "; USDT probes attach one uprobe per site";
    return f;
  }
  const int fd = create_uprobe_multi_link(prog.get(), "/proc/self/exe", {0}, {}, {}, 0);
  if (fd < 0) {
    f.detail = "attach: " + err_text(fd) + "; USDT probes attach one uprobe per site";
    return f;
  }
  close(fd);
  f.available = true;
  return f;
}

// What the pid filter probe below places its uprobe on: a function of whatever binary holds
// this code, called once from a second thread and once from the first.
extern "C" __attribute__((noinline, used)) void tailcause_pid_filter_target(volatile int* sink) {
  *sink = *sink + 1;
  asm volatile("" ::: "memory");
}

// The file offset and path of the executable mapping that holds `addr`, from /proc/self/maps.
std::optional<std::pair<std::string, uint64_t>> file_offset_of(uintptr_t addr) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long start = 0, end = 0, offset = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %*s %*s %n", &start, &end, perms, &offset,
                    &path_at) < 4 ||
        addr < start || addr >= end || perms[2] != 'x' || path_at <= 0) {
      continue;
    }
    const std::string path = line.substr(static_cast<size_t>(path_at));
    if (path.empty() || path[0] != '/') return std::nullopt;
    return std::make_pair(path, addr - start + offset);
  }
  return std::nullopt;
}

// A uprobe_multi program that adds one to slot 0 of the array `map_fd` at each call; errno
// says why when it does not load.
Fd load_call_counter(int map_fd) {
  const bpf_insn count_call[] = {
      // *(u32 *)(r10 - 4) = 0; r2 = r10 - 4; r1 = &map; r0 = bpf_map_lookup_elem(r1, r2)
      {.code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .src_reg = 0, .off = -4, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_X,
       .dst_reg = BPF_REG_2,
       .src_reg = BPF_REG_10,
       .off = 0,
       .imm = 0},
      // NOLINTNEXTLINE(misc-redundant-expression): BPF_ADD and BPF_K are both 0; spelled out
      {.code = BPF_ALU64 | BPF_ADD | BPF_K,
       .dst_reg = BPF_REG_2,
       .src_reg = 0,
       .off = 0,
       .imm = -4},
      // NOLINTNEXTLINE(misc-redundant-expression): BPF_LD and BPF_IMM are both 0; spelled out
      {.code = BPF_LD | BPF_DW | BPF_IMM,
       .dst_reg = BPF_REG_1,
       .src_reg = BPF_PSEUDO_MAP_FD,
       .off = 0,
       .imm = map_fd},
      {.code = 0, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_CALL,
       .dst_reg = 0,
       .src_reg = 0,
       .off = 0,
       .imm = BPF_FUNC_map_lookup_elem},
      // if (r0) lock *(u64 *)r0 += 1
      {.code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 2, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .src_reg = 0, .off = 0, .imm = 1},
      {.code = BPF_STX | BPF_ATOMIC | BPF_DW,
       .dst_reg = BPF_REG_0,
       .src_reg = BPF_REG_1,
       .off = 0,
       .imm = BPF_ADD},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
  return Fd(bpf_prog_load(BPF_PROG_TYPE_KPROBE, "pid_probe", "GPL", count_call,
                          sizeof count_call / sizeof count_call[0], &opts));
}

// Whether a uprobe_multi link's pid filter lets every thread of the process through. Linux 6.6
// to 6.9 compared it with the thread id (fixed in 6.10, "bpf: fix multi-uprobe PID filtering
// logic"), so `--pid` would trace only a process's main thread there. Tried, not read from the
// version: a link with our own pid on a function called from a second thread, counted by
// load_call_counter()'s program.
Feature probe_uprobe_multi_pid_filter() {
  Feature f{"uprobe_multi_pid_filter", false, ""};
  const std::string fallback = "; --pid attaches one perf-event uprobe per site";
  const Fd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "pid_probe", 4, 8, 1, nullptr));
  if (!map) {
    f.detail = "map: " + err_text(errno) + fallback;
    return f;
  }
  const Fd prog = load_call_counter(map.get());
  if (!prog) {
    f.detail = "load: " + err_text(errno) + fallback;
    return f;
  }
  const auto target = file_offset_of(reinterpret_cast<uintptr_t>(&tailcause_pid_filter_target));
  if (!target) {
    f.detail = "the probe's own function is in no file mapping" + fallback;
    return f;
  }
  const int link =
      create_uprobe_multi_link(prog.get(), target->first, {target->second}, {}, {}, getpid());
  if (link < 0) {
    f.detail = "attach: " + err_text(link) + fallback;
    return f;
  }
  const Fd held(link);
  volatile int sink = 0;
  std::thread([&sink] { tailcause_pid_filter_target(&sink); }).join();
  tailcause_pid_filter_target(&sink);
  const uint32_t key = 0;
  uint64_t hits = 0;
  bpf_map_lookup_elem(map.get(), &key, &hits);
  if (hits == 2) {
    f.available = true;
  } else {
    f.detail = fmt::format(
        "{} of 2 calls from two threads of this process seen (a kernel "
        "that filters by thread: Linux 6.6 to 6.9){}",
        hits, fallback);
  }
  return f;
}

// The configured BTF file, parsed into `out` when it is valid.
Feature probe_btf_file(Features& out) {
  Feature f{"btf", false, out.btf_path};
  if (!std::filesystem::exists(out.btf_path)) {
    f.detail = out.btf_path + " does not exist (kernel built without CONFIG_DEBUG_INFO_BTF?)";
    return f;
  }
  out.parsed_btf.set(parse_btf(out.btf_path));
  if (!out.parsed_btf.get()) {
    f.detail = out.btf_path + " is not valid BTF: " + err_text(errno);
  } else {
    f.available = true;
  }
  return f;
}

// The per-CPU run queues, by address: in the BTF (the configured one, else the kernel's) and in
// /proc/kallsyms.
Feature probe_runqueues_ksym(const btf* custom, const btf* kernel) {
  Feature f{"runqueues_ksym", false, ""};
  const btf* b = custom ? custom : kernel;
  if (!b) {
    f.detail = "needs BTF";
  } else if (btf__find_by_name_kind(b, "runqueues", BTF_KIND_VAR) < 0) {
    f.detail = "per-CPU variable runqueues not in BTF";
  } else if (!kallsyms_has("runqueues")) {
    f.detail =
        "runqueues not in /proc/kallsyms (CONFIG_KALLSYMS_ALL off); sampled via the current task";
  } else {
    f.available = true;
  }
  return f;
}

Feature probe_kprobe_pmu() {
  Feature f{"kprobe", false, ""};
  f.available = std::filesystem::exists("/sys/bus/event_source/devices/kprobe/type");
  f.detail = f.available ? "optional" : "kernel has no kprobe PMU (CONFIG_KPROBES off); optional";
  return f;
}

}  // namespace

Features probe_features(const std::string& btf_path) {
  Features out;
  out.btf_path = btf_path.empty() ? kKernelBtf : btf_path;

  Feature btf_f = probe_btf_file(out);
  out.btf = btf_f.available;
  out.list.push_back(btf_f);
  const btf* custom = out.parsed_btf.get();

  // Attaching by BTF id always needs the running kernel's own BTF (parsed once when the
  // configured BTF is the kernel's: it is several megabytes).
  const bool custom_is_kernel = out.btf_path == kKernelBtf;
  Handle<btf> own_kernel(custom_is_kernel ? nullptr : btf__load_vmlinux_btf());
  // An error pointer is nothing to free: let go of it unfreed.
  if (libbpf_get_error(own_kernel.get())) (void)own_kernel.release();
  const btf* kernel = custom_is_kernel ? custom : own_kernel.get();

  // Each probe's result goes to its flag and to the list `probes` prints.
  auto record = [&out](bool Features::*flag, Feature f) {
    out.*flag = f.available;
    out.list.push_back(std::move(f));
  };
  record(&Features::tp_btf, probe_tracing("tp_btf", kernel, "btf_trace_sched_switch",
                                          BTF_KIND_TYPEDEF, BPF_TRACE_RAW_TP));
  record(&Features::raw_tp, probe_raw_tp());
  record(&Features::ringbuf, probe_map("ringbuf", BPF_MAP_TYPE_RINGBUF));
  record(&Features::task_storage, probe_map("task_storage", BPF_MAP_TYPE_TASK_STORAGE));
  record(&Features::perf_event, probe_perf_event());
  record(&Features::runqueues_ksym, probe_runqueues_ksym(custom, kernel));
  record(&Features::kprobes, probe_kprobe_pmu());
  Feature fe = probe_tracing("fentry", kernel, "vfs_read", BTF_KIND_FUNC, BPF_TRACE_FENTRY);
  if (!fe.available) fe.detail += "; optional";
  record(&Features::fentry, std::move(fe));
  record(&Features::uprobe_multi, probe_uprobe_multi());
  if (out.uprobe_multi) record(&Features::uprobe_multi_pid_filter, probe_uprobe_multi_pid_filter());

  return out;
}

std::shared_ptr<const btf> start_btf(const Features& features) {
  std::shared_ptr<const btf> b = features.parsed_btf.hold();
  if (!b && features.btf) b = parse_btf(features.btf_path);
  return b;
}

std::shared_ptr<const btf> parse_btf(const std::string& path) {
  btf* b = btf__parse(path.c_str(), nullptr);
  if (!b || libbpf_get_error(b)) return nullptr;
  return std::shared_ptr<const btf>(b, [](const btf* p) { btf__free(const_cast<btf*>(p)); });
}

}  // namespace tailcause::probes
