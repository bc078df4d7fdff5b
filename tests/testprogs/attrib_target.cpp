// SPDX-License-Identifier: Apache-2.0
// Target of the attribution tests: runs agent stages through the SDK's USDT probes, each mode
// making one kernel cause dominate. It first waits (up to 30 s) until a tracer has enabled the
// probes it uses, so the test need not race the daemon's attachment. Prints "key=value" lines.
//
//   attrib_target cpu ID TENANT CPU_MS          generation stage burning CPU_MS of CPU time
//   attrib_target read ID TENANT FILE DROP [PROCS]
//                                               retrieval stage reading FILE (DROP 1: uncached),
//                                               in the cgroup of PROCS (a cgroup.procs file) if
//                                               given; prints the stage thread's cpu_ms=
//   attrib_target queued ID TENANT FILE HOW [PROCS]
//                                               the same uncached read pinned to CPU 0; HOW
//                                               spinner: request ID+1's generation stage
//                                               spins there in another thread meanwhile
//                                               (HOW alone: no spinner)
//   attrib_target slow-peer ID TENANT DELAY_MS [v6|poll]
//                                               tool stage waiting for a loopback peer
//                                               (127.0.0.1, ::1 with v6) in recv() (in poll()
//                                               on its socket with poll); prints port=
//   attrib_target peers ID TENANT               tool stage waiting 3 x 60 ms on peer a and
//                                               1 x 100 ms on peer b; prints port_a=, port_b=
//   attrib_target pingpong ID TENANT KIND N WAIT
//                                               two threads, each in a stage, pinned to CPU 0,
//                                               hand a byte back and forth N times over a pipe
//                                               or a loopback TCP connection (KIND pipe|tcp);
//                                               KIND outside: over a pipe, two threads in no
//                                               stage while the main thread's stage is open
//   attrib_target lock ID TENANT HOLD_MS        stage waiting for a mutex another thread holds
//   attrib_target handoff ID TENANT CPU_MS      embedding stage handing its work to a worker
//   attrib_target tenants N                     attrib-a (CPU) and attrib-b (sleep) interleaved
//   attrib_target llm ID TENANT                 cache lookups, layers, tokens, output entropy
//   attrib_target entropy ID TENANT N CPU_MS SPIKE_AT SYNC
//                                               N outputs (entropy 1.0, 2.0 for outputs
//                                               SPIKE_AT..+2), each after CPU_MS of CPU (0: a
//                                               1 ms sleep); SYNC 1: the spike's first output
//                                               follows a stall of 20 ms or more (throttling)
//   attrib_target bad                           out-of-order calls and bad strings
//   attrib_target exit-mid-stage ID             exits while two threads are in stages
//   attrib_target cold-strings RAW_ID SDK_ID    a request whose tenant lies on a page not yet
//                                               touched, fired past the SDK (RAW_ID) and
//                                               through it (SDK_ID); prints present_before=
//   attrib_target flood N THREADS WAIT          N stages per thread as fast as possible
//   attrib_target follows ID TENANT             embedding, retrieval and generation stages of
//                                               5 ms of CPU, each begun with
//                                               TAILCAUSE_STAGE_FOLLOWS and the last ended by
//                                               request_end (as tailcause instrument sends
//                                               them); then request ID+1's stage open while
//                                               request ID+2's follows it: still an error
//   attrib_target cond-helper ID TENANT CPU_MS  retrieval stage waiting on a condition variable
//                                               for a helper (context_attach) burning CPU_MS
//   attrib_target holder ID TENANT HOW MS       stage waiting for a mutex a helper holds while
//                                               it sleeps MS (HOW sleep) or burns MS of CPU
//                                               (HOW cpu); prints holder_tid=
//   attrib_target chain ID TENANT FILE          A's stage waits on B, B on C, C reads FILE
//                                               with O_DIRECT; prints b_tid=, c_tid=, bytes=
//   attrib_target pool-helper ID TENANT JOBS TASKS [cross]
//                                               JOBS retrieval stages, each handing a 50 us job
//                                               to a long-lived helper thread woken through a
//                                               condition variable (context_attach), 37 ms
//                                               apart; the helper and a CPU hog thread are
//                                               moved into the TASKS file (a v1 cgroup's
//                                               tasks), on the last CPU; prints helper_tid=.
//                                               cross: the helper sleeps on CPU 0 and each
//                                               wake-up lands it on the hog's CPU
//   attrib_target moving-wait ID TENANT CPU_MS TASKS
//                                               a generation stage burning CPU_MS of CPU in
//                                               a thread moved into the TASKS file (a v1
//                                               cgroup's tasks) beside a CPU hog on CPU 0,
//                                               while another thread flips the stage thread
//                                               between CPUs 0 and 1 every 2 ms: its waits
//                                               cross run queues; prints stage_tid=
//   attrib_target migrated-wait ID TENANT JOBS TASKS
//                                               JOBS stages of a thread in the TASKS file (a
//                                               v1 cgroup's tasks) beside a CPU hog of it on
//                                               CPU 1: each wakes the thread on CPU 0 while a
//                                               SCHED_FIFO thread holds that CPU, then moves
//                                               it to CPU 1 while it waits to run; one per
//                                               quota period, at its start
//   attrib_target cache-actions TENANT          libtailcause_cache's actions: inserts past a
//                                               small quota (evictions without admission,
//                                               rejects with it), a model version change
//                                               (invalidation), two rebalances; prints the
//                                               library's own counts per cache
//   attrib_target busy-peer ID TENANT CPU_MS PROCS HOW
//                                               tool stage asking a loopback server process
//                                               (moved into the cgroup of PROCS, a
//                                               cgroup.procs file, pinned to CPU 0) that burns
//                                               CPU_MS of CPU before it answers, waited for in
//                                               poll(); the thread that reads the request
//                                               answers (HOW direct) or hands it to a worker
//                                               thread through a condition variable (HOW
//                                               handoff); prints peer_tid= (the answering one)
#include <tailcause/sdk.h>
#include <tailcause/cache/vector_cache.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

