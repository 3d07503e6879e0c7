// The transport alone (http_server.h) with a test application: streamed answers
// (server-sent events) from another thread while the one event-loop thread
// serves other clients, answers given late from a worker, client departure seen
// by the responder, graceful stop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/http_server.h"
#include "server_test_util.h"

namespace il::server {
namespace {

using namespace std::chrono_literals;
using server_test::body_text;
using server_test::RawConnection;
using server_test::status_of;

class TestApp final : public HttpApp {
public:
  std::optional<HttpResponse> screen(const HttpRequest &head) override {
    if (head.path == "/events" || head.path == "/late" || head.path == "/now")
      return std::nullopt;
    HttpResponse r;
    r.status = 404;
    return r;
  }
  void handle(HttpRequest req, Responder responder) override {
    if (req.path == "/now") {
      HttpResponse r;
      r.json("{\"now\":true}");
      return responder.respond(std::move(r));
    }
    std::thread([this, req = std::move(req), responder] {
      if (req.path == "/late") {
        std::this_thread::sleep_for(300ms);
        HttpResponse r;
        r.json("{\"late\":true}");
        return responder.respond(std::move(r));
      }
      HttpResponse head;
      head.content_type = "text/event-stream";
      auto stream = responder.stream(std::move(head));
      for (int i = 0; i < 5; ++i) {
        std::this_thread::sleep_for(50ms);
        if (!stream->write("data: " + std::to_string(i) + "\n\n")) {
          ++departures;
          return;
        }
      }
      stream->write("data: [DONE]\n\n");
      stream->end();
    }).detach();
  }
  std::atomic<int> departures{0};
};

class Transport : public ::testing::Test {
protected:
  void SetUp() override {
    HttpOptions o;
    o.port = 0;
    o.io_threads = 1;
    server = std::make_unique<HttpServer>(o, app);
    port = server->bind();
    loop = std::thread([this] { server->run(); });
  }
  void TearDown() override {
    server->stop();
    loop.join();
  }
  TestApp app;
  std::unique_ptr<HttpServer> server;
  int port = 0;
  std::thread loop;
};

TEST_F(Transport, StreamsServerSentEventsInOrder) {
  RawConnection c(port);
  ASSERT_TRUE(c.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n"));
  const std::string r = c.read_response(10s);
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(server_test::header_of(r, "Transfer-Encoding"), "chunked");
  EXPECT_EQ(body_text(r), "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: "
                          "4\n\ndata: [DONE]\n\n");
  // The connection is still usable afterwards.
  ASSERT_TRUE(c.send("GET /now HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(status_of(c.read_response()), 200);
}

TEST_F(Transport, OneEventLoopThreadServesManyStreamsAndQuickAnswersAtOnce) {
  std::vector<std::unique_ptr<RawConnection>> streams;
  for (int i = 0; i < 50; ++i) {
    streams.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(
        streams.back()->send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n"));
  }
  const auto t0 = std::chrono::steady_clock::now();
  RawConnection quick(port);
  ASSERT_TRUE(quick.send("GET /now HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(status_of(quick.read_response()), 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms)
      << "a quick answer waited for the streams";
  for (auto &s : streams)
    EXPECT_EQ(body_text(s->read_response(10s)).size(), 59u);
}

TEST_F(Transport, AStreamSeesItsClientLeave) {
  {
    RawConnection c(port);
    ASSERT_TRUE(c.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::this_thread::sleep_for(80ms);
  } // closed mid-stream
  for (int i = 0; i < 100 && app.departures.load() == 0; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(app.departures.load(), 1);
}

TEST_F(Transport, StopAnswersWhatWasReceivedThenRunReturns) {
  RawConnection late(port), idle(port);
  ASSERT_TRUE(late.send("GET /late HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(50ms);
  server->stop();
  const std::string r = late.read_response(5s);
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_text(r), "{\"late\":true}");
  EXPECT_TRUE(idle.closed_within(2s))
      << "an idle connection was kept open after stop()";
  RawConnection refused(port);
  EXPECT_FALSE(refused.connected() &&
               refused.send("GET /now HTTP/1.1\r\nHost: t\r\n\r\n") &&
               !refused.read_response(1s).empty());
}

} // namespace
} // namespace il::server
