// SPDX-License-Identifier: Apache-2.0
#include "probes/ring_reader.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "probes/probe_family.h"

namespace tailcause::probes {
namespace {

using Pos = unsigned long;  // the kernel's type for both positions

[[noreturn]] void fail(const std::string& what) {
  throw ProbeError("ring buffer: " + what + ": " + strerror(errno));
}

Pos load_acquire(const void* p) {
  return __atomic_load_n(static_cast<const Pos*>(p), __ATOMIC_ACQUIRE);
}

}  // namespace

RingReader::RingReader(int map_fd, Sink sink) : sink_(std::move(sink)) {
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0) fail("map info");
  if (info.type != BPF_MAP_TYPE_RINGBUF) {
    errno = EINVAL;
    fail("map " + std::string(info.name) + " is not a ring buffer");
  }
  size_ = info.max_entries;  // the kernel enforces a power-of-two multiple of the page size
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  map_fd_.reset(fcntl(map_fd, F_DUPFD_CLOEXEC, 0));
  if (!map_fd_) fail("dup");
  consumer_ = mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd_.get(), 0);
  if (consumer_ == MAP_FAILED) {
    consumer_ = nullptr;
    fail("map the consumer page");
  }
  // The producer page and the data area once: a read-only mapping may be shorter than what the
  // kernel offers (libbpf asks for the data area twice).
  producer_ =
      mmap(nullptr, page_ + size_, PROT_READ, MAP_SHARED, map_fd_.get(), static_cast<off_t>(page_));
  if (producer_ == MAP_FAILED) {
    producer_ = nullptr;
    munmap(consumer_, page_);
    consumer_ = nullptr;
    fail("map the data area");
  }
  data_ = static_cast<const std::byte*>(producer_) + page_;
}

RingReader::~RingReader() {
  if (producer_) munmap(producer_, page_ + size_);
  if (consumer_) munmap(consumer_, page_);
}

uint64_t RingReader::backlog() const { return load_acquire(producer_) - load_acquire(consumer_); }

size_t RingReader::mapped_bytes() const { return 2 * page_ + size_; }

bool RingReader::wait(int timeout_ms) const {
  pollfd p{map_fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLIN);
}

size_t RingReader::consume() {
  auto* consumer = static_cast<Pos*>(consumer_);
  const Pos mask = size_ - 1;
  // Our position is published in steps, not after each record: the producers read it on every
  // reserve, and a store per record would bounce its cache line between CPUs. A step of 1/16
  // of the ring keeps almost all of it available to them while we read.
  const Pos step = size_ / 16;
  // At most one ring's worth per call, so a flood that outpaces us cannot keep the caller
  // (and the scrapes waiting for its lock) here forever; the map stays readable meanwhile.
  Pos cons = load_acquire(consumer);
  const Pos limit = cons + size_;
  size_t handed = 0;
  for (;;) {
    const Pos prod = load_acquire(producer_);
    Pos published = cons;
    bool stopped = false;  // at a record still being written, or at the limit
    while (cons < prod) {
      if (cons >= limit) {
        stopped = true;
        break;
      }
      const Pos off = cons & mask;
      const uint32_t header =
          __atomic_load_n(reinterpret_cast<const uint32_t*>(data_ + off), __ATOMIC_ACQUIRE);
      if (header & BPF_RINGBUF_BUSY_BIT) {
        stopped = true;
        break;
      }
      const size_t len = header & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
      if (len > size_ - BPF_RINGBUF_HDR_SZ) {
        // Only a kernel bug could write this; skip what is there rather than read past the end.
        spdlog::error("ring buffer: record of {} bytes in a {}-byte ring; {} bytes skipped", len,
                      size_, prod - cons);
        cons = prod;
        break;
      }
      if (!(header & BPF_RINGBUF_DISCARD_BIT)) {
        hand((off + BPF_RINGBUF_HDR_SZ) & mask, len);
        ++handed;
      }
      cons += (len + BPF_RINGBUF_HDR_SZ + 7) & ~Pos{7};
      if (cons - published >= step) {
        __atomic_store_n(consumer, cons, __ATOMIC_RELEASE);
        published = cons;
      }
    }
    __atomic_store_n(consumer, cons, __ATOMIC_RELEASE);
    if (stopped) break;
    // A producer decides after committing whether to wake us by comparing our position with
    // its record's: the fence orders our store before this reload of its position, so a
    // record committed meanwhile is either read by another pass or wakes the map up.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (load_acquire(producer_) == cons) break;
  }
  return handed;
}

void RingReader::hand(size_t start, size_t len) {
  if (start + len <= size_) {
    sink_({data_ + start, len});
    return;
  }
  const size_t first = size_ - start;
  wrapped_.resize(len);
  std::memcpy(wrapped_.data(), data_ + start, first);
  std::memcpy(wrapped_.data() + first, data_, len - first);
  ++wrapped_records_;
  sink_({wrapped_.data(), len});
}

}  // namespace tailcause::probes
