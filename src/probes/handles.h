// SPDX-License-Identifier: Apache-2.0
// Unique handles for what the probe families hold from libbpf and the kernel: skeletons, links,
// ring buffer readers, parsed BTF and plain descriptors. Each frees its object exactly once, so a
// start that fails halfway, or a stop, leaks nothing whatever the order of the members.
#pragma once

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <memory>
#include <utility>

namespace tailcause::probes {

// How a T is freed; specialised below, and per skeleton with TAILCAUSE_SKELETON_HANDLE.
template <typename T>
struct Destroy;

template <>
struct Destroy<bpf_link> {
  // A perf-event link also closes the perf event's fd it was attached with.
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
template <>
struct Destroy<btf> {
  void operator()(btf* b) const { btf__free(b); }
};

template <typename T>
using Handle = std::unique_ptr<T, Destroy<T>>;

using LinkHandle = Handle<bpf_link>;
// Our own reader of a BPF ring buffer (probes/ring_reader.h), not libbpf's ring_buffer, which
// maps the data twice.
class RingReader;
using RingHandle = std::unique_ptr<RingReader>;

// A skeleton's handle, declared where the skeleton is only forward-declared (the family's
// header); its .cpp, which includes the .skel.h, defines the destroy with
// TAILCAUSE_SKELETON_DESTROY. Use both inside namespace tailcause::probes.
#define TAILCAUSE_SKELETON_HANDLE(skel) \
  template <>                           \
  struct Destroy<skel> {                \
    void operator()(skel* s) const;     \
  }
#define TAILCAUSE_SKELETON_DESTROY(skel) \
  void Destroy<skel>::operator()(skel* s) const { skel##__destroy(s); }

// A file descriptor, closed when the handle goes or is reset.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Hands the descriptor to a new owner (e.g. a perf-event link, which closes it).
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace tailcause::probes
