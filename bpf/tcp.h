// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* TCP probe family: records shared by bpf/tcp.bpf.c and src/probes/tcp_probe.cpp (C, __u* only). */
#ifndef TAILCAUSE_TCP_H
#define TAILCAUSE_TCP_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* user space; BPF code gets the types from vmlinux.h */
#endif

/* Who opened the connection: ACTIVE = this host called connect() (client side),
 * PASSIVE = it was accept()ed from a listener (server side). */
#define TAILCAUSE_TCP_ACTIVE  1
#define TAILCAUSE_TCP_PASSIVE 2

/* What a ring-buffer record reports. */
#define TAILCAUSE_TCP_EV_CLOSE	 1 /* a tracked connection closed: every field is set */
#define TAILCAUSE_TCP_EV_RTT	 2 /* a sampled smoothed RTT: srtt_us and the endpoints */
#define TAILCAUSE_TCP_EV_RETRANS 3 /* retransmitted segments (in `count`) and the endpoints */

/* Reasons for tailcause_events_lost_total{source="tcp"}: slots of the per-CPU `tcp_lost` array. */
#define TAILCAUSE_TCP_LOST_RINGBUF 0 /* ring buffer full: the record was dropped */
#define TAILCAUSE_TCP_LOST_CONNS   1 /* connection table full: that connection is not tracked */
#define TAILCAUSE_TCP_LOST_REASONS 2

/* One ring-buffer record. Addresses are in network byte order: IPv4 in the first 4 bytes
 * (family 2, AF_INET), IPv6 in all 16 (family 10, AF_INET6; may be v4-mapped). Ports are in
 * host byte order and both always set; user space replaces the ephemeral one by "*". */
struct tailcause_tcp_event {
	__u64 lifetime_ns;    /* CLOSE: from connect()/SYN receipt to CLOSE */
	__u64 bytes_sent;     /* CLOSE: payload bytes the peer acknowledged (no SYN/FIN) */
	__u64 bytes_received; /* CLOSE: payload bytes received in order (no FIN) */
	__u32 srtt_us;	      /* CLOSE, RTT: smoothed RTT in microseconds, 0 if never measured */
	__u32 count;	      /* RETRANS: segments retransmitted (counted as they happen, so
			       * CLOSE does not repeat them) */
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__u16 local_port;
	__u16 remote_port;
	__u16 family;
	__u8 direction; /* TAILCAUSE_TCP_ACTIVE / _PASSIVE */
	__u8 kind;	/* TAILCAUSE_TCP_EV_* */
};

#endif
