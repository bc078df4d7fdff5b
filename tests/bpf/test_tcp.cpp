// SPDX-License-Identifier: Apache-2.0
// Root tests of the tcp family: real loopback connections with known payloads, real
// retransmissions (a private network namespace whose loopback drops what it receives for a
// while), the records aggregated per service pair.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "probes/tcp_probe.h"
#include "support.h"

namespace tailcause::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kDuration = "tailcause_tcp_connection_duration_seconds";
constexpr const char* kRtt = "tailcause_tcp_rtt_seconds";
constexpr const char* kSent = "tailcause_tcp_sent_bytes";
constexpr const char* kReceived = "tailcause_tcp_received_bytes";
constexpr const char* kRetransmits = "tailcause_tcp_retransmits";

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd_ = std::exchange(o.fd_, -1);
    return *this;
  }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

struct Loopback {
  int family;              // AF_INET or AF_INET6
  const char* ip;          // as given to inet_pton
  std::string label_host;  // how the service pair shows it ("127.0.0.1", "[::1]")
};

const Loopback kV4{AF_INET, "127.0.0.1", "127.0.0.1"};
const Loopback kV6{AF_INET6, "::1", "[::1]"};

sockaddr_storage make_addr(const Loopback& lo, uint16_t port, socklen_t* len) {
  sockaddr_storage ss{};
  if (lo.family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, lo.ip, &a->sin_addr);
    *len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, lo.ip, &a->sin6_addr);
    *len = sizeof *a;
  }
  return ss;
}

// A TCP socket whose blocking calls (accept, recv, send) give up after 20 s, so a test that
// goes wrong fails instead of hanging.
Fd tcp_socket(int family) {
  Fd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw std::runtime_error(std::string("socket: ") + strerror(errno));
  const timeval limit{20, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  return fd;
}

// A listening socket on an ephemeral port of `lo`.
Fd listen_on(const Loopback& lo, uint16_t* port) {
  Fd fd = tcp_socket(lo.family);
  socklen_t len;
  sockaddr_storage ss = make_addr(lo, 0, &len);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd.get(), 64) != 0) {
    throw std::runtime_error(std::string("bind/listen: ") + strerror(errno));
  }
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  *port = ntohs(lo.family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                     : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return fd;
}

Fd connect_to(int family, const sockaddr_storage& ss, socklen_t len) {
  Fd fd = tcp_socket(family);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    throw std::runtime_error(std::string("connect: ") + strerror(errno));
  }
  return fd;
}

// Accepted sockets inherit the listener's timeouts.
Fd accept_from(int listener) {
  Fd fd(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (fd.get() < 0) throw std::runtime_error(std::string("accept: ") + strerror(errno));
  return fd;
}

void send_all(int fd, size_t n) {
  std::vector<char> buf(n, 'x');
  for (size_t done = 0; done < n;) {
    const ssize_t w = send(fd, buf.data() + done, n - done, MSG_NOSIGNAL);
    if (w <= 0) throw std::runtime_error(std::string("send: ") + strerror(errno));
    done += static_cast<size_t>(w);
  }
}

// Reads until EOF; returns the bytes read.
size_t drain(int fd) {
  char buf[65536];
  size_t total = 0;
  for (;;) {
    const ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0) throw std::runtime_error(std::string("recv: ") + strerror(errno));
    if (r == 0) return total;
    total += static_cast<size_t>(r);
  }
}

// One exchange: the client sends `request` bytes, the server reads them, answers `reply`
// bytes and closes; the client reads the reply to EOF and closes. With `client_half_closes`
// the client shuts its side down after the request (it sends the first FIN, and the server
// reads to EOF); without, the server closes first.
struct Exchange {
  size_t request = 10000;
  size_t reply = 3000;
  bool client_half_closes = true;
};

void read_exactly(int fd, size_t n) {
  std::vector<char> buf(n);
  for (size_t done = 0; done < n;) {
    const ssize_t r = recv(fd, buf.data() + done, n - done, 0);
    if (r <= 0) throw std::runtime_error("recv: short read");
    done += static_cast<size_t>(r);
  }
}

// The server's side of one exchange on an accepted connection; returns the bytes it read.
size_t serve_one(int conn, const Exchange& x) {
  size_t got = x.request;
  if (x.client_half_closes) {
    got = drain(conn);
  } else {
    read_exactly(conn, x.request);
  }
  send_all(conn, x.reply);
  return got;
}

// Serves `n` exchanges on `listener` (in the calling thread); returns the bytes it read.
size_t serve(int listener, int n, const Exchange& x) {
  size_t got = 0;
  for (int i = 0; i < n; ++i) got += serve_one(accept_from(listener).get(), x);
  return got;
}

