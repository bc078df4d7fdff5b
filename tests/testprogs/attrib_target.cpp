// Target of the attribution tests: runs agent stages through the SDK's USDT probes, each mode
// making one kernel cause dominate. It first waits (up to 30 s) until a tracer has enabled the
// probes it uses, so the test need not race the daemon's attachment. Prints "key=value" lines.
//
//   attrib_target cpu ID TENANT CPU_MS          generation stage burning CPU_MS of CPU time
//   attrib_target read ID TENANT FILE DROP      retrieval stage reading FILE (DROP 1: uncached)
//   attrib_target slow-peer ID TENANT DELAY_MS  tool stage waiting for a loopback peer
//   attrib_target lock ID TENANT HOLD_MS        stage waiting for a mutex another thread holds
//   attrib_target handoff ID TENANT CPU_MS      embedding stage handing its work to a worker
//   attrib_target tenants N                     attrib-a (CPU) and attrib-b (sleep) interleaved
//   attrib_target llm ID TENANT                 cache lookups, layers, tokens, output entropy
//   attrib_target bad                           out-of-order calls and bad strings
//   attrib_target exit-mid-stage ID             exits while two threads are in stages
//   attrib_target flood N THREADS WAIT          N stages per thread as fast as possible
#include <infertrace/sdk.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

uint64_t arg_u64(char** argv, int i) { return std::strtoull(argv[i], nullptr, 0); }

bool all_enabled(bool every_probe) {
  const bool core = INFERTRACE_ENABLED(request_begin) && INFERTRACE_ENABLED(request_end) &&
                    INFERTRACE_ENABLED(stage_begin) && INFERTRACE_ENABLED(stage_end) &&
                    INFERTRACE_ENABLED(context_attach) && INFERTRACE_ENABLED(context_detach);
  return core && (!every_probe || (INFERTRACE_ENABLED(cache_lookup) && INFERTRACE_ENABLED(token) &&
                                   INFERTRACE_ENABLED(layer_begin) && INFERTRACE_ENABLED(layer_end) &&
                                   INFERTRACE_ENABLED(output_quality)));
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

void cpu_mode(uint64_t id, const char* tenant, double ms) {
  infertrace_request_begin(id, tenant, "attrib-test", "4bf92f3577b34da6a3ce929d0e0e4736");
  infertrace_stage_begin(id, INFERTRACE_STAGE_GENERATION, "generation");
  burn_cpu(ms);
  infertrace_stage_end(id, INFERTRACE_STAGE_GENERATION);
  infertrace_request_end(id, 0);
}

void read_mode(uint64_t id, const char* tenant, const char* path, bool drop) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  if (drop) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::vector<char> buf(128 << 10);
  uint64_t total = 0;
  infertrace_request_begin(id, tenant, "attrib-test", nullptr);
  infertrace_stage_begin(id, INFERTRACE_STAGE_RETRIEVAL, "retrieval");
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) total += n;
  infertrace_stage_end(id, INFERTRACE_STAGE_RETRIEVAL);
  infertrace_request_end(id, 0);
  close(fd);
  printf("bytes=%llu\n", static_cast<unsigned long long>(total));
}

// A loopback peer that answers each request after `delay_ms`.
int start_slow_peer(int delay_ms, std::thread& server) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(s, 4) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    perror("peer");
    exit(2);
  }
  server = std::thread([s, delay_ms] {
    const int c = accept(s, nullptr, nullptr);
    char buf[64];
    if (c >= 0 && recv(c, buf, sizeof buf, 0) > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      if (send(c, "pong", 4, 0) < 0) perror("send");
    }
    if (c >= 0) close(c);
    close(s);
  });
  return ntohs(addr.sin_port);
}

void slow_peer_mode(uint64_t id, const char* tenant, int delay_ms) {
  std::thread server;
  const int port = start_slow_peer(delay_ms, server);
  infertrace_request_begin(id, tenant, "attrib-test", nullptr);
  infertrace_stage_begin(id, INFERTRACE_STAGE_TOOL, "tool");
  const int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  char buf[16];
  if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      send(c, "ping", 4, 0) != 4 || recv(c, buf, sizeof buf, 0) <= 0) {
    perror("client");
  }
  close(c);
  infertrace_stage_end(id, INFERTRACE_STAGE_TOOL);
  infertrace_request_end(id, 0);
  server.join();
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
  infertrace_request_begin(id, tenant, "attrib-test", nullptr);
  infertrace_stage_begin(id, INFERTRACE_STAGE_OTHER, "locked");
  { std::lock_guard lock(mu); }
  infertrace_stage_end(id, INFERTRACE_STAGE_OTHER);
  infertrace_request_end(id, 0);
  holder.join();
}

