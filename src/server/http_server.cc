#include "server/http_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/error.h"

namespace il::server {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kFirstRead = 4096;
// After an answer that ends the connection while the client may still be
// sending (a body we refused to read), its bytes are read and dropped for a
// moment before closing: closing with unread data sends a reset, which can
// destroy the answer before the client has read it.
constexpr std::chrono::seconds kLingerTime{1};
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::chrono::seconds kRefusalWriteTime{1};
const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

bool ended_by_peer(const beast::error_code &ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::broken_pipe ||
         ec == net::error::bad_descriptor;
}

} // namespace

// What sessions share with the server.
struct SharedState {
  SharedState(HttpApp &a, const HttpLimits &l) : app(a), limits(l) {}
  HttpApp &app;
  const HttpLimits limits;
  HttpCounters counters;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> unanswered{0};
  std::mutex sessions_mutex;
  std::list<std::weak_ptr<HttpSession>> sessions;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
public:
  HttpSession(tcp::socket socket, SharedState &shared, net::io_context &ioc)
      : stream_(std::move(socket)), shared_(shared), ioc_(ioc),
        buffer_(shared.limits.header_bytes + 64 * 1024) {
    fd_ = stream_.socket().native_handle();
    shared_.counters.open.fetch_add(1);
  }
  ~HttpSession() {
    {
      std::lock_guard lock(shared_.sessions_mutex);
      if (registered_)
        shared_.sessions.erase(self_entry_);
    }
    if (counted_)
      shared_.unanswered.fetch_sub(1);
    shared_.counters.open.fetch_sub(1);
  }

  void start() {
    {
      std::lock_guard lock(shared_.sessions_mutex);
      self_entry_ =
          shared_.sessions.insert(shared_.sessions.end(), weak_from_this());
      registered_ = true;
    }
    net::dispatch(stream_.get_executor(),
                  [self = shared_from_this()] { self->wait_for_request(); });
  }

  net::io_context &io_context() { return ioc_; }
  std::uint64_t serial() const { return serial_; }

  // From any thread: the answer to request `serial` (ignored when it is not the
  // current one).
  void answer(std::uint64_t serial, HttpResponse res) {
    net::post(stream_.get_executor(), [self = shared_from_this(), serial,
                                       res = std::move(res)]() mutable {
      if (serial == self->serial_ && self->state_ == State::kHandling)
        self->send(std::move(res));
    });
  }

  void start_stream(std::uint64_t serial, HttpResponse head);
  void stream_chunk(std::uint64_t serial, std::string chunk);
  void stream_end(std::uint64_t serial);
  std::size_t stream_queued() const { return stream_queued_bytes_.load(); }

  bool client_gone() const {
    const int fd = fd_.load();
    if (fd < 0)
      return true;
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0)
      return false;
    // POLLIN alone is a pipelined next request, not a departure.
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  void stop_gracefully() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      if (self->state_ == State::kIdle)
        self->close(); // nothing received: nothing to answer
    });
  }
  void close_now() {
    net::post(stream_.get_executor(),
              [self = shared_from_this()] { self->close(); });
  }

