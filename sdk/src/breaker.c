// SPDX-License-Identifier: MIT
/*
 * tailcause_sdk_breaker_state() and tailcause_sdk_cache_state(): ask the daemon's socket about
 * one (tenant, agent) breaker or one (tenant, cache) vector cache, one connection per call,
 * bounded by a 100 ms deadline so an agent never hangs on it. Protocol:
 * src/core/detect/breaker_protocol.h ("state TENANT AGENT\n" -> "ok closed|open consecutive=N
 * retry_after_ms=M\n"; "cache TENANT CACHE\n" -> "ok healthy|breakdown competition_permille=C
 * miss_permille=R lookups=N\n").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tailcause/sdk_lib.h"

#define TAILCAUSE_SDK_EXPORT __attribute__((visibility("default")))

#define BREAKER_TIMEOUT_MS 100
#define BREAKER_MAX_LINE   512 /* request and reply lines, "\n" included */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on fd until `deadline` (now_ms()); 0 when ready, else a negative errno. */
static int wait_for(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int rc = poll(&p, 1, (int)left);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Appends `s` percent-encoded (anything but printable ASCII other than '%'; empty: "%") at
 * out[*len]; -ENAMETOOLONG when it does not fit in `cap`. */
static int append_encoded(char *out, size_t cap, size_t *len, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	if (*s == '\0') {
		if (*len + 1 > cap)
			return -ENAMETOOLONG;
		out[(*len)++] = '%';
		return 0;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p > ' ' && *p < 0x7f && *p != '%') {
			if (*len + 1 > cap)
				return -ENAMETOOLONG;
			out[(*len)++] = (char)*p;
		} else {
			if (*len + 3 > cap)
				return -ENAMETOOLONG;
			out[(*len)++] = '%';
			out[(*len)++] = hex[*p >> 4];
			out[(*len)++] = hex[*p & 15];
		}
	}
	return 0;
}

/* Matches `prefix` then at least one digit at *p (a uint64, no overflow); advances *p. */
static int parse_field(const char **p, const char *prefix, uint64_t *value)
{
	size_t n = strlen(prefix);
	if (strncmp(*p, prefix, n) != 0)
		return -1;
	const char *q = *p + n;
	uint64_t v = 0;
	if (*q < '0' || *q > '9')
		return -1;
	for (; *q >= '0' && *q <= '9'; q++) {
		if (v > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	*p = q;
	*value = v;
	return 0;
}

/* A reply's state word: 0 when *p starts with `zero`, 1 with `one` (then *p is past it), else
 * -EPROTO. */
static int match_state(const char **p, const char *zero, const char *one)
{
	size_t n = strlen(zero);
	if (strncmp(*p, zero, n) == 0) {
		*p += n;
		return 0;
	}
	n = strlen(one);
	if (strncmp(*p, one, n) == 0) {
		*p += n;
		return 1;
	}
	return -EPROTO;
}

/* "ok closed|open consecutive=N retry_after_ms=M" (without "\n"): 0 closed, 1 open. */
static int parse_reply(const char *line, uint32_t *retry_after_ms)
{
	const char *p = line;
	int state = match_state(&p, "ok closed ", "ok open ");
	if (state < 0)
		return state;
	uint64_t consecutive, retry;
	if (parse_field(&p, "consecutive=", &consecutive) != 0 || *p++ != ' ' ||
	    parse_field(&p, "retry_after_ms=", &retry) != 0 || *p != '\0')
		return -EPROTO;
	if (retry_after_ms)
		*retry_after_ms = retry > UINT32_MAX ? UINT32_MAX : (uint32_t)retry;
	return state;
}

static int connect_socket(const char *path, int64_t deadline)
{
	struct sockaddr_un addr;
	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof addr.sun_path)
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		int err = errno;
		if (err != EINPROGRESS) {
			close(fd);
			return -err; /* ENOENT, ECONNREFUSED: no daemon; EAGAIN: its backlog is full
				      */
		}
		int rc = wait_for(fd, POLLOUT, deadline);
		socklen_t len = sizeof err;
		if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0)
			rc = -err;
		if (rc != 0) {
			close(fd);
			return rc;
		}
	}
	return fd;
}