void handoff_mode(uint64_t id, const char* tenant, double cpu_ms) {
  infertrace_request_begin(id, tenant, "attrib-test", "0af7651916cd43dd8448eb211c80319c");
  infertrace_stage_begin(id, INFERTRACE_STAGE_EMBEDDING, "embedding");
  std::thread worker([&] {
    infertrace_context_attach(id);
    burn_cpu(cpu_ms);
    infertrace_context_detach(id);
    printf("worker_tid=%d\n", gettid());
  });
  worker.join();
  infertrace_stage_end(id, INFERTRACE_STAGE_EMBEDDING);
  infertrace_request_end(id, 0);
}

void tenants_mode(int n) {
  std::thread a([n] {
    for (int i = 0; i < n; ++i) {
      const uint64_t id = 0xA0000 + i;
      infertrace_request_begin(id, "attrib-a", "attrib-test", nullptr);
      infertrace_stage_begin(id, INFERTRACE_STAGE_GENERATION, "generation");
      burn_cpu(15);
      infertrace_stage_end(id, INFERTRACE_STAGE_GENERATION);
      infertrace_request_end(id, 0);
    }
  });
  std::thread b([n] {
    for (int i = 0; i < n; ++i) {
      const uint64_t id = 0xB0000 + i;
      infertrace_request_begin(id, "attrib-b", "attrib-test", nullptr);
      infertrace_stage_begin(id, INFERTRACE_STAGE_TOOL, "tool");
      std::this_thread::sleep_for(15ms);
      infertrace_stage_end(id, INFERTRACE_STAGE_TOOL);
      infertrace_request_end(id, 0);
    }
  });
  a.join();
  b.join();
}

void bad_mode() {
  const std::string long_tenant(100, 't');
  const std::string long_name(50, 'n');
  infertrace_stage_end(0xBAD1, INFERTRACE_STAGE_RETRIEVAL);  // end without begin
  infertrace_request_begin(0xBAD2, "attrib-bad", "attrib-test", nullptr);
  infertrace_stage_begin(0xBAD2, INFERTRACE_STAGE_EMBEDDING, "embedding");
  infertrace_stage_begin(0xBAD2, INFERTRACE_STAGE_RETRIEVAL, "retrieval");  // begin twice
  infertrace_stage_end(0xBAD2, INFERTRACE_STAGE_RETRIEVAL);
  infertrace_stage_begin(0xBAD2, 42, "weird");  // unknown kind
  infertrace_stage_end(0xBAD2, 42);
  infertrace_stage_begin(0xBAD2, INFERTRACE_STAGE_OTHER, long_name.c_str());  // name too long
  infertrace_stage_end(0xBAD2, INFERTRACE_STAGE_TOOL);                        // mismatch
  infertrace_cache_lookup(0xBAD2, "vectors", 7, 0, 0);                        // bad result
  infertrace_request_end(0xBAD2, 0);
  infertrace_request_begin(0xBAD3, long_tenant.c_str(), "attrib-test", nullptr);  // too long
  infertrace_stage_begin(0xBAD3, INFERTRACE_STAGE_PROMPT, "prompt");
  infertrace_stage_end(0xBAD3, INFERTRACE_STAGE_PROMPT);
  infertrace_request_end(0xBAD3, 0);
  infertrace_request_begin(0xBAD4, "\xff\xfe-not-utf8", "attrib-test", "xyz");  // bad bytes, id
  infertrace_stage_begin(0xBAD4, INFERTRACE_STAGE_PROMPT, "prompt");
  infertrace_stage_end(0xBAD4, INFERTRACE_STAGE_PROMPT);
  infertrace_request_end(0xBAD4, 1);
  infertrace_stage_begin(0xBAD5, INFERTRACE_STAGE_EMBEDDING, "embedding");  // unknown request
  infertrace_stage_end(0xBAD5, INFERTRACE_STAGE_EMBEDDING);
  infertrace_context_attach(0xBAD6);  // unknown request
  infertrace_context_detach(0xBAD7);  // detach without attach
  infertrace_request_end(0xBAD8, 1);  // end without begin
  infertrace_request_begin(0xBAD9, "attrib-bad", "attrib-test", nullptr);
  infertrace_request_begin(0xBAD9, "attrib-bad", "attrib-test",
                           "0123456789abcdef0123456789abcdef01234567");  // twice, over-long id
  infertrace_request_end(0xBAD9, 0);
  infertrace_layer_end(3, 8);  // without begin
}