private:
  enum class State {
    kIdle,
    kHead,
    kBody,
    kHandling,
    kWriting,
    kStreaming,
    kLingering,
    kClosed
  };

  void wait_for_request() {
    if (closing_)
      return close();
    state_ = State::kIdle;
    if (buffer_.size() > 0)
      return read_head(); // a pipelined request is already here
    stream_.expires_after(shared_.limits.idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(kFirstRead),
        [self = shared_from_this()](beast::error_code ec, std::size_t n) {
          if (ec)
            return self->close(); // idle timeout, or the client left
          self->buffer_.commit(n);
          self->read_head();
        });
  }

  void read_head() {
    state_ = State::kHead;
    parser_.emplace();
    parser_->header_limit(
        static_cast<std::uint32_t>(shared_.limits.header_bytes));
    parser_->body_limit(shared_.limits.body_bytes);
    stream_.expires_after(shared_.limits.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->on_head(ec);
        });
  }

  void on_head(beast::error_code ec) {
    if (ec)
      return on_read_error(ec);
    // Received from here on: a graceful stop reads the rest and answers it.
    if (!counted_) {
      counted_ = true;
      shared_.unanswered.fetch_add(1);
    }
    head_ = request_head(parser_->get().base());
    version_ = parser_->get().version();
    head_.keep_alive = parser_->keep_alive();
    const auto length = parser_->content_length();
    if (auto r = check_head(head_,
                            length ? std::optional<std::uint64_t>(*length)
                                   : std::nullopt,
                            shared_.limits))
      return refuse(refusal_response(*r));
    if (auto res = shared_.app.screen(head_))
      return refuse(std::move(*res));
    if (parser_->is_done())
      return on_body({});
    if (version_ >= 11 && iequals(head_.header("Expect"), "100-continue")) {
      stream_.expires_after(shared_.limits.body_timeout);
      return net::async_write(
          stream_, net::buffer(kContinue),
          [self = shared_from_this()](beast::error_code e, std::size_t) {
            if (e)
              return self->close();
            self->read_body();
          });
    }
    read_body();
  }

  void read_body() {
    state_ = State::kBody;
    stream_.expires_after(shared_.limits.body_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->on_body(ec);
        });
  }

  void on_body(beast::error_code ec) {
    if (ec)
      return on_read_error(ec);
    HttpRequest req = std::move(head_);
    req.body = std::move(parser_->get().body());
    req.keep_alive = parser_->get().keep_alive();
    parser_.reset();
    if (auto r = decode_body(req.header("Content-Encoding"), req.body,
                             shared_.limits.body_bytes)) {
      HttpResponse res = refusal_response(*r);
      res.close = !req.keep_alive;
      keep_alive_ = req.keep_alive;
      state_ = State::kHandling;
      return send(std::move(res));
    }
    keep_alive_ = req.keep_alive;
    state_ = State::kHandling;
    stream_.expires_never(); // the model may take long; client_gone() watches
                             // the client
    ++serial_;
    Responder responder(shared_from_this());
    try {
      shared_.app.handle(std::move(req), responder);
    } catch (const std::bad_alloc &) {
      responder.respond(refusal_response(
          {503, "Overloaded", "out of memory while reading the request"}));
    } catch (const std::exception &e) {
      responder.respond(refusal_response(
          {500, "Backend", std::string("internal error: ") + e.what()}));
    }
  }

  void on_read_error(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      shared_.counters.timed_out.fetch_add(1);
      return close(); // the stream closed the socket: nothing can be sent
    }
    if (ended_by_peer(ec))
      return close();
    refuse(refusal_response(parser_refusal(ec, shared_.limits)));
  }

  // An answer instead of reading the request (or the rest of it): the
  // connection ends after it unless nothing of the request is left unread.
  void refuse(HttpResponse res) {
    const bool whole = parser_ && parser_->is_done();
    keep_alive_ = whole && parser_->get().keep_alive();
    if (!keep_alive_)
      res.close = true;
    parser_.reset();
    state_ = State::kHandling;
    send(std::move(res));
  }

  http::response<http::string_body> to_beast(HttpResponse &res) {
    http::response<http::string_body> out{static_cast<http::status>(res.status),
                                          version_ >= 10 ? version_ : 11};
    for (auto &[name, value] : res.headers) {
      if (iequals(name, "Connection")) {
        if (iequals(value, "close"))
          res.close = true;
        continue;
      }
      out.set(name, value);
    }
    if (!res.content_type.empty())
      out.set(http::field::content_type, res.content_type);
    out.body() = std::move(res.body);
    out.keep_alive(keep_alive_ && !res.close && !closing_);
    out.prepare_payload();
    return out;
  }

  void send(HttpResponse res) {
    if (state_ == State::kClosed)
      return;
    response_ =
        std::make_unique<http::response<http::string_body>>(to_beast(res));
    state_ = State::kWriting;
    stream_.expires_after(shared_.limits.body_timeout);
    http::async_write(
        stream_, *response_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) {
          self->after_answer(ec, self->response_->keep_alive());
        });
  }

  void after_answer(beast::error_code ec, bool keep_alive) {
    response_.reset();
    if (counted_) {
      counted_ = false;
      shared_.unanswered.fetch_sub(1);
    }
    if (ec) {
      if (ec == beast::error::timeout)
        shared_.counters.timed_out.fetch_add(1);
      return close();
    }
    if (!keep_alive)
      return linger_close();
    wait_for_request();
  }

  void linger_close() {
    state_ = State::kLingering;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    buffer_.clear();
    linger_read(0);
  }
  void linger_read(std::size_t so_far) {
    stream_.expires_after(kLingerTime);
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = shared_from_this(),
                             so_far](beast::error_code ec, std::size_t n) {
                              self->buffer_.clear();
                              if (ec || so_far + n > kLingerBytes)
                                return self->close();
                              self->linger_read(so_far + n);
                            });
  }

  void close() {
    if (state_ == State::kClosed)
      return;
    state_ = State::kClosed;
    fd_ = -1;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    stream_chunks_.clear();
    stream_queued_bytes_ = 0;
  }

  // Streaming: the head, then chunks one write at a time.
  void write_next_chunk();

  beast::tcp_stream stream_;
  SharedState &shared_;
  net::io_context &ioc_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest head_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool closing_ = false;
  bool counted_ = false; // an unanswered request is counted for this session
  State state_ = State::kIdle;
  std::uint64_t serial_ = 0;
  std::atomic<int> fd_{-1};
  std::unique_ptr<http::response<http::string_body>> response_;
  std::list<std::weak_ptr<HttpSession>>::iterator self_entry_;
  bool registered_ = false;

  // Streaming state (strand only, but the byte count is read from any thread).
  std::unique_ptr<http::response<http::empty_body>> stream_head_;
  std::unique_ptr<http::response_serializer<http::empty_body>>
      stream_serializer_;
  std::deque<std::string> stream_chunks_;
  bool stream_writing_ = false;
  bool stream_ending_ = false;
  bool stream_chunked_ = true;
  std::atomic<std::size_t> stream_queued_bytes_{0};
};

