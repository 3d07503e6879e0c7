// What a hostile or broken client can send, against the real server
// (docs/reliability.md lists each case with the test that holds it): bodies
// over the limit however framed or compressed, credentials decided before a
// body is read, header floods, smuggling-prone framing, slow and idle
// connections, pipelining, the connection cap, a port in use, out-of-memory,
// shutdown.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "server_test_util.h"

namespace il::server_test {
namespace {

using namespace std::chrono_literals;

std::string gzip(const std::string &data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string request(const std::string &method, const std::string &path,
                    const std::string &extra_headers, const std::string &body,
                    bool with_length = true) {
  std::string r =
      method + " " + path +
      " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" +
      extra_headers;
  if (with_length)
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

const std::string kEmbed = R"({"inputs": "hello"})";

// Resident memory of a process, in MiB (from /proc).
double rss_mib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

class Hostile : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess("bert-mean",
                                {"--payload-limit", "100000",
                                 "--header-timeout", "2", "--request-timeout",
                                 "2", "--keep-alive-timeout", "30"},
                                {"IL_API_KEY=sesame"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->terminate(), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static std::string auth() { return "Authorization: Bearer sesame\r\n"; }
  static void still_serves() {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.send(request("POST", "/embed", auth(), kEmbed)));
    EXPECT_EQ(status_of(c.read_response()), 200);
  }
  static ServerProcess *server_;
};
ServerProcess *Hostile::server_ = nullptr;

// Defect 1: a chunked body was buffered whole (hundreds of MB), ignoring the
// payload limit.
TEST_F(Hostile, AChunkedBodyOverTheLimitIs413BeforeItEnds) {
  RawConnection c(server_->port());
  std::string head =
      "POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
      auth() + "Transfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(c.send(head));
  const std::string chunk =
      "10000\r\n" + std::string(0x10000, 'a') + "\r\n"; // 64 KiB chunks
  std::size_t sent = 0;
  // Far more than the 100 kB limit; the server answers and closes long before
  // the end.
  for (int i = 0; i < 1600 && c.send(chunk); ++i)
    sent += 0x10000;
  EXPECT_LT(sent, 50u << 20)
      << "the server read 50 MiB of a body over a 100 kB limit";
  const std::string r = c.read_response(5s);
  if (!r.empty()) {
    EXPECT_EQ(status_of(r), 413)
        << r; // (a reset may have destroyed the answer)
  }
  still_serves();
}

// Defect 2: a gzip body was inflated without a limit (1 MB -> 1 GB), even
// before a 401.
TEST_F(Hostile, AGzipBombIs413AndAWrongKeyIsRefusedBeforeInflating) {
  const std::string bomb =
      gzip(std::string(200u << 20, ' ')); // 200 MiB of spaces in ~200 KiB
  const double before = rss_mib(server_->pid());
  {
    RawConnection c(server_->port());
    const std::string r_head = "POST /embed HTTP/1.1\r\nHost: "
                               "t\r\nContent-Type: application/json\r\n" +
                               auth() +
                               "Content-Encoding: gzip\r\nContent-Length: " +
                               std::to_string(bomb.size()) + "\r\n\r\n";
    // Over the raw limit too (~200 KiB > 100 kB): 413 from the head.
    ASSERT_TRUE(c.send(r_head));
    (void)c.send(bomb);
    EXPECT_EQ(status_of(c.read_response(5s)), 413);
  }
  {
    const std::string small_bomb = gzip(
        std::string(50u << 20, ' ')); // 50 MiB in ~50 KiB: under the raw limit
    ASSERT_LT(small_bomb.size(), 100000u);
    RawConnection c(server_->port());
    ASSERT_TRUE(c.send(request(
        "POST", "/embed", auth() + "Content-Encoding: gzip\r\n", small_bomb)));
    EXPECT_EQ(status_of(c.read_response(5s)), 413);
    RawConnection d(server_->port());
    ASSERT_TRUE(d.send(
        request("POST", "/embed",
                "Authorization: Bearer wrong\r\nContent-Encoding: gzip\r\n",
                small_bomb)));
    EXPECT_EQ(status_of(d.read_response(5s)), 401);
  }
  EXPECT_LT(rss_mib(server_->pid()) - before, 40.0)
      << "decoding grew the server by more than the limit allows";
  still_serves();
}

TEST_F(Hostile, AGzipBodyWithinTheLimitIsServed) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send(request(
      "POST", "/embed", auth() + "Content-Encoding: gzip\r\n", gzip(kEmbed))));
  const std::string r = c.read_response();
  EXPECT_EQ(status_of(r), 200) << r;
}

// Defect 3: millions of header lines were accepted and their memory kept.
TEST_F(Hostile, AHeaderFloodIs431) {
  RawConnection c(server_->port());
  std::string head = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 5000; ++i)
    head += "X-Flood-" + std::to_string(i) + ": 1\r\n";
  (void)c.send(head + "\r\n");
  EXPECT_EQ(status_of(c.read_response(5s)), 431);
  RawConnection d(server_->port());
  std::string few = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 150; ++i)
    few += "X-" + std::to_string(i) + ": 1\r\n";
  ASSERT_TRUE(d.send(few + "\r\n"));
  EXPECT_EQ(status_of(d.read_response(5s)), 431);
  still_serves();
}