// The client's side of one exchange; returns the bytes of the reply.
size_t client(int family, const sockaddr_storage& ss, socklen_t len, const Exchange& x) {
  Fd fd = connect_to(family, ss, len);
  send_all(fd.get(), x.request);
  if (x.client_half_closes) shutdown(fd.get(), SHUT_WR);
  return drain(fd.get());
}

// Runs `body` on a thread of its own in a fresh network namespace with loopback up, so that
// what it does to the network (dropping packets) touches nothing else. Returns body().
template <typename F>
auto in_private_netns(F body) {
  return std::async(
             std::launch::async,
             [body] {
               if (unshare(CLONE_NEWNET) != 0) {
                 throw std::runtime_error(std::string("unshare(CLONE_NEWNET): ") + strerror(errno));
               }
               Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
               ifreq ifr{};
               strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
               if (ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0)
                 throw std::runtime_error("SIOCGIFFLAGS");
               ifr.ifr_flags |= IFF_UP;
               if (ioctl(s.get(), SIOCSIFFLAGS, &ifr) != 0)
                 throw std::runtime_error("SIOCSIFFLAGS");
               return body();
             })
      .get();
}

// While alive, every packet that loopback receives in the calling thread's network namespace
// is dropped (a two-instruction tc classifier on ingress). The sender's transmit succeeds, so
// TCP only learns of the loss by its timers and retransmits: a retransmission made to happen.
class LoopbackIngressDrop {
 public:
  LoopbackIngressDrop() {
    const bpf_insn drop_all[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, TC_ACT_SHOT},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    prog_ = Fd(bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "drop_all", "GPL", drop_all, 2, nullptr));
    if (prog_.get() < 0) throw std::runtime_error("load tc drop program");
    hook_.sz = sizeof hook_;
    hook_.ifindex = static_cast<int>(if_nametoindex("lo"));
    hook_.attach_point = BPF_TC_INGRESS;
    const int err = bpf_tc_hook_create(&hook_);
    if (err && err != -EEXIST) throw std::runtime_error("create tc ingress hook on lo");
    opts_.sz = sizeof opts_;
    opts_.prog_fd = prog_.get();
    if (bpf_tc_attach(&hook_, &opts_) != 0) throw std::runtime_error("attach tc drop program");
  }
  ~LoopbackIngressDrop() {
    opts_.prog_fd = 0;
    opts_.prog_id = 0;
    opts_.flags = 0;
    bpf_tc_detach(&hook_, &opts_);
  }

 private:
  Fd prog_;
  bpf_tc_hook hook_{};
  bpf_tc_opts opts_{};
};

class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    probe = probes::make_tcp_probe();
  }
  void TearDown() override {
    if (probe) probe->stop();
  }

  core::MetricSet scrape() {
    probe->consume();
    core::MetricSet m;
    probe->collect(m);
    return m;
  }
  static uint64_t count(const core::MetricSet& m, const char* name, const core::Labels& want) {
    const core::Sample* s = find_sample(m, name, want);
    return s ? s->histogram.count : 0;
  }
  // Scrapes until both pairs counted `n` closed connections, or 10 s passed (records reach
  // user space asynchronously).
  core::MetricSet scrape_until_closed(const core::Labels& a, const core::Labels& b, uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    core::MetricSet m = scrape();
    while ((count(m, kDuration, a) < n || count(m, kDuration, b) < n) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
      m = scrape();
    }
    return m;
  }

  // Runs `n` exchanges over `lo`; returns the server's port.
  static uint16_t run_exchanges(const Loopback& lo, int n, const Exchange& x) {
    uint16_t port = 0;
    Fd listener = listen_on(lo, &port);
    auto server = std::async(std::launch::async, [&] { return serve(listener.get(), n, x); });
    socklen_t len;
    const sockaddr_storage ss = make_addr(lo, port, &len);
    for (int i = 0; i < n; ++i) EXPECT_EQ(client(lo.family, ss, len, x), x.reply);
    EXPECT_EQ(server.get(), n * x.request);
    return port;
  }

  // The client-side (active) and server-side (passive) pairs of a service on `lo`.
  static std::pair<core::Labels, core::Labels> pairs(const std::string& host, uint16_t port) {
    const std::string server = host + ":" + std::to_string(port);
    const std::string any_port = host + ":*";
    return {{{"local", any_port}, {"remote", server}}, {{"local", server}, {"remote", any_port}}};
  }

  // n exchanges of x over lo: each side's pair counts n connections and exactly the payload.
  void expect_exact_exchanges(const Loopback& lo, int n, const Exchange& x) {
    const uint16_t port = run_exchanges(lo, n, x);
    const auto [active, passive] = pairs(lo.label_host, port);
    const auto m = scrape_until_closed(active, passive, n);
    for (const auto& [side, labels, sent, received] :
         {std::tuple{"client", active, x.request, x.reply},
          std::tuple{"server", passive, x.reply, x.request}}) {
      SCOPED_TRACE(side);
      EXPECT_EQ(count(m, kDuration, labels), static_cast<uint64_t>(n));
      EXPECT_EQ(value(m, kSent, labels), static_cast<double>(n * sent));
      EXPECT_EQ(value(m, kReceived, labels), static_cast<double>(n * received));
      // One smoothed-RTT sample per closed connection, plus any sampled while connected.
      EXPECT_GE(count(m, kRtt, labels), static_cast<uint64_t>(n));
      EXPECT_GE(value(m, kRetransmits, labels), 0);  // the series exists
      // Durations and RTTs are real times: positive, in cumulative buckets below the count.
      for (const char* name : {kDuration, kRtt}) {
        const core::Sample* h = find_sample(m, name, labels);
        ASSERT_NE(h, nullptr) << name;
        EXPECT_GT(h->histogram.sum, 0) << name;
        ASSERT_FALSE(h->histogram.buckets.empty()) << name;
        EXPECT_LE(h->histogram.buckets.back().second, h->histogram.count) << name;
      }
    }
  }

  core::Config config;
  probes::NodeSignals signals;
  probes::CgroupNames names{host_layout()};
  probes::ProbeContext ctx{host_features(), config, names, signals};
  std::unique_ptr<probes::ProbeFamily> probe;
};

