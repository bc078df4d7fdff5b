// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Attribution family: the records bpf/attrib.bpf.c sends through its ring buffer and the keys of
 * its maps, shared with src/core/record/stage_record.cpp and src/probes/attrib_probe.cpp
 * (C, __u8/__u32/__u64/char only; every struct is a multiple of 8 bytes with no implicit padding).
 */
#ifndef TAILCAUSE_ATTRIB_H
#define TAILCAUSE_ATTRIB_H

#include "hist.h"

/* Bounds of the in-kernel maps (see the declarations in attrib.bpf.c). */
#define ATTRIB_MAX_REQUESTS  16384 /* requests between request_begin and request_end */
#define ATTRIB_MAX_PROCESSES 4096  /* processes with live requests (cleanup at exit) */
#define ATTRIB_MAX_LAYERS    1024  /* distinct {layer, batch size} pairs */
/* Records in flight to user space. The kernel maps all of the ring's pages into the daemon at
 * once (src/probes/ring_reader.cpp maps them once), so it costs its size in resident memory:
 * kept small, and the reader is woken early instead (next line). */
#define ATTRIB_RINGBUF_BYTES (4 << 20)
/* The reader is woken once the backlog passes this share of the ring (1/8: 512 KiB), and
 * drains it while the rest absorbs what arrives meanwhile. */
#define ATTRIB_RINGBUF_WAKEUP_DIVISOR 8
#define ATTRIB_MAX_RECIPES	      256  /* uprobe recipes (library + symbol -> stage) */
#define ATTRIB_MAX_ANOMALY_PROCESSES  8192 /* processes whose last kernel anomaly is kept (LRU) */
#define ATTRIB_MAX_RECLAIM_CLOCKS     4096 /* (CPU, process) reclaim clocks (LRU) */
#define ATTRIB_MAX_REMAPPED	      4096 /* processes that mapped something since the last scan */
#define ATTRIB_PROCESS_SLOTS	      1024 /* gates per process, by tgid (power of two) */

/* String limits of the SDK contract (sdk.h: TAILCAUSE_MAX_TENANT, TAILCAUSE_MAX_NAME), in
 * bytes without the NUL; the fields hold one more byte and are padded to 8. */
#define ATTRIB_MAX_TENANT  64
#define ATTRIB_MAX_NAME	   32
#define ATTRIB_TENANT_SIZE 72
#define ATTRIB_NAME_SIZE   40
/* A W3C trace id (32 hex digits) or traceparent (55 characters) as text; validated in user space */
#define ATTRIB_TRACE_ID_CHARS 55
#define ATTRIB_TRACE_ID_SIZE  64

/* Where a stage's wall time went. Unattributed (wall minus the rest) is computed in user space. */
enum attrib_component {
	ATTRIB_ON_CPU = 0,
	ATTRIB_RUNQUEUE = 1,	  /* runnable, waiting for a CPU */
	ATTRIB_CPU_THROTTLED = 2, /* runnable, but its cgroup had used up its CPU quota */
	ATTRIB_BLOCK_IO = 3,	  /* uninterruptible sleep: disk reads, page faults */
	ATTRIB_NETWORK = 4,	  /* asleep in a socket or poll/epoll syscall */
	ATTRIB_LOCK = 5,	  /* asleep in futex(): mutexes, condition variables, joins */
	ATTRIB_GPU = 6,		  /* asleep while a GPU-sync uprobe marked the thread */
	ATTRIB_SLEEP = 7,	  /* any other voluntary sleep */
	ATTRIB_KERNEL_COMPONENTS = 8,
};

/* Kinds of kernel anomaly (attrib_anomaly.kind): the component whose stretch it was
 * (ATTRIB_RUNQUEUE, ATTRIB_CPU_THROTTLED, ATTRIB_BLOCK_IO), or a major page fault. */
#define ATTRIB_ANOMALY_MAJOR_FAULT 16

/* Stage kinds of the SDK (enum tailcause_stage) plus the daemon's own. */
#define ATTRIB_STAGE_OTHER 6 /* named by the stage_begin `name` argument */
#define ATTRIB_STAGE_KINDS 7
#define ATTRIB_STAGE_NONE  255 /* a worker span of a request that was between stages */
/* Or'ed into stage_begin's kind (TAILCAUSE_STAGE_FOLLOWS): the thread's open stage of the same
 * request ends where this one begins, one probe instead of stage_end and stage_begin. */