// Defect 1 again, for the credentials: no body byte is read for a request
// refused with 401.
TEST_F(Hostile, CredentialsAreCheckedBeforeTheBody) {
  RawConnection c(server_->port());
  // Announces a body within the limit but sends none: the 401 must not wait for
  // it.
  ASSERT_TRUE(c.send("POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: "
                     "application/json\r\nContent-Length: 90000\r\n\r\n"));
  const std::string r = c.read_response(1500ms);
  EXPECT_EQ(status_of(r), 401) << "no 401 before the body was sent";
}

// Defect 8: pipelined requests after the first were dropped.
TEST_F(Hostile, PipelinedRequestsAreAllAnsweredInOrder) {
  RawConnection c(server_->port());
  std::string burst;
  burst += request("POST", "/embed", auth(), kEmbed);
  burst += "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  burst += request("POST", "/tokenize", auth(), R"({"inputs": "pipelined"})");
  burst += request("POST", "/embed", auth(), R"({"inputs": ["a", "b"]})");
  ASSERT_TRUE(c.send(burst));
  const std::string a = c.read_response(), b = c.read_response(),
                    t = c.read_response(), d = c.read_response();
  EXPECT_EQ(status_of(a), 200);
  EXPECT_EQ(json::parse(body_text(a)).size(), 1u);
  EXPECT_EQ(status_of(b), 200);
  EXPECT_EQ(status_of(t), 200);
  EXPECT_TRUE(json::parse(body_text(t)).is_array()) << t;
  EXPECT_EQ(status_of(d), 200);
  EXPECT_EQ(json::parse(body_text(d)).size(), 2u);
}

// Defect 11: smuggling-prone framing was accepted.
TEST_F(Hostile, AmbiguousFramingIs400AndTheConnectionEnds) {
  for (const std::string &h :
       {std::string("Content-Length: 19\r\nTransfer-Encoding: chunked\r\n"),
        std::string("Transfer-Encoding: chunked\r\nContent-Length: 19\r\n"),
        std::string("Content-Length: 19\r\nContent-Length: 20\r\n"),
        std::string("Transfer-Encoding: identity\r\n")}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.send("POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: "
                       "application/json\r\n" +
                       auth() + h + "\r\n" + kEmbed));
    const std::string r = c.read_response(5s);
    EXPECT_EQ(status_of(r), 400) << h << r;
    EXPECT_TRUE(c.closed_within(3s)) << h;
  }
}