TEST_F(TcpTest, LoopbackExchangesCountPerServicePair) {
  probe->start(ctx);
  ASSERT_GE(probe->event_fd(), 0);
  expect_exact_exchanges(kV4, 20, Exchange{});

  EXPECT_EQ(value(scrape(), "tailcause_events_lost", {{"source", "tcp"}}), 0);
}

// Closing connections wakes nobody: the records wait for the daemon's next drain (every
// 100 ms) unless the backlog grows large. Woken at every close, as before, each connection
// cost its client and its server a self-IPI (a VM exit on guests) and a switch to the daemon:
// tcp_set_state ran 2.1 us on average for the 11 state changes of an HTTP call, 0.7 without.
TEST_F(TcpTest, ClosesDoNotWakeTheReader) {
  probe->start(ctx);
  Fd ep(epoll_create1(EPOLL_CLOEXEC));
  ASSERT_GE(ep.get(), 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(epoll_ctl(ep.get(), EPOLL_CTL_ADD, probe->event_fd(), &ev), 0);
  // Empty the ring, then let epoll poll the descriptor again: whatever the node's other
  // connections left there before is gone from its ready list.
  probe->consume();
  epoll_event out{};
  epoll_wait(ep.get(), &out, 1, 0);
  const uint16_t port = run_exchanges(kV4, 5, Exchange{});
  EXPECT_EQ(epoll_wait(ep.get(), &out, 1, 0), 0) << "a closed connection woke the reader";
  // The records are all there for the next drain.
  const auto [active, passive] = pairs(kV4.label_host, port);
  const auto m = scrape_until_closed(active, passive, 5);
  EXPECT_EQ(count(m, kDuration, active), 5u);
  EXPECT_EQ(count(m, kDuration, passive), 5u);
}

// The server closes first: its socket is handed to TIME_WAIT before the client's FIN arrives,
// and the client's closes from CLOSE_WAIT. The payload counts stay exact.
TEST_F(TcpTest, ServerClosingFirstKeepsPayloadExact) {
  probe->start(ctx);
  expect_exact_exchanges(kV4, 10,
                         Exchange{.request = 4321, .reply = 65432, .client_half_closes = false});
}

// Kernels without BTF tracepoints get the raw_tp flavour of every handler: same numbers.
TEST_F(TcpTest, RawTracepointFlavourCountsTheSame) {
  probes::Features raw = host_features();
  raw.tp_btf = false;
  ASSERT_TRUE(raw.raw_tp);
  probe->start(probes::ProbeContext{raw, config, names, signals});
  expect_exact_exchanges(kV4, 5, Exchange{});
}

TEST_F(TcpTest, Ipv6PairsAreBracketed) {
  probe->start(ctx);
  expect_exact_exchanges(kV6, 5, Exchange{});
}

// IPv6 sockets talking to an IPv4 peer carry v4-mapped addresses; they print as IPv4.
TEST_F(TcpTest, V4MappedPairsPrintAsIpv4) {
  probe->start(ctx);
  expect_exact_exchanges(Loopback{AF_INET6, "::ffff:127.0.0.1", "127.0.0.1"}, 5, Exchange{});
}

// A long transfer on one connection gives RTT samples while it lives, not only at close.
TEST_F(TcpTest, BulkTransferSamplesRttWhileConnected) {
  probe->start(ctx);
  const Exchange x{.request = 64u << 20, .reply = 1};
  const uint16_t port = run_exchanges(kV4, 1, x);
  const auto [active, passive] = pairs(kV4.label_host, port);
  const auto m = scrape_until_closed(active, passive, 1);
  EXPECT_EQ(value(m, kSent, active), static_cast<double>(x.request));
  EXPECT_EQ(value(m, kReceived, passive), static_cast<double>(x.request));
  // 64 MiB is ~1000 received segments at the server and ~500 ACKs at the client; one in 64
  // is sampled, on top of one sample per side at close.
  EXPECT_GT(count(m, kRtt, active) + count(m, kRtt, passive), 2u);
}

// Packets dropped on the way in are retransmitted by the sender, and counted for its pair.
TEST_F(TcpTest, DroppedSegmentsAreCountedAsRetransmits) {
  probe->start(ctx);
  const Exchange x;
  const uint16_t port = in_private_netns([&] {
    uint16_t port = 0;
    Fd listener = listen_on(kV4, &port);
    socklen_t len;
    const sockaddr_storage ss = make_addr(kV4, port, &len);
    Fd client = connect_to(AF_INET, ss, len);
    Fd server = accept_from(listener.get());
    {
      LoopbackIngressDrop drop;
      send_all(client.get(), x.request);  // lost; the loss probe and RTO retransmit it
      std::this_thread::sleep_for(500ms);
    }
    shutdown(client.get(), SHUT_WR);
    if (serve_one(server.get(), x) != x.request) throw std::runtime_error("request lost");
    server.reset();
    if (drain(client.get()) != x.reply) throw std::runtime_error("reply lost");
    return port;
  });
  const auto [active, passive] = pairs(kV4.label_host, port);
  const auto m = scrape_until_closed(active, passive, 1);
  EXPECT_GE(value(m, kRetransmits, active), 1);
  // Retransmissions resend bytes; the payload counts do not grow with them.
  EXPECT_EQ(value(m, kSent, active), static_cast<double>(x.request));
  EXPECT_EQ(value(m, kReceived, passive), static_cast<double>(x.request));
}

// Labels stay bounded: beyond top_k pairs, connections land in local="__other__",
// remote="__other__", and nothing is lost from the totals. (Other loopback traffic on the host
// may take budget slots too, so this checks the invariants rather than which pairs won.)
TEST_F(TcpTest, PairsBeyondTopKFoldIntoOther) {
  config.top_k = 2;
  probe->start(ctx);
  constexpr int kServices = 3, kEach = 2;
  const Exchange x{.request = 1000, .reply = 100};
  std::vector<std::pair<core::Labels, core::Labels>> ours;
  for (int i = 0; i < kServices; ++i) {
    ours.push_back(pairs(kV4.label_host, run_exchanges(kV4, kEach, x)));
  }

  const core::Labels other = {{"local", "__other__"}, {"remote", "__other__"}};
  const auto total = [](const core::MetricSet& m, const char* name, bool histogram) {
    double sum = 0;
    for (const auto& s : samples_of(m, name)) sum += histogram ? s.histogram.count : s.value;
    return sum;
  };
  core::MetricSet m = scrape();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (total(m, kDuration, true) < 2 * kServices * kEach &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    m = scrape();
  }
  EXPECT_LE(samples_of(m, kDuration).size(), config.top_k + 1);
  EXPECT_GE(total(m, kDuration, true), 2 * kServices * kEach);
  EXPECT_GE(total(m, kSent, false), kServices * kEach * (x.request + x.reply));
  ASSERT_NE(find_sample(m, kDuration, other), nullptr);
  int folded = 0;
  for (const auto& [active, passive] : ours) {
    for (const auto& labels : {active, passive}) folded += !find_sample(m, kDuration, labels);
  }
  EXPECT_GE(folded, 2 * kServices - static_cast<int>(config.top_k));
  EXPECT_GE(probe->folded_label_values(), static_cast<uint64_t>(folded));

  // Folded series stay monotonic: more connections only add to "__other__".
  const uint64_t before = count(m, kDuration, other);
  run_exchanges(kV4, 1, x);
  m = scrape_until_closed(other, other, before + 2);
  EXPECT_GE(count(m, kDuration, other), before + 2);
}

TEST_F(TcpTest, RefusesToStartWithoutRingBuffer) {
  probes::Features no_ringbuf = host_features();
  no_ringbuf.ringbuf = false;
  const probes::ProbeContext c{no_ringbuf, config, names, signals};
  try {
    probe->start(c);
    FAIL() << "started without a ring buffer";
  } catch (const probes::ProbeError& e) {
    EXPECT_NE(std::string(e.what()).find("ring buffer"), std::string::npos) << e.what();
  }
  EXPECT_EQ(probe->event_fd(), -1);
}

}  // namespace
}  // namespace tailcause::testing