#define ATTRIB_STAGE_FOLLOWS 0x100

enum attrib_record_type {
	ATTRIB_REC_STAGE = 1,
	ATTRIB_REC_REQUEST = 2,
	ATTRIB_REC_CACHE = 3,
	ATTRIB_REC_QUALITY = 4,
	ATTRIB_REC_EXEC = 5,	     /* a process exec'd: user space looks for new USDT binaries */
	ATTRIB_REC_PROCESS_EXIT = 6, /* a process with requests exited: user space frees them */
	ATTRIB_REC_CACHE_ACTION = 7, /* a cache library's action (warm-up, rebalance...) */
};

/* attrib_identity.flags */
#define ATTRIB_ID_NO_REQUEST	   (1u << 0) /* request id unknown (no request_begin seen) */
#define ATTRIB_ID_TENANT_TRUNCATED (1u << 1) /* tenant longer than ATTRIB_MAX_TENANT */
#define ATTRIB_ID_AGENT_TRUNCATED  (1u << 2)
#define ATTRIB_ID_BAD_TRACE_ID	   (1u << 3) /* trace context longer than 55 characters */
#define ATTRIB_ID_SYNTHETIC                                                                        \
	(1u << 4) /* no SDK request on the thread: a recipe span's own                             \
		   * per-thread request (tenant and agent: the comm) */

/* attrib_span.flags */
#define ATTRIB_SPAN_WORKER	   (1u << 0) /* a context_attach..detach span on another thread */
#define ATTRIB_SPAN_ABORTED	   (1u << 1) /* the thread exited (or exec'd) mid-stage */
#define ATTRIB_SPAN_REPLACED	   (1u << 2) /* closed by a second stage_begin on the same thread */
#define ATTRIB_SPAN_MISMATCH	   (1u << 3) /* stage_end named another request or stage kind */
#define ATTRIB_SPAN_NAME_TRUNCATED (1u << 4)
#define ATTRIB_SPAN_RECIPE	   (1u << 5) /* begun by a uprobe recipe, not by the SDK */
#define ATTRIB_SPAN_RECIPE_CALL	   (1u << 6) /* ... whose call is a whole request (request: call) */

/* What a recipe does with the calls of its symbol (attrib_recipe.mode). */
enum attrib_recipe_mode {
	ATTRIB_RECIPE_SPAN = 0,	    /* the call is a stage on its thread */
	ATTRIB_RECIPE_GPU_SYNC = 1, /* time inside the call is the current stage's gpu component */
	ATTRIB_RECIPE_COUNT = 2,    /* calls are only counted (no uretprobe) */
};

/* The attrib_recipes map's value, indexed by the recipe index (the uprobes' BPF cookie). */
struct attrib_recipe {
	__u32 mode;	  /* enum attrib_recipe_mode */
	__u32 stage_kind; /* 0..6 (ATTRIB_STAGE_OTHER: named by stage_name) */
	char stage_name[ATTRIB_NAME_SIZE];
	__u32 whole_request; /* 1: each call is a whole request (its span: ATTRIB_SPAN_RECIPE_CALL)
			      */
};

/* Indexes of attrib_events_lost. */
#define ATTRIB_LOST_DROPPED  0 /* ring buffer or map full */
#define ATTRIB_LOST_SWITCHES 1 /* switch-ins the kernel did not report (recovered) */
#define ATTRIB_LOST_KINDS    2

/* Indexes of attrib_critpath (per-CPU counts, for tests and the overhead figures). */
#define ATTRIB_CRIT_RESOLVED 0 /* a span's lock/sleep wait split by its waker's history */
#define ATTRIB_CRIT_PARTIAL  1 /* ... whose history did not reach back to the wait's start */
#define ATTRIB_CRIT_PEER     2 /* a span's network wait split by the local thread that answered */
#define ATTRIB_CRIT_KINDS    3
/* A span thread's history: rings of its state changes with its cumulative components, one per
 * level; level 0 takes every change, level 1 one at least 2 ms after its last, level 2 one at
 * least 64 ms after (each ring covers 16 of its spacing or more: waits of 1 s and longer are
 * read from the coarse ring). */