// Defect 11: 404 for a wrong method, any Content-Type accepted.
TEST_F(Hostile, WrongMethodIs405AndWrongMediaTypeIs415) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send("GET /embed HTTP/1.1\r\nHost: t\r\n\r\n"));
  const std::string r = c.read_response();
  EXPECT_EQ(status_of(r), 405) << r;
  EXPECT_EQ(header_of(r, "Allow"), "POST");
  ASSERT_TRUE(
      c.send("POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n" +
             auth() + "Content-Length: " + std::to_string(kEmbed.size()) +
             "\r\n\r\n" + kEmbed));
  const std::string m = c.read_response();
  EXPECT_EQ(status_of(m), 415) << m;
  RawConnection d(server_->port());
  ASSERT_TRUE(d.send("POST /embed HTTP/1.1\r\nHost: t\r\n" + auth() +
                     "Content-Length: " + std::to_string(kEmbed.size()) +
                     "\r\n\r\n" + kEmbed));
  EXPECT_EQ(status_of(d.read_response()), 415) << "no Content-Type";
  RawConnection e(server_->port());
  ASSERT_TRUE(e.send("POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: "
                     "application/json; charset=utf-8\r\n" +
                     auth() + "Content-Length: " +
                     std::to_string(kEmbed.size()) + "\r\n\r\n" + kEmbed));
  EXPECT_EQ(status_of(e.read_response()), 200);
}

TEST_F(Hostile, ExpectContinueGetsAContinueThenTheAnswer) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send(
      "POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
      auth() + "Expect: 100-continue\r\nContent-Length: " +
      std::to_string(kEmbed.size()) + "\r\n\r\n"));
  EXPECT_EQ(status_of(c.read_response(5s)), 100);
  ASSERT_TRUE(c.send(kEmbed));
  EXPECT_EQ(status_of(c.read_response(5s)), 200);
}

// Defect 6: slow or idle connections held a thread each and starved /health.
TEST_F(Hostile, SlowAndIdleClientsDoNotStarveOthers) {
  std::vector<std::unique_ptr<RawConnection>> idle, slow;
  for (int i = 0; i < 300; ++i)
    idle.push_back(std::make_unique<RawConnection>(server_->port()));
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port()));
    (void)slow.back()->send(
        "POST /embed HTTP/1.1\r\nHost: t\r\n"); // and never the rest
  }
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    still_serves();
    RawConnection h(server_->port());
    ASSERT_TRUE(h.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_EQ(status_of(h.read_response(5s)), 200);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  }
  // The slow heads are cut at --header-timeout (2 s).
  EXPECT_TRUE(slow.front()->closed_within(5s))
      << "a head sent byte by byte kept its connection";
}

TEST_F(Hostile, ABodyThatNeverArrivesIsCutAtTheRequestTimeout) {
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send(
      "POST /embed HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
      auth() + "Content-Length: 5000\r\n\r\n{\"inputs\""));
  EXPECT_TRUE(c.closed_within(6s));
}

// Defect 10 (HTTP side) and item 3: a deeply nested JSON body is refused,
// nothing crashes.
TEST_F(Hostile, DeeplyNestedJsonBodiesAre422) {
  const std::string deep =
      "{\"inputs\": " + std::string(40000, '[') + std::string(40000, ']') + "}";
  RawConnection c(server_->port());
  ASSERT_TRUE(c.send(request("POST", "/embed", auth(), deep)));
  EXPECT_EQ(status_of(c.read_response(10s)), 422);
  still_serves();
}

// Defect 9: a second server started on a port in use (SO_REUSEPORT) and split
// the traffic.
TEST(Binding, APortInUseIsAnErrorAtStart) {
  ServerProcess first("bert-mean");
  ASSERT_TRUE(first.started());
  const Exit second =
      run_with_deadline({"serve", "--model", fixture_path("bert-mean"),
                         "--port", std::to_string(first.port())},
                        60s);
  EXPECT_NE(second.status, 0) << "a second server started on a port in use";
  EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;
  EXPECT_EQ(first.terminate(), 0);
}