uint64_t arg_u64(char** argv, int i) { return std::strtoull(argv[i], nullptr, 0); }

bool all_enabled(bool every_probe) {
  const bool core = TAILCAUSE_ENABLED(request_begin) && TAILCAUSE_ENABLED(request_end) &&
                    TAILCAUSE_ENABLED(stage_begin) && TAILCAUSE_ENABLED(stage_end) &&
                    TAILCAUSE_ENABLED(context_attach) && TAILCAUSE_ENABLED(context_detach);
  return core && (!every_probe || (TAILCAUSE_ENABLED(cache_lookup) && TAILCAUSE_ENABLED(token) &&
                                   TAILCAUSE_ENABLED(layer_begin) && TAILCAUSE_ENABLED(layer_end) &&
                                   TAILCAUSE_ENABLED(output_quality)));
}

bool wait_for_tracer(bool every_probe) {
  for (int i = 0; i < 3000 && !all_enabled(every_probe); ++i) std::this_thread::sleep_for(10ms);
  return all_enabled(every_probe);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void burn_cpu(double ms) {
  const double until = thread_cpu_ms() + ms;
  volatile uint64_t x = 0;
  while (thread_cpu_ms() < until) {
    for (int i = 0; i < 10000; ++i) x = x * 31 + i;
  }
}

// Allows thread `tid` (0: the caller) only `cpu`.
void pin(pid_t tid, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(tid, sizeof one, &one);
}

void cpu_mode(uint64_t id, const char* tenant, double ms) {
  tailcause_request_begin(id, tenant, "attrib-test", "4bf92f3577b34da6a3ce929d0e0e4736");
  tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
  burn_cpu(ms);
  tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
  tailcause_request_end(id, 0);
}

// FILE opened for a read stage (its pages dropped first when `drop`), and the process moved
// into the cgroup of `procs` (a cgroup.procs file) if given, once `buf` is touched: a memory
// cgroup charges only what comes after. Exits 2 on failure.
int open_for_read(const char* path, bool drop, const char* procs, std::vector<char>& buf) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  if (drop) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (procs) {
    std::fill(buf.begin(), buf.end(), 0);
    FILE* f = fopen(procs, "w");
    if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0) {
      perror(procs);
      _exit(2);
    }
  }
  return fd;
}

// A retrieval stage of request `id` reading `fd` to its end; prints bytes= and the stage
// thread's cpu_ms=.
void read_stage(uint64_t id, int fd, std::vector<char>& buf) {
  uint64_t total = 0;
  const double cpu_before = thread_cpu_ms();
  tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) total += n;
  tailcause_stage_end(id, TAILCAUSE_STAGE_RETRIEVAL);
  printf("bytes=%llu\ncpu_ms=%.3f\n", static_cast<unsigned long long>(total),
         thread_cpu_ms() - cpu_before);
}

void read_mode(uint64_t id, const char* tenant, const char* path, bool drop, const char* procs) {
  std::vector<char> buf(128 << 10);
  const int fd = open_for_read(path, drop, procs, buf);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  read_stage(id, fd, buf);
  tailcause_request_end(id, 0);
  close(fd);
}

// The read stage of read_mode (uncached) on CPU 0, in the cgroup of PROCS if given (a limited
// memory cgroup's cgroup.procs: the reader then reclaims memory for its pages). With `spinner`,
// a generation stage of request ID+1 spins on CPU 0 in another thread until the read is done:
// it waits to run whenever the reader runs, reclaiming or not. Prints the reader's bytes= and
// cpu_ms=.
void queued_mode(uint64_t id, const char* tenant, const char* path, bool spinner,
                 const char* procs) {
  std::vector<char> buf(128 << 10);
  const int fd = open_for_read(path, true, procs, buf);
  pin(0, 0);  // the spinner inherits it
  std::atomic<bool> spinning{!spinner}, done{false};
  std::thread spin;
  if (spinner) {
    spin = std::thread([&] {
      tailcause_request_begin(id + 1, tenant, "attrib-test", nullptr);
      tailcause_stage_begin(id + 1, TAILCAUSE_STAGE_GENERATION, "generation");
      spinning = true;
      volatile uint64_t x = 0;
      while (!done) {
        for (int i = 0; i < 10000; ++i) x = x * 31 + i;
      }
      tailcause_stage_end(id + 1, TAILCAUSE_STAGE_GENERATION);
      tailcause_request_end(id + 1, 0);
    });
  }
  while (!spinning) sched_yield();
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  read_stage(id, fd, buf);
  tailcause_request_end(id, 0);
  done = true;
  if (spin.joinable()) spin.join();
  close(fd);
}

