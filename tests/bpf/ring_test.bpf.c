// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Producer for the ring reader's root tests (tests/bpf/test_ring_reader.cpp): run with
 * BPF_PROG_TEST_RUN on the calling thread's CPU, it reserves `count` records of five sizes in
 * turn (payloads of 16, 20, 100, 252 and 1000 bytes: unaligned lengths, records that wrap the
 * end of a small ring), fills each with a pattern the test checks byte for byte, discards
 * every `discard_every`-th and submits the rest with `flags`. It counts what it submitted,
 * discarded and could not reserve (ring full) in its context, which the kernel copies back:
 * the count the reader is compared with. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ring_test.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096); /* the test sets the size before loading */
} ring SEC(".maps");

static __always_inline void emit(struct ring_test_args* s, __u64 seq, const __u32 size) {
  __u8* p = bpf_ringbuf_reserve(&ring, size, 0);
  struct ring_test_record* r;

  if (!p) {
    s->failed++;
    return;
  }
  r = (struct ring_test_record*)p;
  r->producer = s->producer;
  r->size = size;
  r->seq = seq;
  for (__u32 i = sizeof(*r); i < size; i++) p[i] = RING_TEST_PATTERN(seq, s->producer, i);
  if (s->discard_every && seq % s->discard_every == 0) {
    bpf_ringbuf_discard(p, 0);
    s->discarded++;
  } else {
    bpf_ringbuf_submit(p, s->flags);
    s->submitted++;
  }
}

static long one(__u32 index, void* ctx) {
  struct ring_test_args* s = ctx;
  __u64 seq = s->first_seq + index;

  switch (seq % 5) {
    case 0: emit(s, seq, 16); break;
    case 1: emit(s, seq, 20); break;
    case 2: emit(s, seq, 100); break;
    case 3: emit(s, seq, 252); break;
    default: emit(s, seq, 1000); break;
  }
  return 0;
}

SEC("syscall")
int produce(struct ring_test_args* args) {
  struct ring_test_args s = *args; /* bpf_loop wants its context on the stack */

  s.submitted = s.discarded = s.failed = 0;
  bpf_loop(s.count, one, &s, 0);
  args->submitted = s.submitted;
  args->discarded = s.discarded;
  args->failed = s.failed;
  return 0;
}