void HttpSession::start_stream(std::uint64_t serial, HttpResponse head) {
  net::post(stream_.get_executor(), [self = shared_from_this(), serial,
                                     head = std::move(head)]() mutable {
    if (serial != self->serial_ || self->state_ != State::kHandling)
      return;
    self->state_ = State::kStreaming;
    self->stream_chunked_ = self->version_ >= 11;
    auto res = std::make_unique<http::response<http::empty_body>>(
        static_cast<http::status>(head.status),
        self->version_ >= 10 ? self->version_ : 11);
    for (auto &[name, value] : head.headers)
      if (!iequals(name, "Connection"))
        res->set(name, value);
    if (!head.content_type.empty())
      res->set(http::field::content_type, head.content_type);
    // HTTP/1.0 has no chunks: the body ends when the connection does.
    if (self->stream_chunked_)
      res->chunked(true);
    res->keep_alive(self->stream_chunked_ && self->keep_alive_ && !head.close &&
                    !self->closing_);
    self->stream_head_ = std::move(res);
    self->stream_serializer_ =
        std::make_unique<http::response_serializer<http::empty_body>>(
            *self->stream_head_);
    self->stream_writing_ = true;
    self->stream_.expires_after(self->shared_.limits.body_timeout);
    http::async_write_header(self->stream_, *self->stream_serializer_,
                             [self](beast::error_code ec, std::size_t) {
                               self->stream_writing_ = false;
                               if (ec)
                                 return self->close();
                               self->write_next_chunk();
                             });
  });
}

void HttpSession::stream_chunk(std::uint64_t serial, std::string chunk) {
  if (chunk.empty())
    return; // an empty chunk would end a chunked body
  stream_queued_bytes_.fetch_add(chunk.size());
  net::post(stream_.get_executor(), [self = shared_from_this(), serial,
                                     chunk = std::move(chunk)]() mutable {
    if (serial != self->serial_ || self->state_ != State::kStreaming ||
        self->stream_ending_)
      return;
    self->stream_chunks_.push_back(std::move(chunk));
    if (!self->stream_writing_)
      self->write_next_chunk();
  });
}

void HttpSession::stream_end(std::uint64_t serial) {
  net::post(stream_.get_executor(), [self = shared_from_this(), serial] {
    if (serial != self->serial_ || self->state_ != State::kStreaming ||
        self->stream_ending_)
      return;
    self->stream_ending_ = true;
    if (!self->stream_writing_)
      self->write_next_chunk();
  });
}

void HttpSession::write_next_chunk() {
  if (state_ != State::kStreaming)
    return;
  auto done = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->stream_writing_ = false;
    if (ec) {
      if (ec == beast::error::timeout)
        self->shared_.counters.timed_out.fetch_add(1);
      return self->close();
    }
    if (!self->stream_chunks_.empty()) {
      self->stream_queued_bytes_.fetch_sub(self->stream_chunks_.front().size());
      self->stream_chunks_.pop_front();
    }
    self->write_next_chunk();
  };
  stream_.expires_after(shared_.limits.body_timeout);
  if (!stream_chunks_.empty()) {
    stream_writing_ = true;
    const std::string &c = stream_chunks_.front();
    if (stream_chunked_)
      net::async_write(stream_, http::make_chunk(net::buffer(c)), done);
    else
      net::async_write(stream_, net::buffer(c), done);
    return;
  }
  if (!stream_ending_)
    return; // wait for more
  const bool keep = stream_head_->keep_alive();
  stream_ending_ = false;
  stream_head_.reset();
  stream_serializer_.reset();
  auto finish = [self = shared_from_this(), keep](beast::error_code ec,
                                                  std::size_t) {
    self->state_ = State::kWriting;
    self->after_answer(ec, keep);
  };
  if (stream_chunked_) {
    stream_writing_ = true;
    net::async_write(stream_, http::make_chunk_last(), finish);
  } else {
    finish({}, false);
  }
}