// A loopback peer (127.0.0.1, or ::1 when `v6`) that answers `requests` requests of one
// connection, each after `delay_ms`. Returns its port.
int start_slow_peer(bool v6, int delay_ms, int requests, std::thread& server) {
  const int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  sockaddr_storage addr{};
  socklen_t len = v6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (v6) {
    reinterpret_cast<sockaddr_in6*>(&addr)->sin6_family = AF_INET6;
    reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr = in6addr_loopback;
  } else {
    reinterpret_cast<sockaddr_in*>(&addr)->sin_family = AF_INET;
    reinterpret_cast<sockaddr_in*>(&addr)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  if (bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(s, 4) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    perror("peer");
    exit(2);
  }
  server = std::thread([s, delay_ms, requests] {
    const int c = accept(s, nullptr, nullptr);
    char buf[64];
    for (int i = 0; c >= 0 && i < requests && recv(c, buf, sizeof buf, 0) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      if (send(c, "pong", 4, 0) < 0) perror("send");
    }
    if (c >= 0) close(c);
    close(s);
  });
  return ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                  : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

int connect_peer(bool v6, int port) {
  const int c = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  sockaddr_in a4{};
  sockaddr_in6 a6{};
  a4.sin_family = AF_INET;
  a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a4.sin_port = htons(port);
  a6.sin6_family = AF_INET6;
  a6.sin6_addr = in6addr_loopback;
  a6.sin6_port = htons(port);
  const int rc = v6 ? connect(c, reinterpret_cast<sockaddr*>(&a6), sizeof a6)
                    : connect(c, reinterpret_cast<sockaddr*>(&a4), sizeof a4);
  if (rc != 0) perror("connect");
  return c;
}

// One request and its answer, waited for in recv() or, as HTTP clients with a timeout do, in
// poll() on the one socket.
void ask(int c, bool poll_first = false) {
  char buf[16];
  pollfd one{c, POLLIN, 0};
  if (send(c, "ping", 4, 0) != 4 || (poll_first && poll(&one, 1, 10000) != 1) ||
      recv(c, buf, sizeof buf, 0) <= 0) {
    perror("client");
  }
}

void slow_peer_mode(uint64_t id, const char* tenant, int delay_ms, const std::string& how) {
  const bool v6 = how == "v6";
  std::thread server;
  const int port = start_slow_peer(v6, delay_ms, 1, server);
  printf("port=%d\n", port);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
  const int c = connect_peer(v6, port);
  ask(c, how == "poll");
  close(c);
  tailcause_stage_end(id, TAILCAUSE_STAGE_TOOL);
  tailcause_request_end(id, 0);
  server.join();
}

// The cache library's own counts are the reference the daemon's counters are checked against.
// Cache "attrib-lru" (admission off) evicts to make room; "attrib-tinylfu" (admission on)
// refuses one-off newcomers once full. Prints NAME.KEY=VALUE.
void cache_actions_mode(const char* tenant) {
  namespace tc = tailcause::cache;
  for (const bool admission : {false, true}) {
    tc::CacheOptions o;
    o.dim = 8;
    o.name = admission ? "attrib-tinylfu" : "attrib-lru";
    o.warmup = false;
    o.admission = admission;
    o.base_quota_bytes = 1;
    tc::VectorCache sizing(o);
    o.base_quota_bytes = sizing.entry_bytes(16) * 10;  // room for 10 entries
    tc::VectorCache cache(o);
    std::vector<float> v(o.dim);
    for (int i = 0; i < 300; ++i) {  // distinct vectors: far more than fit
      for (size_t d = 0; d < v.size(); ++d) v[d] = std::sin(static_cast<float>(i * 7 + d * 13));
      cache.insert(tenant, v, std::string(16, 'x'));
    }
    cache.rebalance();
    cache.set_model_version("v2");
    cache.rebalance();
    const tc::TenantStats s = cache.stats(tenant);
    for (const auto& [key, value] : {std::pair<const char*, uint64_t>{"evicted", s.evicted},
                                     {"rejected", s.rejected},
                                     {"invalidated", s.invalidated},
                                     {"rebalances", s.rebalances},
                                     {"quota_bytes", s.quota_bytes}}) {
      printf("%s.%s=%llu\n", o.name.c_str(), key, static_cast<unsigned long long>(value));
    }
  }
}

// The server runs in a process of its own, in the cgroup of `procs` (where the test limits its
// CPU), as a tool server beside an agent does; the stage's process stays outside it.
// Waits (up to 5 s) until every thread of `pid` sleeps. The local-peer path follows wake-ups:
// a request must find the server's threads asleep (in accept, recv, the worker's condition
// variable) to wake them, and under a 0.1 CPU quota they take tens of ms to get there.
void wait_until_asleep(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (int i = 0; i < 5000; ++i) {
    bool asleep = true;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream stat(task.path() / "stat");
      std::string line;
      std::getline(stat, line);
      const auto paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'S')
        asleep = false;
    }
    if (asleep && !ec) return;
    usleep(1000);
  }
  fprintf(stderr, "busy-peer: the server's threads never all slept\n");
}

// Writes `id` into a cgroup's `file` (cgroup.procs, or a v1 tasks file for one thread) and pins
// the calling thread to `cpu`; exits 2 when the cgroup refuses it.
void enter_cgroup(const char* file, int id, int cpu) {
  FILE* f = fopen(file, "w");
  if (!f || fprintf(f, "%d\n", id) < 0 || fclose(f) != 0) {
    perror(file);
    _exit(2);
  }
  pin(0, cpu);
}

void busy_peer_mode(uint64_t id, const char* tenant, double cpu_ms, const char* procs,
                    bool handoff) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ready[2];
  if (bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(s, 1) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || pipe(ready) != 0) {
    perror("busy-peer");
    exit(2);
  }
  const pid_t server = fork();
  if (server == 0) {
    close(ready[0]);
    enter_cgroup(procs, getpid(), 0);
    std::mutex mu;
    std::condition_variable cv;
    int conn = -1;  // handed to the worker
    auto answer = [cpu_ms](int c) {
      printf("peer_tid=%d\n", static_cast<int>(gettid()));
      burn_cpu(cpu_ms);
      if (send(c, "pong", 4, 0) < 0) perror("send");
    };
    std::thread worker;
    if (handoff) {
      worker = std::thread([&] {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return conn >= 0; });
        answer(conn);
      });
    }
    if (write(ready[1], "r", 1) != 1) _exit(2);
    const int c = accept(s, nullptr, nullptr);
    char buf[16];
    if (c < 0 || recv(c, buf, sizeof buf, 0) <= 0) _exit(2);
    if (!handoff) {
      answer(c);
      _exit(0);
    }
    {
      std::lock_guard lock(mu);
      conn = c;
    }
    cv.notify_one();
    worker.join();
    _exit(0);
  }
  close(s);
  close(ready[1]);
  char r;
  if (server < 0 || read(ready[0], &r, 1) != 1) {
    fprintf(stderr, "busy-peer: the server did not start\n");
    exit(2);
  }
  // Connected, and the request sent only once the server waits for it in recv().
  wait_until_asleep(server);
  const int c = connect_peer(false, ntohs(addr.sin_port));
  wait_until_asleep(server);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
  ask(c, true);
  close(c);
  tailcause_stage_end(id, TAILCAUSE_STAGE_TOOL);
  tailcause_request_end(id, 0);
  int status = 0;
  waitpid(server, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "busy-peer: the server failed\n");
    exit(2);
  }
}

