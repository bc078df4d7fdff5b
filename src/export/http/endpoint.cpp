// SPDX-License-Identifier: Apache-2.0
#include "export/http/endpoint.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "core/host/clock.h"

namespace tailcause::exporter::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Id = ConnectionTable::Id;

// The page is self-contained: it may load nothing from elsewhere, and only talks to this origin.
constexpr const char* kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'";
constexpr size_t kReadChunk = 4096;
// After an answer that closes the connection, what the client still sends is read and dropped
// for a while (a lingering close): closing with unread bytes would reset the connection and
// could destroy the answer before the client reads it.
constexpr size_t kLingerBytes = 1 << 20;
constexpr auto kLinger = std::chrono::seconds(2);
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

class Session;

}  // namespace

struct Endpoint::Impl {
  Impl(int listen_fd, EndpointLimits l, Route r);
  void accept();
  void on_accept(const beast::error_code& ec, tcp::socket socket);
  void refuse(tcp::socket& socket);
  void forget(Id id);

  EndpointLimits limits;
  Route route;
  // Touched on the I/O thread only (and once it has stopped, by the thread destroying this).
  ConnectionTable table;
  std::unordered_map<Id, Session*> sessions;
  Id next_id = 0;
  std::atomic<uint64_t> open{0}, evicted{0}, refused{0}, idle{0}, timed_out{0}, bad_request{0};
  // Destroyed before the tables above: its pending handlers own the sessions.
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::thread thread;
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Endpoint::Impl& ep, tcp::socket socket, Id id)
      : ep_(ep),
        stream_(std::move(socket)),
        buffer_(ep.limits.header_limit + kReadChunk),
        reader_(ep.limits.header_limit),
        id_(id) {}
  ~Session() { ep_.forget(id_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() { wait_for_request(); }

  // Closes it now: its pending operation ends with operation_aborted, which ends it.
  void evict() { stream_.close(); }

 private:
  std::chrono::seconds timeout() const { return std::chrono::seconds(ep_.limits.idle_timeout_s); }

  // The whole next request must arrive within the idle timeout, however it is dripped.
  void wait_for_request() {
    stream_.expires_after(timeout());
    process();
  }

  void process() {
    size_t used = 0;
    const std::string_view bytes(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const auto outcome = reader_.feed(bytes, used);
    buffer_.consume(used);
    switch (outcome) {
      case RequestReader::Outcome::need_more: read(); return;
      case RequestReader::Outcome::refused: {
        ++ep_.bad_request;
        const Refusal& r = reader_.refusal();
        head_ = false;
        keep_alive_ = false;
        version_ = 11;
        send({static_cast<unsigned>(r.status), "text/plain", r.reason + "\n"});
        return;
      }
      case RequestReader::Outcome::request: dispatch(); return;
    }
  }

  void read() {
    const size_t room = buffer_.max_size() - buffer_.size();
    if (room == 0) {  // the reader refuses before this; kept as a bound of its own
      ++ep_.bad_request;
      keep_alive_ = false;
      send({431, "text/plain", "request headers too large\n"});
      return;
    }
    stream_.async_read_some(
        buffer_.prepare(std::min(room, kReadChunk)),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_read(ec, n); });
  }

  void on_read(const beast::error_code& ec, size_t n) {
    if (ec) {
      if (ec == beast::error::timeout) {
        ++(buffer_.size() > 0 || reader_.started() ? ep_.timed_out : ep_.idle);
      }
      return;  // the client left, timed out or was evicted
    }
    buffer_.commit(n);
    process();
  }

  void dispatch() {
    const Request& request = reader_.request();
    head_ = request.method == "HEAD";
    keep_alive_ = request.keep_alive;
    version_ = request.version;
    ep_.table.answering(id_);
    // The route may answer from another thread: the answer comes back to this one. The
    // session is held only until then, so it always ends on the I/O thread.
    auto holder = std::make_shared<std::shared_ptr<Session>>(shared_from_this());
    asio::io_context& ioc = ep_.ioc;
    ep_.route(request, [holder, &ioc](api::Reply reply) {
      auto self = std::move(*holder);
      if (!self) return;  // answered twice: the first answer stands
      asio::post(ioc, [self = std::move(self), reply = std::move(reply)]() mutable {
        self->send(std::move(reply));
      });
    });
    reader_.reset();
  }

  void send(api::Reply reply) {
    res_ = {};
    res_.version(version_);
    res_.result(reply.status);
    res_.set(bhttp::field::content_type, reply.content_type);
    if (reply.status == 405) res_.set(bhttp::field::allow, "GET, HEAD");
    if (reply.status == 503) res_.set(bhttp::field::retry_after, "1");
    res_.set("X-Content-Type-Options", "nosniff");
    res_.set("Content-Security-Policy", kPagePolicy);
    res_.set(bhttp::field::cache_control, "no-store");
    // Generated content: no byte ranges (a Range header is ignored, the whole body is sent).
    res_.set(bhttp::field::accept_ranges, "none");
    if (head_) {
      res_.content_length(reply.body.size());  // what a GET would get, and no body
    } else {
      res_.body() = std::move(reply.body);
      res_.prepare_payload();
    }
    res_.keep_alive(keep_alive_);
    ep_.table.writing(id_, core::monotonic_ns());
    stream_.expires_after(timeout());
    bhttp::async_write(stream_, res_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_sent(ec);
    });
  }

  void on_sent(const beast::error_code& ec) {
    if (ec) {
      if (ec == beast::error::timeout) ++ep_.timed_out;
      return;
    }
    if (!keep_alive_) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      buffer_.clear();
      stream_.expires_after(kLinger);
      linger();
      return;
    }
    ep_.table.idle(id_, core::monotonic_ns());
    wait_for_request();  // a pipelined request may be buffered already
  }

  void linger() {
    if (lingered_ >= kLingerBytes) return;
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (!ec) self->linger();
                            });
  }

  Endpoint::Impl& ep_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  RequestReader reader_;
  Id id_;
  bhttp::response<bhttp::string_body> res_;
  bool head_ = false;
  bool keep_alive_ = false;
  unsigned version_ = 11;
  size_t lingered_ = 0;
};

}  // namespace