namespace {

class SessionStream final : public ResponseStream {
public:
  SessionStream(std::shared_ptr<HttpSession> s, std::uint64_t serial)
      : session_(std::move(s)), serial_(serial) {}
  ~SessionStream() override { end(); }
  bool write(std::string chunk) override {
    if (ended_.load() || session_->client_gone())
      return false;
    session_->stream_chunk(serial_, std::move(chunk));
    return true;
  }
  void end() override {
    if (!ended_.exchange(true))
      session_->stream_end(serial_);
  }
  bool client_gone() const override { return session_->client_gone(); }
  std::size_t queued_bytes() const override {
    return session_->stream_queued();
  }

private:
  std::shared_ptr<HttpSession> session_;
  std::uint64_t serial_;
  std::atomic<bool> ended_{false};
};

// One request's answer slot: the first answer wins; one never given becomes a
// 500, so that a lost responder cannot leave a connection (and the shutdown)
// waiting forever.
struct Exchange {
  Exchange(std::shared_ptr<HttpSession> s)
      : session(std::move(s)), serial(session->serial()),
        work(net::make_work_guard(session->io_context())) {}
  ~Exchange() {
    if (!answered.exchange(true))
      session->answer(
          serial,
          refusal_response(
              {500, "Backend", "the request was dropped without an answer"}));
  }
  std::shared_ptr<HttpSession> session;
  std::uint64_t serial;
  net::executor_work_guard<net::io_context::executor_type> work;
  std::atomic<bool> answered{false};
};

} // namespace

Responder::Responder(std::shared_ptr<HttpSession> session)
    : work_(std::make_shared<Exchange>(std::move(session))) {}

void Responder::respond(HttpResponse response) const {
  auto *ex = static_cast<Exchange *>(work_.get());
  if (ex == nullptr || ex->answered.exchange(true))
    return;
  ex->session->answer(ex->serial, std::move(response));
}

std::shared_ptr<ResponseStream> Responder::stream(HttpResponse head) const {
  auto *ex = static_cast<Exchange *>(work_.get());
  if (ex == nullptr || ex->answered.exchange(true))
    return nullptr;
  ex->session->start_stream(ex->serial, std::move(head));
  return std::make_shared<SessionStream>(ex->session, ex->serial);
}

bool Responder::client_gone() const {
  auto *ex = static_cast<Exchange *>(work_.get());
  return ex == nullptr || ex->session->client_gone();
}