// Peer a is asked three times (60 ms each), peer b once (100 ms): b had the longest single
// wait, a the most wait in all.
void peers_mode(uint64_t id, const char* tenant) {
  std::thread server_a, server_b;
  const int port_a = start_slow_peer(false, 60, 3, server_a);
  const int port_b = start_slow_peer(false, 100, 1, server_b);
  printf("port_a=%d\nport_b=%d\n", port_a, port_b);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
  const int a = connect_peer(false, port_a), b = connect_peer(false, port_b);
  ask(a);
  ask(b);
  ask(a);
  ask(a);
  close(a);
  close(b);
  tailcause_stage_end(id, TAILCAUSE_STAGE_TOOL);
  tailcause_request_end(id, 0);
  server_a.join();
  server_b.join();
}

// Both ends of a connected pair: a pipe each way, or one loopback TCP connection.
void connected_pair(bool tcp, int ends[2][2]) {
  if (!tcp) {
    int ab[2], ba[2];
    if (pipe(ab) != 0 || pipe(ba) != 0) exit(2);
    ends[0][0] = ba[0], ends[0][1] = ab[1], ends[1][0] = ab[0], ends[1][1] = ba[1];
    return;
  }
  std::thread server;
  const int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(l, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(l, 1) != 0 ||
      getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    exit(2);
  }
  const int c = connect_peer(false, ntohs(addr.sin_port)), s = accept(l, nullptr, nullptr);
  close(l);
  ends[0][0] = ends[0][1] = c;
  ends[1][0] = ends[1][1] = s;
}

// `outside`: the two threads are in no stage, but the main thread's stage is open meanwhile
// (what every other thread on a node costs while an agent works).
void pingpong_mode(uint64_t id, const char* tenant, bool tcp, bool outside, int rounds) {
  int ends[2][2];
  connected_pair(tcp, ends);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  if (outside) tailcause_stage_begin(id, TAILCAUSE_STAGE_OTHER, "open");
  auto side = [&](int me) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    if (!outside) tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
    char c = 'x';
    for (int i = 0; i < rounds; ++i) {
      if (me == 0 && write(ends[0][1], &c, 1) != 1) break;
      if (read(ends[me][0], &c, 1) != 1) break;
      if (me == 1 && write(ends[1][1], &c, 1) != 1) break;
    }
    if (!outside) tailcause_stage_end(id, TAILCAUSE_STAGE_TOOL);
  };
  const auto start = std::chrono::steady_clock::now();
  std::thread other(side, 1);
  if (outside) {
    std::thread first(side, 0);
    first.join();
  } else {
    side(0);
  }
  other.join();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  if (outside) tailcause_stage_end(id, TAILCAUSE_STAGE_OTHER);
  tailcause_request_end(id, 0);
  printf("elapsed_ns=%lld\n", static_cast<long long>(ns.count()));
}

void lock_mode(uint64_t id, const char* tenant, int hold_ms) {
  std::mutex mu;
  std::atomic<bool> held{false};
  std::thread holder([&] {
    std::lock_guard lock(mu);
    held = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  });
  while (!held) std::this_thread::sleep_for(1ms);
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_OTHER, "locked");
  { std::lock_guard lock(mu); }
  tailcause_stage_end(id, TAILCAUSE_STAGE_OTHER);
  tailcause_request_end(id, 0);
  holder.join();
}

void handoff_mode(uint64_t id, const char* tenant, double cpu_ms) {
  tailcause_request_begin(id, tenant, "attrib-test", "0af7651916cd43dd8448eb211c80319c");
  tailcause_stage_begin(id, TAILCAUSE_STAGE_EMBEDDING, "embedding");
  std::thread worker([&] {
    tailcause_context_attach(id);
    burn_cpu(cpu_ms);
    tailcause_context_detach(id);
    printf("worker_tid=%d\n", gettid());
  });
  worker.join();
  tailcause_stage_end(id, TAILCAUSE_STAGE_EMBEDDING);
  tailcause_request_end(id, 0);
}

void tenants_mode(int n) {
  std::thread a([n] {
    for (int i = 0; i < n; ++i) {
      const uint64_t id = 0xA0000 + i;
      tailcause_request_begin(id, "attrib-a", "attrib-test", nullptr);
      tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
      burn_cpu(15);
      tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
      tailcause_request_end(id, 0);
    }
  });
  std::thread b([n] {
    for (int i = 0; i < n; ++i) {
      const uint64_t id = 0xB0000 + i;
      tailcause_request_begin(id, "attrib-b", "attrib-test", nullptr);
      tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
      std::this_thread::sleep_for(15ms);
      tailcause_stage_end(id, TAILCAUSE_STAGE_TOOL);
      tailcause_request_end(id, 0);
    }
  });
  a.join();
  b.join();
}

void follows_mode(uint64_t id, const char* tenant) {
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_EMBEDDING, "embedding");
  burn_cpu(5);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL | TAILCAUSE_STAGE_FOLLOWS, "retrieval");
  burn_cpu(5);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION | TAILCAUSE_STAGE_FOLLOWS, "generation");
  burn_cpu(5);
  tailcause_request_end(id, 0);
  tailcause_request_begin(id + 1, tenant, "attrib-test", nullptr);
  tailcause_request_begin(id + 2, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id + 1, TAILCAUSE_STAGE_TOOL, "tool");
  tailcause_stage_begin(id + 2, TAILCAUSE_STAGE_RESPONSE | TAILCAUSE_STAGE_FOLLOWS, "response");
  tailcause_stage_end(id + 2, TAILCAUSE_STAGE_RESPONSE);
  tailcause_request_end(id + 2, 0);
  tailcause_request_end(id + 1, 0);
}