#define ATTRIB_HISTORY	      16
#define ATTRIB_HISTORY_LEVELS 3
#define ATTRIB_HISTORY_SPACING_NS(level)                                                           \
	((level) == 0 ? 0ULL : (level) == 1 ? 2000000ULL : 64000000ULL)

/* Bad input from the SDK, counted per kind (attrib_sdk_errors) and exported as
 * tailcause_sdk_errors_total{kind}; names in stage_record.cpp. */
enum attrib_sdk_error {
	ATTRIB_ERR_STAGE_END_WITHOUT_BEGIN = 0,
	ATTRIB_ERR_STAGE_BEGIN_TWICE = 1,
	ATTRIB_ERR_UNKNOWN_STAGE_KIND = 2,
	ATTRIB_ERR_UNKNOWN_REQUEST = 3,
	ATTRIB_ERR_TENANT_TOO_LONG = 4,
	ATTRIB_ERR_NAME_TOO_LONG = 5, /* agent, stage or cache name */
	ATTRIB_ERR_REQUEST_BEGIN_TWICE = 6,
	ATTRIB_ERR_REQUEST_END_WITHOUT_BEGIN = 7,
	ATTRIB_ERR_STAGE_MISMATCH = 8,
	ATTRIB_ERR_DETACH_WITHOUT_ATTACH = 9,
	ATTRIB_ERR_ATTACH_TWICE = 10,
	ATTRIB_ERR_EXIT_MID_STAGE = 11,
	ATTRIB_ERR_BAD_CACHE_RESULT = 12,
	ATTRIB_ERR_LAYER_END_WITHOUT_BEGIN = 13,
	ATTRIB_ERR_BAD_TRACE_ID = 14,
	/* a string argument on a page not present (a non-sleepable program cannot fault it in;
	 * the SDK touches its strings first, so this means a caller that bypassed it) */
	ATTRIB_ERR_UNREADABLE_STRING = 15,
	/* a uprobe recipe call whose return was never seen (longjmp, probes attached or released
	 * mid-call): its state was dropped at the thread's next call */
	ATTRIB_ERR_RECIPE_RETURN_MISSED = 16,
	ATTRIB_ERR_BAD_CACHE_ACTION = 17,
	ATTRIB_KERNEL_ERRORS = 18,
};

/* Who a piece of work is for: copied from the request at stage_begin / context_attach. */
struct attrib_identity {
	__u64 request_id;
	char tenant[ATTRIB_TENANT_SIZE]; /* NUL-terminated, unvalidated bytes */
	char agent[ATTRIB_NAME_SIZE];
	char trace_id[ATTRIB_TRACE_ID_SIZE]; /* NUL-terminated text, empty when none */
	__u32 flags;			     /* ATTRIB_ID_* */
	__u32 tgid;
};

/* The remote end of a connected IPv4/IPv6 socket a span waited on in a socket syscall. */
struct attrib_peer {
	__u8 addr[16]; /* network order: IPv4 in the first 4 bytes, IPv6 (maybe v4-mapped) in 16 */
	__u32 family;  /* AF_INET (2) or AF_INET6 (10); 0: none */
	__u32 port;    /* host order */
	__u64 wait_ns; /* network wait on this peer, summed over the span's sleeps */
};

/* Peers whose network wait a span sums (task context only); the span reports the one with
 * the most. A span waiting on more peers recycles the slot of the one with the least. */
#define ATTRIB_PEER_SLOTS 4

/* One stage (or worker span) of one thread, with its wall time split into components. */
struct attrib_span {
	__u64 start_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 end_ns;
	__u64 component_ns[ATTRIB_KERNEL_COMPONENTS];
	__u64 page_cache_misses; /* pages added to the page cache by this thread's reads/faults */
	__u64 major_faults;
	__u64 bytes_read; /* read by read(2), pread64(2), readv(2)... (task rchar) */
	__u32 stage_kind; /* 0..6, or ATTRIB_STAGE_NONE */
	__u32 flags;	  /* ATTRIB_SPAN_* */
	char stage_name[ATTRIB_NAME_SIZE];
	struct attrib_peer peer; /* the peer with the most network wait (family 0: none) */
	/* Run-queue waits of the span that its CFS run queue's throttle clock says were (partly)
	 * throttled: the kernel's own evidence, for stages too short for a cpu.stat reading. */
	__u32 throttled_waits;
	/* Critical path: the thread whose wake-ups moved the most of this span's waits out of
	 * lock/sleep (or network, for a local peer) into its own causes (0: none), that time, the
	 * component most of it went to, and what the waits were before (ATTRIB_LOCK: the thread
	 * held the lock; ATTRIB_NETWORK: it answered on a socket). */
	__u32 waker_tid;
	__u64 waker_ns;
	__u32 waker_component;
	__u32 waker_wait;
};