static int exchange(int fd, const char *request, size_t request_len, char *reply, int64_t deadline)
{
	int send_error = 0;
	for (size_t sent = 0; sent < request_len && !send_error;) {
		ssize_t n = send(fd, request + sent, request_len - sent, MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_for(fd, POLLOUT, deadline);
			if (rc != 0)
				return rc;
		} else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			/* A daemon with too many clients says "error busy" and closes, maybe before
			 * our request arrived: its line may still be there to read. */
			send_error = -errno;
		} else if (n < 0 && errno != EINTR) {
			return -errno;
		}
	}
	size_t got = 0;
	for (;;) {
		ssize_t n = recv(fd, reply + got, BREAKER_MAX_LINE - got, 0);
		if (n > 0) {
			char *nl = memchr(reply + got, '\n', (size_t)n);
			got += (size_t)n;
			if (nl) {
				*nl = '\0';
				return 0;
			}
			if (got == BREAKER_MAX_LINE)
				return -EPROTO; /* no reply line is this long */
		} else if (n == 0) {
			return send_error ? send_error : -EPROTO; /* closed before a whole line */
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_for(fd, POLLIN, deadline);
			if (rc != 0)
				return rc;
		} else if (errno != EINTR) {
			return send_error ? send_error : -errno;
		}
	}
}

/* "COMMAND A B\n" with A and B percent-encoded, into request[BREAKER_MAX_LINE]; its length, or a
 * negative errno. */
static int format_request(char *request, const char *command, const char *a, const char *b)
{
	const size_t cap = BREAKER_MAX_LINE - 1; /* room for "\n" */
	size_t len = strlen(command);
	memcpy(request, command, len);
	request[len++] = ' ';
	int rc = append_encoded(request, cap, &len, a);
	if (rc == 0 && len + 1 <= cap) {
		request[len++] = ' ';
		rc = append_encoded(request, cap, &len, b);
	} else if (rc == 0) {
		rc = -ENAMETOOLONG;
	}
	if (rc != 0)
		return rc;
	request[len++] = '\n';
	return (int)len;
}

/* Sends "COMMAND A B" to the daemon's socket and reads its reply line (without "\n") into
 * reply[BREAKER_MAX_LINE + 1]; 0 or a negative errno ("error busy" is -EBUSY). errno is kept. */
static int ask_daemon(const char *command, const char *a, const char *b, char *reply)
{
	char request[BREAKER_MAX_LINE];
	const int len = format_request(request, command, a, b);
	if (len < 0)
		return len;
	const int saved_errno = errno;
	const int64_t deadline = now_ms() + BREAKER_TIMEOUT_MS;
	const char *path = secure_getenv("TAILCAUSE_BREAKER_SOCKET");
	if (!path || !*path)
		path = TAILCAUSE_SDK_BREAKER_SOCKET_DEFAULT;
	int fd = connect_socket(path, deadline);
	int rc = fd;
	if (fd >= 0) {
		rc = exchange(fd, request, (size_t)len, reply, deadline);
		close(fd);
	}
	if (rc == 0 && strncmp(reply, "error busy", 10) == 0 &&
	    (reply[10] == '\0' || reply[10] == ' '))
		rc = -EBUSY;
	errno = saved_errno;
	return rc;
}

TAILCAUSE_SDK_EXPORT int tailcause_sdk_breaker_state(const char *tenant, const char *agent,
						     uint32_t *retry_after_ms)
{
	if (!tenant || !agent)
		return -EINVAL;
	char reply[BREAKER_MAX_LINE + 1];
	const int rc = ask_daemon("state", tenant, agent, reply);
	return rc == 0 ? parse_reply(reply, retry_after_ms) : rc;
}

/* "ok healthy|breakdown competition_permille=C miss_permille=R lookups=N": 0 healthy,
 * 1 breakdown. */
static int parse_cache_reply(const char *line, struct tailcause_sdk_cache_view *view)
{
	const char *p = line;
	int state = match_state(&p, "ok healthy ", "ok breakdown ");
	if (state < 0)
		return state;
	uint64_t competition, miss, lookups;
	if (parse_field(&p, "competition_permille=", &competition) != 0 || *p++ != ' ' ||
	    parse_field(&p, "miss_permille=", &miss) != 0 || *p++ != ' ' ||
	    parse_field(&p, "lookups=", &lookups) != 0 || *p != '\0' || competition > 1000 ||
	    miss > 1000)
		return -EPROTO;
	if (view) {
		view->competition_permille = (uint32_t)competition;
		view->miss_permille = (uint32_t)miss;
		view->lookups = lookups;
	}
	return state;
}

TAILCAUSE_SDK_EXPORT int tailcause_sdk_cache_state(const char *tenant, const char *cache,
						   struct tailcause_sdk_cache_view *view)
{
	if (!tenant || !cache)
		return -EINVAL;
	char reply[BREAKER_MAX_LINE + 1];
	const int rc = ask_daemon("cache", tenant, cache, reply);
	return rc == 0 ? parse_cache_reply(reply, view) : rc;
}