void bad_mode() {
  const std::string long_tenant(100, 't');
  const std::string long_name(50, 'n');
  tailcause_stage_end(0xBAD1, TAILCAUSE_STAGE_RETRIEVAL);  // end without begin
  tailcause_request_begin(0xBAD2, "attrib-bad", "attrib-test", nullptr);
  tailcause_stage_begin(0xBAD2, TAILCAUSE_STAGE_EMBEDDING, "embedding");
  tailcause_stage_begin(0xBAD2, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");  // begin twice
  tailcause_stage_end(0xBAD2, TAILCAUSE_STAGE_RETRIEVAL);
  tailcause_stage_begin(0xBAD2, 42, "weird");  // unknown kind
  tailcause_stage_end(0xBAD2, 42);
  tailcause_stage_begin(0xBAD2, TAILCAUSE_STAGE_OTHER, long_name.c_str());  // name too long
  tailcause_stage_end(0xBAD2, TAILCAUSE_STAGE_TOOL);                        // mismatch
  tailcause_cache_lookup(0xBAD2, "vectors", 7, 0, 0);                       // bad result
  tailcause_request_end(0xBAD2, 0);
  tailcause_request_begin(0xBAD3, long_tenant.c_str(), "attrib-test", nullptr);  // too long
  tailcause_stage_begin(0xBAD3, TAILCAUSE_STAGE_PROMPT, "prompt");
  tailcause_stage_end(0xBAD3, TAILCAUSE_STAGE_PROMPT);
  tailcause_request_end(0xBAD3, 0);
  tailcause_request_begin(0xBAD4, "\xff\xfe-not-utf8", "attrib-test", "xyz");  // bad bytes, id
  tailcause_stage_begin(0xBAD4, TAILCAUSE_STAGE_PROMPT, "prompt");
  tailcause_stage_end(0xBAD4, TAILCAUSE_STAGE_PROMPT);
  tailcause_request_end(0xBAD4, 1);
  tailcause_stage_begin(0xBAD5, TAILCAUSE_STAGE_EMBEDDING, "embedding");  // unknown request
  tailcause_stage_end(0xBAD5, TAILCAUSE_STAGE_EMBEDDING);
  tailcause_context_attach(0xBAD6);  // unknown request
  tailcause_context_detach(0xBAD7);  // detach without attach
  tailcause_request_end(0xBAD8, 1);  // end without begin
  tailcause_request_begin(0xBAD9, "attrib-bad", "attrib-test", nullptr);
  tailcause_request_begin(0xBAD9, "attrib-bad", "attrib-test",
                          "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01-and-more");
  // (twice; over-long: longer than a traceparent)
  tailcause_request_end(0xBAD9, 0);
  // A W3C traceparent: the request joins the caller's trace as a child of its span ...
  tailcause_request_begin(0xBADA, "attrib-bad", "attrib-test",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  tailcause_stage_begin(0xBADA, TAILCAUSE_STAGE_GENERATION, "openai:gpt-4o");
  tailcause_stage_end(0xBADA, TAILCAUSE_STAGE_GENERATION);
  tailcause_request_end(0xBADA, 0);
  // ... and one with upper-case hex is not a traceparent (counted as a bad trace id).
  tailcause_request_begin(0xBADB, "attrib-bad", "attrib-test",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
  tailcause_stage_begin(0xBADB, TAILCAUSE_STAGE_PROMPT, "prompt");
  tailcause_stage_end(0xBADB, TAILCAUSE_STAGE_PROMPT);
  tailcause_request_end(0xBADB, 0);
  tailcause_layer_end(3, 8);  // without begin
}

// A string on a page of this process that nothing has touched yet: a fresh private mapping of a
// file holding it, written with write() and never through the mapping.
const char* untouched_string(const char* text) {
  char path[] = "/tmp/attrib-cold-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, text, strlen(text) + 1) != static_cast<ssize_t>(strlen(text) + 1)) {
    perror("attrib_target: temporary file");
    exit(1);
  }
  void* p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  unlink(path);
  if (p == MAP_FAILED) {
    perror("attrib_target: mmap");
    exit(1);
  }
  return static_cast<const char*>(p);
}

// Whether the page holding `p` is mapped in this process (bit 63 of its /proc/self/pagemap entry).
bool page_present(const void* p) {
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  uint64_t entry = 0;
  const off_t at = reinterpret_cast<uintptr_t>(p) / 4096 * sizeof entry;
  const bool ok = fd >= 0 && pread(fd, &entry, sizeof entry, at) == sizeof entry;
  if (fd >= 0) close(fd);
  return ok && (entry >> 63) != 0;
}

void request_with_stage(uint64_t id) {
  tailcause_stage_begin(id, TAILCAUSE_STAGE_PROMPT, "prompt");
  tailcause_stage_end(id, TAILCAUSE_STAGE_PROMPT);
  tailcause_request_end(id, 0);
}

void cold_strings_mode(uint64_t raw_id, uint64_t sdk_id) {
  const char* raw_tenant = untouched_string("attrib-cold");
  const char* sdk_tenant = untouched_string("attrib-cold");
  const char* no_trace_id = nullptr;
  bool present = page_present(raw_tenant) || page_present(sdk_tenant);
  // Past the SDK, as a caller with its own probe macros would: nothing touches the tenant.
  STAP_PROBE4(tailcause, request_begin, raw_id, raw_tenant, "attrib-test", no_trace_id);
  request_with_stage(raw_id);
  present = present || page_present(sdk_tenant);
  tailcause_request_begin(sdk_id, sdk_tenant, "attrib-test", nullptr);
  request_with_stage(sdk_id);
  printf("present_before=%d\n", present ? 1 : 0);
}

void exit_mid_stage_mode(uint64_t id) {
  tailcause_request_begin(id, "attrib-exit", "attrib-test", nullptr);
  std::atomic<bool> in_stage{false};
  std::thread other([&] {
    tailcause_stage_begin(id, TAILCAUSE_STAGE_TOOL, "tool");
    in_stage = true;
    for (;;) std::this_thread::sleep_for(1s);
  });
  while (!in_stage) std::this_thread::sleep_for(1ms);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
  burn_cpu(5);
  fflush(stdout);
  _exit(0);  // both threads die mid-stage; the request never ends
}

// A generation stage as an LLM server would mark it: cache lookups, layers over a batch,
// output tokens, and the entropy of the output.
void llm_mode(uint64_t id, const char* tenant) {
  tailcause_request_begin(id, tenant, "attrib-llm", "0af7651916cd43dd8448eb211c80319c");
  tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");
  tailcause_cache_lookup(id, "vectors", TAILCAUSE_CACHE_HIT, 2'000'000'000, 11);
  tailcause_cache_lookup(id, "vectors", TAILCAUSE_CACHE_MISS, 0, 12);
  tailcause_cache_lookup(id, "vectors", TAILCAUSE_CACHE_STALE, 90'000'000'000, 13);
  tailcause_stage_end(id, TAILCAUSE_STAGE_RETRIEVAL);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
  std::this_thread::sleep_for(20ms);  // prefill: the first token comes later
  for (uint64_t token = 0; token < 10; ++token) {
    for (uint64_t layer = 0; layer < 2; ++layer) {
      tailcause_layer_begin(layer, 4);
      burn_cpu(0.2);
      tailcause_layer_end(layer, 4);
    }
    tailcause_token(id, token);
    std::this_thread::sleep_for(2ms);
  }
  tailcause_output_quality(id, 1'250'000);  // 1.25
  tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
  tailcause_request_end(id, 0);
}

double wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Burns CPU in 0.5 ms slices until one slice took 20 ms of wall time or more: the thread was
// stalled (throttled) during it and runs again now. Returns the stall, 0 after 5 s without one.
double burn_until_stalled() {
  const double give_up = wall_ms() + 5000;
  while (wall_ms() < give_up) {
    const double before = wall_ms();
    burn_cpu(0.5);
    if (wall_ms() - before >= 20) return wall_ms() - before;
  }
  return 0;
}

// A generation stage reporting the entropy of each output; a spike of three outputs at 2.0
// over a baseline of 1.0.
void entropy_mode(uint64_t id, const char* tenant, int n, double cpu_ms, int spike_at, bool sync) {
  tailcause_request_begin(id, tenant, "attrib-entropy", "4bf92f3577b34da6a3ce929d0e0e4736");
  tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
  for (int i = 0; i < n; ++i) {
    if (cpu_ms > 0) {
      burn_cpu(cpu_ms);
    } else {
      std::this_thread::sleep_for(1ms);
    }
    if (i == spike_at && sync) printf("stalled_ms=%.1f\n", burn_until_stalled());
    const bool spike = i >= spike_at && i < spike_at + 3;
    tailcause_output_quality(id, spike ? 2'000'000 : 1'000'000);
  }
  tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
  tailcause_request_end(id, 0);
}

void flood_mode(uint64_t n, int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([n, t] {
      const uint64_t id = 0xF000000 + t;
      tailcause_request_begin(id, "attrib-flood", "attrib-test", nullptr);
      for (uint64_t i = 0; i < n; ++i) {
        tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
        tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
      }
      tailcause_request_end(id, 0);
    });
  }
  for (auto& t : ts) t.join();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  printf("elapsed_ns=%lld\n", static_cast<long long>(ns.count()));
}

// One-shot hand-off: a thread waits on a condition variable until another says it is done.
struct Done {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  void set() {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return done; });
  }
};

void cond_helper_mode(uint64_t id, const char* tenant, double cpu_ms) {
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");
  Done done;
  std::thread helper([&] {
    tailcause_context_attach(id);
    burn_cpu(cpu_ms);
    printf("helper_tid=%d\n", gettid());
    done.set();
    tailcause_context_detach(id);
  });
  done.wait();
  tailcause_stage_end(id, TAILCAUSE_STAGE_RETRIEVAL);
  tailcause_request_end(id, 0);
  helper.join();
}

void pool_helper_mode(uint64_t id, const char* tenant, int jobs, const char* tasks, bool cross) {
  std::mutex mu;
  std::condition_variable cv;
  int posted = 0, finished = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> moved{0};
  std::atomic<pid_t> helper_tid{0};
  // Both on the last CPU: throttling is per CPU (a CPU's share of the quota lasts a helper that
  // barely runs), so the helper must wait to run on the CPU of the hog that spends the quota.
  const int cpu = std::max(0L, sysconf(_SC_NPROCESSORS_ONLN) - 1);
  // cross: the helper goes to sleep on CPU 0, where its cgroup has nothing else to run, and is
  // allowed only the hog's CPU while asleep: each wake-up queues it on another CPU's run queue
  // than the one it slept on.
  const int home = cross ? 0 : cpu;
  std::thread hog([&] {  // keeps the cgroup at its quota: a wake-up there waits to run
    enter_cgroup(tasks, gettid(), cpu);
    ++moved;
    volatile uint64_t x = 0;
    while (!stop) x = x * 31 + 7;
  });
  std::thread helper([&] {
    enter_cgroup(tasks, gettid(), home);
    helper_tid = gettid();
    ++moved;
    printf("helper_tid=%d\n", gettid());
    std::unique_lock lock(mu);
    for (int done = 0; done < jobs; ++done) {
      cv.wait(lock, [&] { return posted > done; });
      lock.unlock();
      tailcause_context_attach(id);
      burn_cpu(0.05);
      tailcause_context_detach(id);
      if (cross) pin(0, home);  // moves now: the next sleep is on CPU 0
      lock.lock();
      finished = done + 1;
      cv.notify_all();
    }
  });
  while (moved < 2) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);  // the helper is asleep on the condition variable
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  for (int j = 0; j < jobs; ++j) {
    tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");
    {
      std::unique_lock lock(mu);
      if (cross) pin(helper_tid, cpu);  // asleep: it moves when the job wakes it
      posted = j + 1;
      cv.notify_all();
      cv.wait(lock, [&] { return finished > j; });
    }
    tailcause_stage_end(id, TAILCAUSE_STAGE_RETRIEVAL);
    std::this_thread::sleep_for(37ms);  // lands the next job elsewhere in the 100 ms period
  }
  tailcause_request_end(id, 0);
  stop = true;
  helper.join();
  hog.join();
}