struct attrib_record_header {
	__u32 type; /* enum attrib_record_type */
	__u32 tid;  /* thread that produced it (pid for EXEC/PROCESS_EXIT) */
};

struct attrib_stage_record {
	struct attrib_record_header hdr;
	__u64 cgroup_id;
	struct attrib_identity id;
	struct attrib_span span;
};

struct attrib_request_record {
	struct attrib_record_header hdr;
	__u64 cgroup_id;
	struct attrib_identity id;
	__u64 start_ns;
	__u64 end_ns;
	__s64 status;	      /* 0 ok, else the application's error code */
	__u64 tokens;	      /* token probes seen */
	__u64 first_token_ns; /* 0: no token */
	__u64 last_token_ns;
};

struct attrib_cache_record {
	struct attrib_record_header hdr;
	struct attrib_identity id;
	char cache[ATTRIB_NAME_SIZE];
	__s64 result; /* enum tailcause_cache_result: 0 hit, 1 miss, 2 stale */
	__u64 age_ns;
	__u64 key_hash;
	__u64 time_ns; /* when the lookup was reported (CLOCK_MONOTONIC) */
	__u32 name_truncated;
	__u32 pad;
};

/* Actions of a cache library (cache_action probe): 0 warm-up (count: entries loaded),
 * 1 rebalance (count: the tenant's new quota in bytes), 2 invalidate (entries dropped by a
 * model version change), 3 reject (1: an insert the admission policy refused), 4 evict
 * (entries evicted to fit a quota). */
#define ATTRIB_CACHE_ACTIONS 5

struct attrib_cache_action_record {
	struct attrib_record_header hdr; /* tid: the thread that fired it */
	char tenant[ATTRIB_TENANT_SIZE];
	char cache[ATTRIB_NAME_SIZE];
	__s64 action;
	__u64 count;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u32 tgid;
	__u16 tenant_truncated;
	__u16 name_truncated;
};

/* The last kernel anomaly of a thread or a process: a run-queue wait, a throttled stretch or a
 * block-I/O sleep of at least anomaly_min_ns accrued by a span, or a major fault in a span. */
struct attrib_anomaly {
	__u64 end_ns;	   /* CLOCK_MONOTONIC (bpf_ktime_get_ns); 0: none */
	__u64 duration_ns; /* 0 for a major fault (its duration is not measured) */
	__u32 kind;	   /* ATTRIB_RUNQUEUE, ATTRIB_CPU_THROTTLED, ATTRIB_BLOCK_IO or
			    * ATTRIB_ANOMALY_MAJOR_FAULT */
	__u32 pad;
};

struct attrib_quality_record {
	struct attrib_record_header hdr;
	struct attrib_identity id;
	__u64 entropy_micro;
	__u64 time_ns;			       /* when output_quality fired (CLOCK_MONOTONIC) */
	struct attrib_anomaly thread_anomaly;  /* the reporting thread's last anomaly */
	struct attrib_anomaly process_anomaly; /* its process's last anomaly, any thread */
};

struct attrib_process_record {
	struct attrib_record_header hdr; /* tid: the process id */
};

/* The requests map: key and value. */
struct attrib_request_key {
	__u32 tgid; /* request ids are per process */
	__u32 pad;
	__u64 request_id;
};

struct attrib_request {
	struct attrib_identity id;
	__u64 start_ns;
	__u64 first_token_ns;
	__u64 last_token_ns;
	__u64 tokens;
	__u64 cgroup_id;
	__u32 stage_kind; /* the stage its owner thread is in (for worker spans), or NONE */
	__u32 pad;
	char stage_name[ATTRIB_NAME_SIZE];
};

/* Layer timing, keyed by layer and batch size; value: per-CPU log2 histogram of ns. */
struct attrib_layer_key {
	__u32 layer;
	__u32 batch_size;
};

#endif