// Item 1: over --max-connections, a connection is answered 503 and closed; the
// others go on.
TEST(ConnectionCap, OverTheCapIs503AndClosed) {
  ServerProcess server("bert-mean", {"--max-connections", "8"});
  ASSERT_TRUE(server.started());
  std::vector<std::unique_ptr<RawConnection>> open;
  for (int i = 0; i < 8; ++i)
    open.push_back(std::make_unique<RawConnection>(server.port()));
  std::this_thread::sleep_for(200ms); // let the server accept them all
  RawConnection extra(server.port());
  const std::string r = extra.read_response(5s);
  EXPECT_EQ(status_of(r), 503) << r;
  EXPECT_TRUE(extra.closed_within(3s));
  ASSERT_TRUE(open.front()->send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(status_of(open.front()->read_response()), 200);
  open.clear();
  std::this_thread::sleep_for(200ms);
  RawConnection later(server.port());
  ASSERT_TRUE(later.send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(status_of(later.read_response()), 200);
  EXPECT_EQ(server.terminate(), 0);
}

// Defect 5: std::bad_alloc escaped a handler and aborted the server. Under an
// address-space limit, a request that needs more memory than is left gets 503;
// the server keeps serving.
TEST(OutOfMemory, AnAllocationFailureIs503AndTheServerGoesOn) {
  ServerProcess server("bert-mean", {"--payload-limit", "50000000"});
  ASSERT_TRUE(server.started());
  std::string text;
  text.reserve(20'000'000);
  while (text.size() < 20'000'000)
    text += "a b c d e f g h ";
  const std::string body = json{{"inputs", text}}.dump();
  RawConnection warm(
      server.port()); // the threads and arenas the big request will use exist
  ASSERT_TRUE(
      warm.send(request("POST", "/tokenize", "", R"({"inputs": "warm up"})")));
  ASSERT_EQ(status_of(warm.read_response()), 200);
  std::ifstream status("/proc/" + std::to_string(server.pid()) + "/status");
  std::string line;
  double vm_kib = 0;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0)
      vm_kib = std::stod(line.substr(7));
  ASSERT_GT(vm_kib, 0);
  // Room for the 20 MB body (and its string's growth), not for its 10 M tokens'
  // details.
  const rlimit limit{static_cast<rlim_t>(vm_kib * 1024 + 160.0 * (1 << 20)),
                     RLIM_INFINITY};
  ASSERT_EQ(prlimit(server.pid(), RLIMIT_AS, &limit, nullptr), 0);
  RawConnection c(server.port());
  ASSERT_TRUE(c.send(request("POST", "/tokenize", "", body)));
  const std::string r = c.read_response(60s);
  EXPECT_EQ(status_of(r), 503) << r.substr(0, 300);
  RawConnection h(server.port());
  ASSERT_TRUE(h.send(request("POST", "/embed", "", kEmbed)));
  EXPECT_EQ(status_of(h.read_response()), 200) << "the server did not survive";
  EXPECT_EQ(server.terminate(), 0);
}

TEST_F(Hostile, AJsonBodyOfMillionsOfValuesIs413) {
  std::string ids = "{\"ids\": [1";
  while (ids.size() < 2'400'000)
    ids += ",1,1,1,1,1,1,1,1,1,1";
  ids += "]}";
  ServerProcess server("bert-mean", {"--payload-limit", "3000000"});
  ASSERT_TRUE(server.started());
  RawConnection c(server.port());
  ASSERT_TRUE(c.send(request("POST", "/decode", "", ids)));
  EXPECT_EQ(status_of(c.read_response(30s)), 413);
  EXPECT_EQ(server.terminate(), 0);
}

// Defect 7: SIGTERM dropped in-flight responses. A request being received when
// the signal comes (its head read, its body still arriving) is read to its end
// and answered, with Connection: close; an idle connection is closed; the exit
// is 0.
TEST(Shutdown, ARequestBeingReceivedAtSigtermIsAnswered) {
  ServerProcess server("bert-mean", {"--keep-alive-timeout", "60"});
  ASSERT_TRUE(server.started());
  auto conn = std::make_unique<RawConnection>(server.port());
  RawConnection &c = *conn;
  RawConnection idle(server.port());
  const std::string full =
      request("POST", "/embed", "", R"({"inputs": ["one", "two"]})");
  const std::size_t half = full.size() - 10;
  ASSERT_TRUE(c.send(full.substr(0, half)));
  std::this_thread::sleep_for(200ms);
  kill(server.pid(), SIGTERM);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(idle.closed_within(3s)) << "an idle connection was not closed";
  ASSERT_TRUE(c.send(full.substr(half)));
  const std::string r = c.read_response(30s);
  EXPECT_EQ(status_of(r), 200) << r.substr(0, 200);
  EXPECT_EQ(header_of(r, "Connection"), "close");
  EXPECT_EQ(json::parse(body_text(r)).size(), 2u);
  conn.reset(); // the client goes, as told (else the server waits up to a
                // second for it to)
  EXPECT_EQ(server.wait_exit(), 0);
}

// A second signal closes what is left at once, and says so with exit status 1.
TEST(Shutdown, ASecondSignalEndsAtOnceWithAnError) {
  ServerProcess server("bert-mean", {"--request-timeout", "120"});
  ASSERT_TRUE(server.started());
  RawConnection c(server.port());
  const std::string full = request("POST", "/embed", "", kEmbed);
  ASSERT_TRUE(c.send(full.substr(0, full.size() - 3))); // never finished
  std::this_thread::sleep_for(200ms);
  kill(server.pid(), SIGTERM);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server.terminate(), 1)
      << "expected exit status 1 with a request left unanswered";
}