void moving_wait_mode(uint64_t id, const char* tenant, double cpu_ms, const char* tasks) {
  std::atomic<bool> stop{false};
  std::atomic<pid_t> stage_tid{0};
  std::thread hog([&] {  // spends the cgroup's quota on CPU 0: the stage waits mostly throttled
    enter_cgroup(tasks, gettid(), 0);
    volatile uint64_t x = 0;
    while (!stop) x = x * 31 + 7;
  });
  std::thread stage([&] {
    enter_cgroup(tasks, gettid(), 0);
    stage_tid = gettid();
    printf("stage_tid=%d\n", gettid());
    cpu_mode(id, tenant, cpu_ms);
    stop = true;
  });
  // An affinity change moves a waiting task to the other CPU's run queue at once.
  for (int flip = 1; !stop; flip ^= 1) {
    if (const pid_t tid = stage_tid) pin(tid, flip);
    std::this_thread::sleep_for(2ms);
  }
  stage.join();
  hog.join();
}

// The load balancer's case, made certain: a thread waiting to run on a CPU where its cgroup is
// not throttled is moved to one where it is. Right after the quota's period begins (its hog
// resumes on CPU 1) the thread wakes on CPU 0, held there by a SCHED_FIFO thread spinning
// 20 ms: it cannot run, and its cgroup's run queue there took runtime from the fresh quota.
// Once the hog has spent the rest and stopped (throttled on CPU 1), the thread is moved to
// CPU 1, and waits there, throttled, for the next period. Each stage is one such wait.
void migrated_wait_mode(uint64_t id, const char* tenant, int jobs, const char* tasks) {
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::condition_variable cv;
  int posted = 0, finished = 0;
  std::atomic<bool> stop{false}, holding{false};
  std::atomic<int> ready{0}, bursts{0};
  std::atomic<pid_t> stage_tid{0};
  std::atomic<Clock::rep> period_began{0}, hog_ran{0};
  pin(0, 1);             // this thread drives the waits from CPU 1: CPU 0 is the FIFO thread's
  std::thread hog([&] {  // spends the quota on CPU 1, and tells when it may run again
    enter_cgroup(tasks, gettid(), 1);
    ++ready;
    for (auto last = Clock::now(); !stop;) {
      const auto now = Clock::now();
      if (now - last > 20ms) period_began = now.time_since_epoch().count();
      hog_ran = now.time_since_epoch().count();
      last = now;
    }
  });
  std::thread blocker([&] {  // holds CPU 0 for 20 ms per burst asked
    pin(0, 0);
    sched_param fifo{};
    fifo.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
      perror("migrated-wait: SCHED_FIFO");
      _exit(2);
    }
    ++ready;
    for (int done = 0; !stop;) {
      if (bursts == done) {
        std::this_thread::sleep_for(200us);
        continue;
      }
      holding = true;
      const auto until = Clock::now() + 20ms;
      while (Clock::now() < until) {
      }
      holding = false;
      ++done;
    }
  });
  std::thread stage([&] {
    enter_cgroup(tasks, gettid(), 0);
    stage_tid = gettid();
    printf("stage_tid=%d\n", gettid());
    ++ready;
    tailcause_request_begin(id, tenant, "attrib-test", nullptr);
    std::unique_lock lock(mu);
    for (int j = 0; j < jobs; ++j) {
      tailcause_stage_begin(id, TAILCAUSE_STAGE_GENERATION, "generation");
      cv.wait(lock, [&] { return posted > j; });
      tailcause_stage_end(id, TAILCAUSE_STAGE_GENERATION);
      finished = j + 1;
      cv.notify_all();
    }
    tailcause_request_end(id, 0);
  });
  while (ready < 3) std::this_thread::sleep_for(1ms);
  for (int j = 0; j < jobs; ++j) {
    for (const auto seen = period_began.load(); period_began == seen;) {
      std::this_thread::sleep_for(100us);
    }
    ++bursts;
    while (!holding) {
    }
    {
      std::lock_guard lock(mu);
      posted = j + 1;
      cv.notify_all();  // wakes the stage thread on CPU 0, which the FIFO thread holds
    }
    // Until the hog has not run for 3 ms (throttled), 15 ms at most (the FIFO thread's 20).
    const auto woken = Clock::now();
    while (Clock::now() - Clock::time_point(Clock::duration(hog_ran.load())) < 3ms &&
           Clock::now() - woken < 15ms) {
      std::this_thread::sleep_for(500us);
    }
    pin(stage_tid, 1);  // moved while it waits to run
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return finished > j; });
    }
    while (holding) {
    }
    std::this_thread::sleep_for(2ms);  // asleep again: back to CPU 0 for the next wake-up
    pin(stage_tid, 0);
  }
  stop = true;
  stage.join();
  blocker.join();
  hog.join();
}

