// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* TCP probe family: connection lifetimes, bytes, smoothed RTT and retransmits per connection,
 * sent to user space as records (bpf/tcp.h) that it aggregates per service pair.
 *
 * Design: docs/architecture.md, "The TCP family". */
#include "common.bpf.h"
#include "ringbuf_wakeup.bpf.h"
#include "tcp.h"

#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One RTT sample per this many received segments per CPU (a power of two). */
#define RTT_SAMPLE_EVERY 64

struct conn_info {
	__u64 start_ns;
	__u8 direction;	  /* TAILCAUSE_TCP_ACTIVE / _PASSIVE */
	__u8 established; /* reached ESTABLISHED */
	__u8 syn_counted; /* SYN_SENT -> ESTABLISHED: bytes_acked counted our SYN */
	__u8 fin_sent;	  /* went to FIN_WAIT1 or LAST_ACK, which is when TCP queues its FIN */
	__u8 pad[4];
};

/* Connections being tracked. Key: the struct sock pointer; value: when and how it started.
 * Written at SYN_SENT / SYN_RECV, marked at ESTABLISHED, read by the RTT and retransmit
 * handlers (direction), deleted at CLOSE. Bounded to 65536 concurrent connections (~5 MiB);
 * beyond that a new connection is not tracked and counted in tcp_lost[LOST_CONNS]. A stale
 * entry (a socket freed without passing CLOSE) is overwritten when its address is reused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct conn_info);
} tcp_conns SEC(".maps");

/* Records for user space (struct tailcause_tcp_event, 72 bytes): closes, RTT samples,
 * retransmits. 1 MiB holds ~13k records between two drains; when full, records are dropped
 * and counted in tcp_lost[LOST_RINGBUF]. Read by TcpProbe::consume(), at the daemon's tick or
 * when a record makes the backlog cross TCP_WAKEUP_BYTES (submit_flags()). */
#define TCP_RINGBUF_BYTES (1 << 20)
#define TCP_WAKEUP_BYTES  (TCP_RINGBUF_BYTES / 8)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TCP_RINGBUF_BYTES);
} tcp_events SEC(".maps");

/* When the reader was last woken because the backlog stood over TCP_WAKEUP_BYTES. */
__u64 tcp_backlog_wakeup_ns = 0;

/* Dropped records and untracked connections, per CPU, by reason (TAILCAUSE_TCP_LOST_*).
 * Summed by user space into tailcause_events_lost_total{source="tcp"}. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TAILCAUSE_TCP_LOST_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} tcp_lost SEC(".maps");

/* Received segments seen by tcp_probe on this CPU: the RTT sampling gate. One slot. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tcp_rtt_gate SEC(".maps");

static __always_inline bool is_tcp(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	/* sk_protocol was a bitfield before 5.6; the probed read handles both layouts. */
	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return false;
	return family == AF_INET || family == AF_INET6;
}

/* Flags to submit a tcp_events record with: no wake-up until the backlog is large. Woken at
 * every close, as before, the daemon cost a loopback client and its server 2 wake-ups per
 * connection: tcp_set_state ran 2.1 us on average for the 11 state changes of an HTTP call. */
static __always_inline __u64 submit_flags(void)
{
	return backlog_submit_flags(&tcp_events, sizeof(struct tailcause_tcp_event),
				    TCP_WAKEUP_BYTES, &tcp_backlog_wakeup_ns);
}