TEST(Shutdown, TheDeadlineEndsAWaitingShutdown) {
  ServerProcess server("bert-mean",
                       {"--request-timeout", "120", "--shutdown-timeout", "1"});
  ASSERT_TRUE(server.started());
  RawConnection c(server.port());
  const std::string full = request("POST", "/embed", "", kEmbed);
  ASSERT_TRUE(c.send(full.substr(0, full.size() - 3)));
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(server.terminate(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
}

// Clients that leave right after sending: their jobs are dropped or answered into the void, and
// the in-flight count comes back to zero (a double count once wrapped it, and every later request
// got 429).
TEST(Departures, ManyAbandonedRequestsLeaveNothingInFlight) {
  ServerProcess server("bert-mean", {"--max-client-batch-size", "4"});
  ASSERT_TRUE(server.started());
  const std::string body = json{{"inputs", std::vector<std::string>(4, std::string(200, 'x') + " word")},
                                {"truncate", true}}.dump();
  for (int i = 0; i < 200; ++i) {
    RawConnection c(server.port());
    ASSERT_TRUE(c.send(request("POST", "/embed", "", body)));
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(1s);
  RawConnection m(server.port());
  ASSERT_TRUE(m.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"));
  const std::string metrics = body_text(m.read_response());
  EXPECT_NE(metrics.find("\nil_requests_in_flight 0\n"), std::string::npos) << metrics.substr(0, 2000);
  EXPECT_EQ(metrics.find("status=\"429\""), std::string::npos) << metrics.substr(0, 2000);
  RawConnection after(server.port());
  ASSERT_TRUE(after.send(request("POST", "/embed", "", kEmbed)));
  EXPECT_EQ(status_of(after.read_response()), 200);
  EXPECT_EQ(server.terminate(), 0);
}

// One keep-alive connection carries many requests, each answered whole.
TEST_F(Hostile, KeepAliveSurvivesManyRequests) {
  RawConnection c(server_->port());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(c.send(request("POST", "/embed_all", auth(), kEmbed)));
    ASSERT_EQ(status_of(c.read_response()), 200) << "request " << i;
  }
}

} // namespace
} // namespace il::server_test