void holder_mode(uint64_t id, const char* tenant, const std::string& how, int ms) {
  std::mutex mu;
  std::atomic<bool> held{false};
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  std::thread holder([&] {
    tailcause_context_attach(id);
    {
      std::lock_guard lock(mu);
      held = true;
      if (how == "cpu") {
        burn_cpu(ms);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
    }
    tailcause_context_detach(id);
    printf("holder_tid=%d\n", gettid());
  });
  while (!held) std::this_thread::sleep_for(1ms);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_OTHER, "locked");
  { std::lock_guard lock(mu); }
  tailcause_stage_end(id, TAILCAUSE_STAGE_OTHER);
  tailcause_request_end(id, 0);
  holder.join();
}

void chain_mode(uint64_t id, const char* tenant, const char* path) {
  // O_DIRECT in 4 KiB reads: each one waits for the device, with next to no CPU in between.
  const int fd = open(path, O_RDONLY | O_DIRECT);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  tailcause_request_begin(id, tenant, "attrib-test", nullptr);
  tailcause_stage_begin(id, TAILCAUSE_STAGE_RETRIEVAL, "retrieval");
  Done b_done, c_done;
  std::thread c([&] {
    tailcause_context_attach(id);
    void* buf = aligned_alloc(4096, 4096);
    uint64_t total = 0;
    for (ssize_t n; (n = read(fd, buf, 4096)) > 0;) total += n;
    free(buf);
    printf("c_tid=%d\nbytes=%llu\n", gettid(), static_cast<unsigned long long>(total));
    c_done.set();
    tailcause_context_detach(id);
  });
  std::thread b([&] {
    tailcause_context_attach(id);
    c_done.wait();
    printf("b_tid=%d\n", gettid());
    b_done.set();
    tailcause_context_detach(id);
  });
  b_done.wait();
  tailcause_stage_end(id, TAILCAUSE_STAGE_RETRIEVAL);
  tailcause_request_end(id, 0);
  b.join();
  c.join();
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: attrib_target MODE ARGS (see the source)\n");
    return 2;
  }
  const std::string mode = argv[1];
  // flood and pingpong also run untraced (WAIT 0), as the baseline of the cost figures.
  const int wait_arg = mode == "flood" ? 4 : mode == "pingpong" ? 6 : 0;
  const bool wait = !wait_arg || (argc > wait_arg && std::atoi(argv[wait_arg]) != 0);
  if (wait && !wait_for_tracer(mode == "llm" || mode == "entropy")) {
    fprintf(stderr, "attrib_target: probes were never enabled\n");
    return 3;
  }
  if (mode == "cpu" && argc == 5) {
    cpu_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]));
  } else if (mode == "read" && (argc == 6 || argc == 7)) {
    read_mode(arg_u64(argv, 2), argv[3], argv[4], std::atoi(argv[5]) != 0,
              argc == 7 ? argv[6] : nullptr);
  } else if (mode == "queued" && (argc == 6 || argc == 7) &&
             (std::string(argv[5]) == "spinner" || std::string(argv[5]) == "alone")) {
    queued_mode(arg_u64(argv, 2), argv[3], argv[4], std::string(argv[5]) == "spinner",
                argc == 7 ? argv[6] : nullptr);
  } else if (mode == "slow-peer" && (argc == 5 || argc == 6)) {
    slow_peer_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]), argc == 6 ? argv[5] : "");
  } else if (mode == "peers" && argc == 4) {
    peers_mode(arg_u64(argv, 2), argv[3]);
  } else if (mode == "pingpong" && argc == 7) {
    pingpong_mode(arg_u64(argv, 2), argv[3], std::string(argv[4]) == "tcp",
                  std::string(argv[4]) == "outside", std::atoi(argv[5]));
  } else if (mode == "lock" && argc == 5) {
    lock_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]));
  } else if (mode == "handoff" && argc == 5) {
    handoff_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]));
  } else if (mode == "tenants" && argc == 3) {
    tenants_mode(std::atoi(argv[2]));
  } else if (mode == "llm" && argc == 4) {
    llm_mode(arg_u64(argv, 2), argv[3]);
  } else if (mode == "entropy" && argc == 8) {
    entropy_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]), std::atof(argv[5]),
                 std::atoi(argv[6]), std::atoi(argv[7]) != 0);
  } else if (mode == "follows" && argc == 4) {
    follows_mode(arg_u64(argv, 2), argv[3]);
  } else if (mode == "bad") {
    bad_mode();
  } else if (mode == "cold-strings" && argc == 4) {
    cold_strings_mode(arg_u64(argv, 2), arg_u64(argv, 3));
  } else if (mode == "exit-mid-stage" && argc == 3) {
    exit_mid_stage_mode(arg_u64(argv, 2));
  } else if (mode == "cond-helper" && argc == 5) {
    cond_helper_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]));
  } else if (mode == "pool-helper" &&
             (argc == 6 || (argc == 7 && argv[6] == std::string("cross")))) {
    pool_helper_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]), argv[5], argc == 7);
  } else if (mode == "moving-wait" && argc == 6) {
    moving_wait_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]), argv[5]);
  } else if (mode == "migrated-wait" && argc == 6) {
    migrated_wait_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]), argv[5]);
  } else if (mode == "holder" && argc == 6) {
    holder_mode(arg_u64(argv, 2), argv[3], argv[4], std::atoi(argv[5]));
  } else if (mode == "chain" && argc == 5) {
    chain_mode(arg_u64(argv, 2), argv[3], argv[4]);
  } else if (mode == "cache-actions" && argc == 3) {
    cache_actions_mode(argv[2]);
  } else if (mode == "busy-peer" && argc == 7 &&
             (std::string(argv[6]) == "direct" || std::string(argv[6]) == "handoff")) {
    busy_peer_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]), argv[5],
                   std::string(argv[6]) == "handoff");
  } else if (mode == "flood" && argc == 5) {
    flood_mode(arg_u64(argv, 2), std::atoi(argv[3]));
  } else {
    fprintf(stderr, "attrib_target: bad arguments for %s\n", mode.c_str());
    return 2;
  }
  printf("done\n");
  return 0;
}