void exit_mid_stage_mode(uint64_t id) {
  infertrace_request_begin(id, "attrib-exit", "attrib-test", nullptr);
  std::atomic<bool> in_stage{false};
  std::thread other([&] {
    infertrace_stage_begin(id, INFERTRACE_STAGE_TOOL, "tool");
    in_stage = true;
    for (;;) std::this_thread::sleep_for(1s);
  });
  while (!in_stage) std::this_thread::sleep_for(1ms);
  infertrace_stage_begin(id, INFERTRACE_STAGE_GENERATION, "generation");
  burn_cpu(5);
  fflush(stdout);
  _exit(0);  // both threads die mid-stage; the request never ends
}

// A generation stage as an LLM server would mark it: cache lookups, layers over a batch,
// output tokens, and the entropy of the output.
void llm_mode(uint64_t id, const char* tenant) {
  infertrace_request_begin(id, tenant, "attrib-llm", "0af7651916cd43dd8448eb211c80319c");
  infertrace_stage_begin(id, INFERTRACE_STAGE_RETRIEVAL, "retrieval");
  infertrace_cache_lookup(id, "vectors", INFERTRACE_CACHE_HIT, 2'000'000'000, 11);
  infertrace_cache_lookup(id, "vectors", INFERTRACE_CACHE_MISS, 0, 12);
  infertrace_cache_lookup(id, "vectors", INFERTRACE_CACHE_STALE, 90'000'000'000, 13);
  infertrace_stage_end(id, INFERTRACE_STAGE_RETRIEVAL);
  infertrace_stage_begin(id, INFERTRACE_STAGE_GENERATION, "generation");
  std::this_thread::sleep_for(20ms);  // prefill: the first token comes later
  for (uint64_t token = 0; token < 10; ++token) {
    for (uint64_t layer = 0; layer < 2; ++layer) {
      infertrace_layer_begin(layer, 4);
      burn_cpu(0.2);
      infertrace_layer_end(layer, 4);
    }
    infertrace_token(id, token);
    std::this_thread::sleep_for(2ms);
  }
  infertrace_output_quality(id, 1'250'000);  // 1.25
  infertrace_stage_end(id, INFERTRACE_STAGE_GENERATION);
  infertrace_request_end(id, 0);
}

void flood_mode(uint64_t n, int threads) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([n, t] {
      const uint64_t id = 0xF000000 + t;
      infertrace_request_begin(id, "attrib-flood", "attrib-test", nullptr);
      for (uint64_t i = 0; i < n; ++i) {
        infertrace_stage_begin(id, INFERTRACE_STAGE_GENERATION, "generation");
        infertrace_stage_end(id, INFERTRACE_STAGE_GENERATION);
      }
      infertrace_request_end(id, 0);
    });
  }
  for (auto& t : ts) t.join();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  printf("elapsed_ns=%lld\n", static_cast<long long>(ns.count()));
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr, "usage: attrib_target MODE ARGS (see the source)\n");
    return 2;
  }
  const std::string mode = argv[1];
  const bool wait = mode != "flood" || (argc > 4 && std::atoi(argv[4]) != 0);
  if (wait && !wait_for_tracer(mode == "llm")) {
    fprintf(stderr, "attrib_target: probes were never enabled\n");
    return 3;
  }
  if (mode == "cpu" && argc == 5) {
    cpu_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]));
  } else if (mode == "read" && argc == 6) {
    read_mode(arg_u64(argv, 2), argv[3], argv[4], std::atoi(argv[5]) != 0);
  } else if (mode == "slow-peer" && argc == 5) {
    slow_peer_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]));
  } else if (mode == "lock" && argc == 5) {
    lock_mode(arg_u64(argv, 2), argv[3], std::atoi(argv[4]));
  } else if (mode == "handoff" && argc == 5) {
    handoff_mode(arg_u64(argv, 2), argv[3], std::atof(argv[4]));
  } else if (mode == "tenants" && argc == 3) {
    tenants_mode(std::atoi(argv[2]));
  } else if (mode == "llm" && argc == 4) {
    llm_mode(arg_u64(argv, 2), argv[3]);
  } else if (mode == "bad") {
    bad_mode();
  } else if (mode == "exit-mid-stage" && argc == 3) {
    exit_mid_stage_mode(arg_u64(argv, 2));
  } else if (mode == "flood" && argc == 5) {
    flood_mode(arg_u64(argv, 2), std::atoi(argv[3]));
  } else {
    fprintf(stderr, "attrib_target: bad arguments for %s\n", mode.c_str());
    return 2;
  }
  printf("done\n");
  return 0;
}