/* A zeroed record with the socket's endpoints, or NULL (counted) when the ring is full. */
static __always_inline struct tailcause_tcp_event *new_event(const struct sock *sk, __u8 kind,
							     __u8 direction)
{
	struct tailcause_tcp_event *e = bpf_ringbuf_reserve(&tcp_events, sizeof(*e), 0);

	if (!e) {
		count_in(&tcp_lost, TAILCAUSE_TCP_LOST_RINGBUF);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->direction = direction;
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	/* inet_sport, not skc_num: unhashing at CLOSE zeroes skc_num before the tracepoint. */
	e->local_port = bpf_ntohs(BPF_CORE_READ((const struct inet_sock *)sk, inet_sport));
	e->remote_port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (e->family == AF_INET) {
		__u32 local = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 remote = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(e->local_addr, &local, sizeof(local));
		__builtin_memcpy(e->remote_addr, &remote, sizeof(remote));
	} else {
		BPF_CORE_READ_INTO(&e->local_addr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&e->remote_addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
	return e;
}

/* bytes_acked counts the acked sequence space: it includes our SYN when the SYN-ACK was
 * processed in SYN_SENT (the SYN_RECV path sets snd_una past the SYN without counting it),
 * and our FIN once acked, i.e. when it was sent and snd_una reached write_seq, which counts
 * the FIN too. */
static __always_inline __u64 payload_acked(const struct tcp_sock *tp, const struct conn_info *info)
{
	__u64 acked = BPF_CORE_READ(tp, bytes_acked);

	if (info->syn_counted && acked)
		acked--;
	if (info->fin_sent && acked && BPF_CORE_READ(tp, snd_una) == BPF_CORE_READ(tp, write_seq))
		acked--;
	return acked;
}

/* bytes_received counts the received sequence space up to rcv_nxt, which includes the peer's
 * FIN once it arrived; tcp_fin() marks that with SOCK_DONE (cleared only on disconnect). */
static __always_inline __u64 payload_received(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u64 received = BPF_CORE_READ(tp, bytes_received);
	unsigned long flags = BPF_CORE_READ(sk, __sk_common.skc_flags);
	int done = bpf_core_enum_value(enum sock_flags, SOCK_DONE);

	if (received && (flags & (1UL << done)))
		received--;
	return received;
}

static __always_inline void emit_close(const struct sock *sk, const struct conn_info *info)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct tailcause_tcp_event *e;

	e = new_event(sk, TAILCAUSE_TCP_EV_CLOSE, info->direction);
	if (!e)
		return;
	e->lifetime_ns = bpf_ktime_get_ns() - info->start_ns;
	e->bytes_sent = payload_acked(tp, info);
	e->bytes_received = payload_received(sk);
	e->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3; /* stored as 8x the smoothed RTT */
	bpf_ringbuf_submit(e, submit_flags());
}

static __always_inline int on_set_state(const struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct conn_info *info;

	switch (newstate) {
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
	case TCP_ESTABLISHED:
	case TCP_FIN_WAIT1:
	case TCP_LAST_ACK:
	case TCP_CLOSE: break;
	default: return 0;
	}
	if (!is_tcp(sk))
		return 0;

	/* SYN_SENT -> SYN_RECV is a simultaneous open: still our connect(). */
	if (newstate == TCP_SYN_SENT || (newstate == TCP_SYN_RECV && oldstate != TCP_SYN_SENT)) {
		struct conn_info fresh = {
			.start_ns = bpf_ktime_get_ns(),
			.direction = newstate == TCP_SYN_SENT ? TAILCAUSE_TCP_ACTIVE
							      : TAILCAUSE_TCP_PASSIVE,
		};

		if (bpf_map_update_elem(&tcp_conns, &key, &fresh, BPF_ANY))
			count_in(&tcp_lost, TAILCAUSE_TCP_LOST_CONNS);
		return 0;
	}

	info = bpf_map_lookup_elem(&tcp_conns, &key);
	if (!info)
		return 0; /* opened before we attached, or not tracked */
	if (newstate == TCP_ESTABLISHED) {
		info->established = 1;
		info->syn_counted = oldstate == TCP_SYN_SENT;
		return 0;
	}
	if (newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK) {
		info->fin_sent = 1;
		return 0;
	}
	if (newstate != TCP_CLOSE)
		return 0;
	/* A connect() that never got through is not a connection: no record. */
	if (info->established)
		emit_close(sk, info);
	bpf_map_delete_elem(&tcp_conns, &key);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_set_state_btf, const struct sock *sk, int oldstate, int newstate)
{
	return on_set_state(sk, oldstate, newstate);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(tcp_set_state_raw, const struct sock *sk, int oldstate, int newstate)
{
	return on_set_state(sk, oldstate, newstate);
}

/* Every received segment of an established socket passes here: keep it to a counter. */
static __always_inline int on_tcp_probe(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct tailcause_tcp_event *e;
	struct conn_info *info;
	__u32 zero = 0, srtt;
	__u32 *seen;
	__u64 key;

	seen = bpf_map_lookup_elem(&tcp_rtt_gate, &zero);
	if (!seen)
		return 0;
	if (++(*seen) & (RTT_SAMPLE_EVERY - 1))
		return 0;

	key = (__u64)sk;
	info = bpf_map_lookup_elem(&tcp_conns, &key);
	if (!info || !info->established)
		return 0;
	srtt = BPF_CORE_READ(tp, srtt_us) >> 3;
	if (!srtt)
		return 0; /* no RTT measured yet */
	e = new_event(sk, TAILCAUSE_TCP_EV_RTT, info->direction);
	if (!e)
		return 0;
	e->srtt_us = srtt;
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_probe_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return on_tcp_probe(sk);
}

SEC("raw_tp/tcp_probe")
int BPF_PROG(tcp_probe_raw, const struct sock *sk, const struct sk_buff *skb)
{
	return on_tcp_probe(sk);
}

/* Segments in a retransmitted skb (tcp_skb_pcount: gso_segs, 0 meaning 1). */
static __always_inline __u32 skb_segments(const struct sk_buff *skb)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u32 end = BPF_CORE_READ(skb, end); /* an offset from head on 64-bit kernels */
	struct skb_shared_info *shinfo = (struct skb_shared_info *)(head + end);
	__u16 segs = BPF_CORE_READ(shinfo, gso_segs);

	return segs ? segs : 1;
}

/* Where the tracepoint has a third `err` argument (recent kernels) it also fires for attempts
 * that failed locally. This handler reads only sk and skb, so one object loads on every
 * kernel, and counts those attempts too: TCP did decide the segment was lost. */
static __always_inline int on_retransmit(const struct sock *sk, const struct sk_buff *skb)
{
	struct tailcause_tcp_event *e;
	struct conn_info *info;
	__u64 key = (__u64)sk;

	info = bpf_map_lookup_elem(&tcp_conns, &key);
	if (!info)
		return 0;
	e = new_event(sk, TAILCAUSE_TCP_EV_RETRANS, info->direction);
	if (!e)
		return 0;
	e->count = skb_segments(skb);
	bpf_ringbuf_submit(e, submit_flags());
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk, skb);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_raw, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk, skb);
}
