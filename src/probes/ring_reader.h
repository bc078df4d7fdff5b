// SPDX-License-Identifier: Apache-2.0
// Consumer of a BPF ring buffer map (BPF_MAP_TYPE_RINGBUF), written here instead of libbpf's
// ring_buffer because of resident memory: libbpf (1.1.2, no option to change it) maps the data
// area twice in a row so that a record wrapping around the end reads contiguously, and the
// kernel maps every page at mmap time, so each ring costs twice its size in RSS. This reader
// maps the data area once and copies the rare wrapping record in two parts.
//
// The protocol (kernel/bpf/ringbuf.c, include/uapi/linux/bpf.h): page 0 holds the consumer
// position (ours, the only writable page), page 1 the producer position, then the data area,
// a power of two. Positions only grow and are read with acquire, ours stored with release.
// Each record starts with an 8-byte header whose first 32 bits are its length plus two flags:
// BUSY (reserved, not yet committed: stop there) and DISCARD (skip it); records are aligned
// to 8 bytes, so a header never wraps, a payload may.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "probes/handles.h"

namespace tailcause::probes {

class RingReader {
 public:
  // Called for each committed, not discarded record, in order, on the consuming thread. The
  // bytes are valid during the call only. Must not throw.
  using Sink = std::function<void(std::span<const std::byte>)>;

  // Maps the ring of `map_fd` (which it duplicates: the caller keeps its own). Throws
  // ProbeError when the map is not a ring buffer or cannot be mapped.
  RingReader(int map_fd, Sink sink);
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  // Readable (EPOLLIN) when the kernel woke the reader: records are waiting. Level-triggered
  // while the ring is not empty.
  int event_fd() const { return map_fd_.get(); }
  // Hands every committed record to the sink, until the ring is empty or the next record is
  // still being written; returns how many it handed.
  size_t consume();
  // Waits up to timeout_ms for a wakeup (poll on the map); true when one came.
  bool wait(int timeout_ms) const;

  size_t data_size() const { return size_; }
  // Bytes between the consumer and the producer positions (committed or not).
  uint64_t backlog() const;
  // Resident bytes of the mappings: one page for the consumer position, one for the producer
  // position, and the data area.
  size_t mapped_bytes() const;
  // Records that wrapped around the end and were put together (tests).
  uint64_t wrapped_records() const { return wrapped_records_; }

 private:
  // Hands the record at data offset `start` to the sink, put together first when it wraps.
  void hand(size_t start, size_t len);

  Fd map_fd_;
  size_t page_ = 0;
  size_t size_ = 0;           // data area, a power of two
  void* consumer_ = nullptr;  // one page, read-write
  void* producer_ = nullptr;  // one page + the data area, read-only
  const std::byte* data_ = nullptr;
  Sink sink_;
  std::vector<std::byte> wrapped_;  // a record that wraps, put together
  uint64_t wrapped_records_ = 0;
};

}  // namespace tailcause::probes
