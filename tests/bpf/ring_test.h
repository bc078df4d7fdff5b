// SPDX-License-Identifier: Apache-2.0
/* Shared by tests/bpf/ring_test.bpf.c and tests/bpf/test_ring_reader.cpp. */
#ifndef TAILCAUSE_RING_TEST_H
#define TAILCAUSE_RING_TEST_H

/* The program's context (BPF_PROG_TEST_RUN ctx_in; the counts come back in it). */
struct ring_test_args {
  __u64 first_seq; /* sequence number of the first record */
  /* Records to reserve. 64 bits: the verifier's inlined bpf_loop compares the whole register
   * with its limit, and a 32-bit field loaded with its neighbour would make that fail. */
  __u64 count;
  __u32 producer;      /* written into each record */
  __u32 discard_every; /* discard records whose seq is a multiple of it (0: none) */
  __u32 flags;         /* bpf_ringbuf_submit flags: 0, BPF_RB_NO_WAKEUP, BPF_RB_FORCE_WAKEUP */
  __u32 submitted;     /* out */
  __u32 discarded;     /* out */
  __u32 failed;        /* out: the ring was full */
};

/* The start of every record; its payload (size bytes in all) continues with the pattern. */
struct ring_test_record {
  __u32 producer;
  __u32 size;
  __u64 seq;
};

#define RING_TEST_PATTERN(seq, producer, i) ((__u8)((seq)*7 + (producer)*31 + (i)))

#endif