Endpoint::Impl::Impl(int listen_fd, EndpointLimits l, Route r)
    : limits(l), route(std::move(r)), table(l.connections) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  acceptor.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), listen_fd);
}

void Endpoint::Impl::accept() {
  acceptor.async_accept([this](const beast::error_code& ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void Endpoint::Impl::on_accept(const beast::error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors (EMFILE) or memory: try again shortly, never spin.
    spdlog::debug("http: accept: {}", ec.message());
    accept_retry.expires_after(kAcceptRetry);
    accept_retry.async_wait([this](const beast::error_code& e) {
      if (!e) accept();
    });
    return;
  }
  beast::error_code peer_ec;
  const auto peer = socket.remote_endpoint(peer_ec);
  const std::string address = peer_ec ? "unknown" : peer.address().to_string();
  const Id id = ++next_id;
  const auto admission = table.admit(id, address, core::monotonic_ns());
  for (const Id gone : admission.evicted) {
    ++evicted;
    if (auto it = sessions.find(gone); it != sessions.end()) it->second->evict();
  }
  if (admission.admitted) {
    auto session = std::make_shared<Session>(*this, std::move(socket), id);
    sessions.emplace(id, session.get());
    open = table.size();
    session->start();
  } else {
    ++refused;
    refuse(socket);
  }
  accept();
}

// No room: a short 503 if the socket takes it at once, then closed.
void Endpoint::Impl::refuse(tcp::socket& socket) {
  bhttp::response<bhttp::string_body> res{bhttp::status::service_unavailable, 11};
  res.set(bhttp::field::content_type, "text/plain");
  res.set(bhttp::field::retry_after, "1");
  res.body() = "too many connections are being answered; retry\n";
  res.keep_alive(false);
  res.prepare_payload();
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  bhttp::write(socket, res, ignored);
  socket.close(ignored);
}

void Endpoint::Impl::forget(Id id) {
  table.remove(id);
  sessions.erase(id);
  open = table.size();
}

Endpoint::Endpoint(int listen_fd, EndpointLimits limits, Route route)
    : impl_(std::make_unique<Impl>(listen_fd, limits, std::move(route))) {
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

Endpoint::~Endpoint() { stop(); }

void Endpoint::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->ioc.stop();
  impl_->thread.join();
}

EndpointStats Endpoint::stats() const {
  return {impl_->open.load(), impl_->evicted.load(),   impl_->refused.load(),
          impl_->idle.load(), impl_->timed_out.load(), impl_->bad_request.load()};
}

}  // namespace tailcause::exporter::http