struct HttpServer::Impl {
  Impl(HttpOptions o, HttpApp &app)
      : options(std::move(o)), shared(app, options.limits),
        ioc(static_cast<int>(std::max<std::size_t>(options.io_threads, 1))),
        acceptor(net::make_strand(ioc)), retry(acceptor.get_executor()) {}

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec,
                                                        tcp::socket socket) {
      if (shared.stopping.load() || ec == net::error::operation_aborted)
        return;
      if (ec) {
        // Out of descriptors (EMFILE, ENFILE) or memory: wait a little instead
        // of spinning; the pending connections stay in the backlog.
        if (!accept_error_logged.exchange(true))
          std::fprintf(stderr,
                       "inferencelayer serve: accepting connections failed: %s "
                       "(retrying)\n",
                       ec.message().c_str());
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](beast::error_code e) {
          if (!e && !shared.stopping.load())
            accept();
        });
        return;
      }
      beast::error_code ignored;
      socket.set_option(
          tcp::no_delay(true),
          ignored); // else a small answer can wait ~40 ms for an ACK
      if (shared.counters.open.load() >= shared.limits.max_connections)
        refuse(std::move(socket));
      else
        std::make_shared<HttpSession>(std::move(socket), shared, ioc)->start();
      accept();
    });
  }

  // Over the connection cap: a fixed 503 and close, with a short write
  // deadline.
  void refuse(tcp::socket socket) {
    static const std::string kBody = error_body_text();
    shared.counters.refused.fetch_add(1);
    auto s = std::make_shared<beast::tcp_stream>(std::move(socket));
    s->expires_after(kRefusalWriteTime);
    net::async_write(
        *s, net::buffer(kBody), [s](beast::error_code, std::size_t) {
          beast::error_code ignored;
          s->socket().shutdown(tcp::socket::shutdown_send, ignored);
          s->close();
        });
  }

  static std::string error_body_text() {
    const std::string body =
        "{\"error\":\"too many open connections "
        "(--max-connections)\",\"error_type\":\"Overloaded\"}";
    return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
           "application/json\r\nRetry-After: 1\r\n"
           "Connection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  template <typename F> void for_each_session(F f) {
    std::vector<std::shared_ptr<HttpSession>> live;
    {
      std::lock_guard lock(shared.sessions_mutex);
      for (auto &w : shared.sessions)
        if (auto s = w.lock())
          live.push_back(std::move(s));
    }
    for (auto &s : live)
      f(*s);
  }

  void close_acceptor() {
    net::post(acceptor.get_executor(), [this] {
      beast::error_code ignored;
      acceptor.close(ignored);
      retry.cancel();
    });
  }

  // Declared before the event loop: handlers the loop still holds when it is
  // destroyed (after abort()) own sessions, whose destructors use the shared
  // state.
  HttpOptions options;
  SharedState shared;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer retry;
  std::atomic<bool> accept_error_logged{false};
};

HttpServer::HttpServer(HttpOptions options, HttpApp &app)
    : impl_(std::make_unique<Impl>(std::move(options), app)) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const HttpOptions &o = impl_->options;
  beast::error_code ec;
  net::ip::address address = net::ip::make_address(o.host, ec);
  if (ec) { // a name such as localhost
    tcp::resolver resolver(impl_->ioc);
    const auto found = resolver.resolve(o.host, std::to_string(o.port), ec);
    check(!ec && !found.empty(), "cannot listen on ", o.host, ":", o.port,
          ": the address does not resolve (", ec.message(), ")");
    address = found.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  tcp::acceptor &a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  check(!ec, "cannot open a socket for ", o.host, ":", o.port, ": ",
        ec.message());
  // SO_REUSEADDR lets a restarted server bind while old connections linger in
  // TIME_WAIT; on Linux it never lets two servers listen on one port.
  // SO_REUSEPORT would, so it is only set on request.
  a.set_option(net::socket_base::reuse_address(true), ec);
  if (o.reuse_port) {
    const int one = 1;
    check(::setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one,
                       sizeof one) == 0,
          "cannot set SO_REUSEPORT on ", o.host, ":", o.port);
  }
  a.bind(endpoint, ec);
  check(!ec, "cannot listen on ", o.host, ":", o.port, ": ", ec.message(),
        ec == net::error::address_in_use ? " (another process listens there; "
                                           "--reuse-port shares it on purpose)"
                                         : "");
  a.listen(net::socket_base::max_listen_connections, ec);
  check(!ec, "cannot listen on ", o.host, ":", o.port, ": ", ec.message());
  return a.local_endpoint().port();
}

void HttpServer::run() {
  impl_->accept();
  auto loop = [this] {
    for (;;) {
      try {
        impl_->ioc.run();
        return;
      } catch (const std::exception &
                   e) { // a handler threw (bad_alloc...): keep serving the rest
        std::fprintf(stderr,
                     "inferencelayer serve: error in the event loop: %s\n",
                     e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1;
       i < std::max<std::size_t>(impl_->options.io_threads, 1); ++i)
    threads.emplace_back(loop);
  loop();
  for (auto &t : threads)
    t.join();
}

void HttpServer::stop() {
  if (impl_->shared.stopping.exchange(true))
    return;
  impl_->close_acceptor();
  impl_->for_each_session([](HttpSession &s) { s.stop_gracefully(); });
}

void HttpServer::abort() {
  impl_->shared.stopping = true;
  impl_->close_acceptor();
  impl_->for_each_session([](HttpSession &s) { s.close_now(); });
  impl_->ioc.stop();
}

bool HttpServer::stopping() const { return impl_->shared.stopping.load(); }
std::size_t HttpServer::unanswered() const {
  return impl_->shared.unanswered.load();
}
const HttpCounters &HttpServer::counters() const {
  return impl_->shared.counters;
}

} // namespace il::server
