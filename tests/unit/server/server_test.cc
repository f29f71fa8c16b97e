#include "server/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "promtool.h"
#include "raw_client.h"
#include "server/handlers.h"
#include "server/pick_metrics.h"
#include "telemetry/metrics.h"

namespace eoc::server {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using testing::RawClient;
using testing::RawResponse;
using ::testing::StartsWith;

constexpr std::string_view kGetHealthz = "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n";

// promtool checks the exposition; the suite's machines have it (scripts/bootstrap installs it).
std::pair<int, std::string> PromtoolCheckMetrics(const std::string& text) {
  const std::string promtool = eoc::testing::FindPromtool();
  if (promtool.empty()) return {-1, "promtool is not on PATH"};
  return eoc::testing::PromtoolCheckMetrics(promtool, text);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->Handle("GET", "/healthz", HealthzHandler());
    server_->Handle("GET", "/readyz", ReadyzHandler(readiness_));
    server_->Handle("GET", "/metrics", MetricsHandler([this] { return metrics_.Serialize(); }));
    const Handler echo = [this](const Request& req, Response& resp) {
      ++echo_calls_;
      resp.body() = "method=" + std::string(req.method()) + " path=" + std::string(req.path()) +
                    " query=" + std::string(req.query()) +
                    " session=" + std::string(req.header("x-session-id").value_or("-")) +
                    " body=" + std::string(req.body());
      resp.AddHeader("X-Echo", "yes");
    };
    server_->Handle("GET", "/v1/echo", echo);
    server_->Handle("POST", "/v1/echo", echo);
    server_->Handle("POST", "/v1/ignore", echo, BodyUse::kDiscard);
    server_->Handle("GET", "/v1/throw", [](const Request&, Response& resp) {
      resp.body() = "partial";
      throw std::runtime_error("handler bug");
    });
    server_->Handle("GET", "/v1/items/{kind}/of/{name}", [](const Request& req, Response& resp) {
      for (const std::string_view param : req.params()) resp.body().append(param).append(";");
    });
    server_->Handle("GET", "/v1/items/special/of/one", [](const Request& req, Response& resp) {
      resp.body() = "exact:" + std::to_string(req.params().size());
    });
    // Answers later, when the test says (Answer), or never.
    server_->Handle("GET", "/v1/later", [this](const Request& req, Response& resp) {
      resp.body() = "discarded";
      const Later later = req.Defer();
      later.OnAbandon([this](Abandon why) {
        const std::lock_guard lock(mu_);
        abandoned_.push_back(why);
      });
      const std::lock_guard lock(mu_);
      later_.push_back(later);
    });
    // Puts its first handling off; the test hands it back (Retry), and the second answers with
    // what it saw of the same request.
    server_->Handle("POST", "/v1/again", [this](const Request& req, Response& resp) {
      if (req.attempt() == 0) {
        const std::lock_guard lock(mu_);
        later_.push_back(req.Defer());
        return;
      }
      resp.body() = "attempt=" + std::to_string(req.attempt()) +
                    " path=" + std::string(req.path()) +
                    " session=" + std::string(req.header("x-session-id").value_or("-")) +
                    " body=" + std::string(req.body());
    });
    server_->Start();
    ASSERT_NE(server_->port(), 0);
  }

  std::uint16_t port() const { return server_->port(); }

  // One request on a new connection.
  std::optional<RawResponse> Fetch(std::string_view request) const {
    RawClient client(port());
    if (!client.Send(request)) return std::nullopt;
    return client.ReadResponse();
  }

  // Waits (bounded) until `n` requests to /v1/later are waiting.
  bool AwaitLater(std::size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        const std::lock_guard lock(mu_);
        if (later_.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
  Later LaterAt(std::size_t i) const {
    const std::lock_guard lock(mu_);
    return later_.at(i);
  }
  std::vector<Abandon> Abandoned() const {
    const std::lock_guard lock(mu_);
    return abandoned_;
  }
  // Waits (bounded) until `n` waiting requests were abandoned.
  bool AwaitAbandoned(std::size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Abandoned().size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  telemetry::Metrics metrics_;
  ReadinessChecks readiness_;
  std::atomic<int> echo_calls_{0};
  mutable std::mutex mu_;
  std::vector<Later> later_;            // guarded by mu_
  std::vector<Abandon> abandoned_;      // guarded by mu_
  std::unique_ptr<HttpServer> server_;  // last: stopped before the state its handlers use goes
};

TEST_F(HttpServerTest, HealthzAnswersOk) {
  StartServer();
  const auto response = Fetch(kGetHealthz);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok\n");
  EXPECT_EQ(response->header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(response->header("content-length"), "3");
  EXPECT_THAT(response->header("date"), HasSubstr(" GMT"));
}

TEST_F(HttpServerTest, ReadyzNamesFailingChecksUntilTheyPass) {
  std::atomic<bool> synced = false;
  readiness_.Add("informers-synced", [&] { return synced.load(); });
  readiness_.Add("leader-known", [] { return true; });
  readiness_.Add("routing-table", []() -> bool { throw std::runtime_error("not yet"); });
  StartServer();

  auto response = Fetch("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->body, "informers-synced\nrouting-table\n");

  synced = true;
  readiness_.Add("routing-table", [] { return true; });  // replaces the throwing one
  response = Fetch("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok\n");
}

// An informational check shows in ?verbose but does not fail /readyz; a required one does.
TEST_F(HttpServerTest, ReadyzVerboseListsEveryCheckAndInformationalOnesDoNotFail) {
  std::atomic<bool> synced = true;
  readiness_.Add("pods-synced", [&] { return synced.load(); });
  readiness_.Add(
      "pods-fresh", [] { return false; }, kInformational);
  StartServer();

  auto response = Fetch("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok\n");
  response = Fetch("GET /readyz?verbose HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body,
            "[+]pods-synced ok\n[-]pods-fresh failed (informational)\nreadyz check passed\n");

  synced = false;
  response = Fetch("GET /readyz?exclude=x&verbose=1 HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->body,
            "[-]pods-synced failed\n[-]pods-fresh failed (informational)\nreadyz check failed\n");
  response = Fetch("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->body, "pods-synced\n");
}

TEST_F(HttpServerTest, MetricsServesTheRegistryAsValidPrometheusText) {
  prometheus::BuildCounter()
      .Name("eoc_test_picks_total")
      .Help("Picks answered.")
      .Register(metrics_.registry())
      .Add({{"pool", "ns/a"}, {"reason", "session"}})
      .Increment(5);
  prometheus::BuildGauge()
      .Name("eoc_test_ready_workers")
      .Help("Ready workers of a pool.")
      .Register(metrics_.registry())
      .Add({{"pool", "ns/a"}})
      .Set(3);
  auto& latency = prometheus::BuildHistogram()
                      .Name("eoc_test_pick_duration_seconds")
                      .Help("Time to answer a pick.")
                      .Register(metrics_.registry())
                      .Add({{"pool", "ns/a"}},
                           prometheus::Histogram::BucketBoundaries{0.0001, 0.001, 0.01, 0.1});
  latency.Observe(0.0004);
  latency.Observe(0.02);
  StartServer();

  const auto response = Fetch("GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->body, metrics_.Serialize());
  EXPECT_THAT(response->body,
              HasSubstr("eoc_test_picks_total{pool=\"ns/a\",reason=\"session\"} 5\n"));
  EXPECT_THAT(response->body, HasSubstr("eoc_test_pick_duration_seconds_bucket{pool=\"ns/a\","
                                        "le=\"0.001\"} 1\n"));

  const auto [status, output] = PromtoolCheckMetrics(response->body);
  EXPECT_EQ(status, 0) << "promtool check metrics:\n" << output << "\non:\n" << response->body;
}

TEST(PromtoolCheckMetricsTest, RejectsBrokenText) {
  // The check above can fail: promtool does refuse what is not valid exposition text.
  EXPECT_NE(PromtoolCheckMetrics("eoc_broken{pool=\"a\" 1\n").first, 0);
  EXPECT_NE(PromtoolCheckMetrics("# TYPE eoc_picks counter\neoc_picks 1\n").first, 0)
      << "a counter without _total fails promtool's lint";
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  StartServer();
  const auto response = Fetch("GET /nope HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->body, R"({"code":404,"message":"no such path: /nope"})");
  // Exact paths: no prefix or trailing-slash matching.
  EXPECT_EQ(Fetch("GET /healthz/ HTTP/1.1\r\nHost: test\r\n\r\n")->status, 404);
  EXPECT_EQ(Fetch("GET /health HTTP/1.1\r\nHost: test\r\n\r\n")->status, 404);
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  StartServer();
  auto response = Fetch("POST /healthz HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->header("allow"), "GET, HEAD");

  response = Fetch("DELETE /v1/echo HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->header("allow"), "GET, HEAD, POST");
  EXPECT_EQ(echo_calls_, 0);
}

TEST_F(HttpServerTest, HeadIsAnsweredByGetWithoutTheBody) {
  StartServer();
  RawClient client(port());
  ASSERT_TRUE(client.Send("HEAD /healthz HTTP/1.1\r\nHost: test\r\n\r\n"));
  const auto head = client.ReadResponse(/*head=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->header("content-length"), "3");
  // Had a body been sent, the next response would not start where the client looks for it.
  ASSERT_TRUE(client.Send(kGetHealthz));
  const auto next = client.ReadResponse();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->body, "ok\n");
}

TEST_F(HttpServerTest, HandlerSeesMethodPathQueryHeadersAndBody) {
  StartServer();
  const auto response = Fetch(
      "POST /v1/echo?pool=ns%2Fa&x=1 HTTP/1.1\r\nHost: test\r\nX-SESSION-ID: s-42\r\n"
      "Content-Length: 11\r\n\r\n{\"a\": true}");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body,
            "method=POST path=/v1/echo query=pool=ns%2Fa&x=1 session=s-42 body={\"a\": true}");
  EXPECT_EQ(response->header("x-echo"), "yes");
}

TEST_F(HttpServerTest, ChunkedBodyIsReassembled) {
  StartServer();
  const auto response = Fetch(
      "POST /v1/echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_THAT(response->body, HasSubstr("body=abcdefg"));
}

// Bodies are read straight into memory the connection keeps: each request sees its own bytes,
// whether its body came with the header, in pieces after it, or pipelined with the next request,
// and a body larger than what is kept between requests is served too.
TEST_F(HttpServerTest, EachBodyOnAKeptAliveConnectionIsItsOwn) {
  StartServer({.max_body_bytes = std::size_t{1024} * 1024});
  RawClient client(port());
  const auto post = [](const std::string& body) {
    return "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  const std::string large(std::size_t{600} * 1024, 'x');   // beyond the memory kept
  const std::string medium(std::size_t{200} * 1024, 'm');  // within it
  for (const std::string* body : {&large, &medium}) {
    const std::string request = post(*body);
    // The header and a little of the body, then the rest in two pieces.
    ASSERT_TRUE(
        client.Send(std::string_view(request).substr(0, request.size() - body->size() + 10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(client.Send(
        std::string_view(request).substr(request.size() - body->size() + 10, body->size() / 2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(client.Send(
        std::string_view(request).substr(request.size() - body->size() + 10 + body->size() / 2)));
    const auto response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << body->size();
    EXPECT_EQ(response->body, "method=POST path=/v1/echo query= session=- body=" + *body);
  }
  // Shorter bodies after longer ones, and pipelined: no byte of one shows in another.
  ASSERT_TRUE(client.Send(post("short") + post("") + post("tiny") +
                          "GET /v1/echo?n=4 HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_THAT(client.ReadResponse()->body, EndsWith(" body=short"));
  EXPECT_THAT(client.ReadResponse()->body, EndsWith(" body="));
  EXPECT_THAT(client.ReadResponse()->body, EndsWith(" body=tiny"));
  const auto last = client.ReadResponse();
  ASSERT_TRUE(last.has_value());
  EXPECT_THAT(last->body, HasSubstr("query=n=4"));
  EXPECT_THAT(last->body, EndsWith(" body="));
}

TEST_F(HttpServerTest, ExpectContinueGets100BeforeTheBody) {
  StartServer();
  RawClient client(port());
  ASSERT_TRUE(client.Send(
      "POST /v1/echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  const auto interim = client.ReadResponse();
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.Send("hello"));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body, HasSubstr("body=hello"));
}

TEST_F(HttpServerTest, HandlerThatThrowsGets500) {
  StartServer();
  const auto response = Fetch("GET /v1/throw HTTP/1.1\r\nHost: test\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->body, R"({"code":500,"message":"internal server error"})")
      << "nothing of the half-built answer";
  EXPECT_EQ(response->header("content-type"), "application/json");
}

TEST_F(HttpServerTest, OversizedHeadersAre431ThenClose) {
  StartServer();  // 8 KiB of headers by default
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.1\r\nHost: test\r\nX-Big: " +
                          std::string(std::size_t{9} * 1024, 'a') + "\r\n\r\n"));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 431);
  EXPECT_EQ(response->body,
            R"({"code":431,"message":"request headers over the limit of 8192 bytes"})");
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, HeadersJustUnderTheLimitAreServed) {
  StartServer();
  const auto response = Fetch("GET /healthz HTTP/1.1\r\nHost: test\r\nX-Big: " +
                              std::string(std::size_t{7} * 1024, 'a') + "\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpServerTest, OversizedBodyIs413WithoutReadingIt) {
  StartServer();  // 1 MiB of body by default
  RawClient client(port());
  // Declares 64 MiB and sends the first 64 KiB: the answer must come without the rest.
  ASSERT_TRUE(client.Send("POST /v1/echo HTTP/1.1\r\nHost: test\r\nContent-Length: " +
                          std::to_string(64 * 1024 * 1024) + "\r\n\r\n" +
                          std::string(std::size_t{64} * 1024, 'x')));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->body,
            R"({"code":413,"message":"request body over the limit of 1048576 bytes"})");
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_EQ(echo_calls_, 0);
}

TEST_F(HttpServerTest, ALyingContentLengthIsNeverServedAsMoreThanWasSent) {
  StartServer({.body_timeout = std::chrono::milliseconds(300)});
  // Says 100 bytes, sends 5, then waits: no answer, no handler call, closed at the body timeout.
  RawClient short_body(port());
  ASSERT_TRUE(
      short_body.Send("POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n"
                      "hello"));
  EXPECT_TRUE(short_body.WaitForClose());
  EXPECT_EQ(short_body.pending(), "");
  // Says 5, sends more: the handler sees 5, and the rest is read as the next request (here
  // malformed: 400, then close).
  RawClient long_body(port());
  ASSERT_TRUE(long_body.Send(
      "POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello world\r\n\r\n"));
  const auto first = long_body.ReadResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT(first->body, HasSubstr("body=hello"));
  EXPECT_THAT(first->body, ::testing::Not(HasSubstr("world")));
  const auto second = long_body.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 400);
  EXPECT_EQ(echo_calls_, 1);
}

TEST_F(HttpServerTest, OversizedChunkedBodyIs413) {
  StartServer({.max_body_bytes = 1024});
  RawClient client(port());
  std::string request =
      "POST /v1/echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) request += "200\r\n" + std::string(512, 'x') + "\r\n";
  request += "0\r\n\r\n";
  ASSERT_TRUE(client.Send(request));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_EQ(echo_calls_, 0);
}

TEST_F(HttpServerTest, GarbageIs400ThenClose) {
  StartServer();
  const std::vector<std::string> garbage = {
      std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15),  // TLS hello
      "GET /healthz HTTP/9.9\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nNo colon here\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
      "POST /v1/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      std::string("GET /he\0althz HTTP/1.1\r\n\r\n", 26),
  };
  for (const auto& bytes : garbage) {
    RawClient client(port());
    ASSERT_TRUE(client.Send(bytes));
    const auto response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << ::testing::PrintToString(bytes);
    EXPECT_EQ(response->status, 400) << ::testing::PrintToString(bytes);
    EXPECT_TRUE(client.WaitForClose()) << ::testing::PrintToString(bytes);
  }
  EXPECT_EQ(Fetch(kGetHealthz)->status, 200) << "the server lives on";
}

TEST_F(HttpServerTest, StalledHalfRequestIsDisconnectedAfterTheHeaderTimeout) {
  StartServer({.header_timeout = std::chrono::milliseconds(200)});
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.1\r\nHost: te"));  // and nothing more
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_EQ(client.pending(), "") << "no answer to half a request";
}

TEST_F(HttpServerTest, SilentNewConnectionIsDisconnectedAfterTheHeaderTimeout) {
  StartServer({.header_timeout = std::chrono::milliseconds(200)});
  RawClient client(port());
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, IdleKeptAliveConnectionWaitsPastTheHeaderTimeout) {
  // Between requests only the idle timeout applies, not the (much shorter) header timeout.
  StartServer({.header_timeout = std::chrono::milliseconds(100)});
  RawClient client(port());
  ASSERT_TRUE(client.Send(kGetHealthz));
  ASSERT_EQ(client.ReadResponse()->status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_TRUE(client.Send(kGetHealthz));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpServerTest, IdleKeptAliveConnectionIsClosedAfterTheIdleTimeout) {
  StartServer({.idle_timeout = std::chrono::milliseconds(200)});
  RawClient client(port());
  ASSERT_TRUE(client.Send(kGetHealthz));
  ASSERT_EQ(client.ReadResponse()->status, 200);
  EXPECT_TRUE(client.WaitForClose());
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  StartServer();
  RawClient client(port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.Send(kGetHealthz));
    const auto response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << "request " << i;
    EXPECT_EQ(response->status, 200);
    EXPECT_FALSE(response->has_header("connection"));
  }
  // Pipelined: two requests in one write, two answers in order.
  ASSERT_TRUE(
      client.Send("GET /v1/echo?n=1 HTTP/1.1\r\nHost: t\r\n\r\n"
                  "GET /v1/echo?n=2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_THAT(client.ReadResponse()->body, HasSubstr("query=n=1"));
  EXPECT_THAT(client.ReadResponse()->body, HasSubstr("query=n=2"));
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  StartServer();
  for (const std::string_view request :
       {"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
        "GET /healthz HTTP/1.0\r\n\r\n"}) {
    RawClient client(port());
    ASSERT_TRUE(client.Send(request));
    const auto response = client.ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->header("connection"), "close");
    EXPECT_TRUE(client.WaitForClose());
  }
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_EQ(client.ReadResponse()->header("connection"), "keep-alive");
  ASSERT_TRUE(client.Send(kGetHealthz));
  EXPECT_EQ(client.ReadResponse()->status, 200);
}

TEST_F(HttpServerTest, AtTheCapTheConnectionIdleLongestGivesWay) {
  StartServer({.max_connections = 2});
  RawClient first(port());
  RawClient second(port());
  // Served, so both are surely accepted and counted before the third arrives; first idles longer.
  ASSERT_TRUE(first.Send(kGetHealthz));
  ASSERT_EQ(first.ReadResponse()->status, 200);
  ASSERT_TRUE(second.Send(kGetHealthz));
  ASSERT_EQ(second.ReadResponse()->status, 200);

  RawClient third(port());
  ASSERT_TRUE(third.Send(kGetHealthz));
  const auto response = third.ReadResponse();
  ASSERT_TRUE(response.has_value()) << "the new connection is served";
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(first.WaitForClose()) << "the one idle longest made room";
  ASSERT_TRUE(second.Send(kGetHealthz));
  EXPECT_EQ(second.ReadResponse()->status, 200) << "the other is untouched";
  EXPECT_EQ(server_->open_connections(), 2U);
  EXPECT_EQ(server_->evicted_connections(), 1U);
  // The same two figures, as the pick listener exports them, beside the bodies' two.
  const auto families = PickConnectionMetrics(*server_);
  ASSERT_EQ(families.size(), 5U);
  EXPECT_EQ(families[0].name, "eoc_pick_connections");
  EXPECT_EQ(families[0].metric.at(0).gauge.value, 2);
  EXPECT_EQ(families[1].name, "eoc_pick_connections_evicted_total");
  EXPECT_EQ(families[1].metric.at(0).counter.value, 1);
  EXPECT_EQ(families[2].name, "eoc_pick_tls_handshake_failures_total");
  EXPECT_EQ(families[2].metric.at(0).counter.value, 0);
  EXPECT_EQ(families[3].name, "eoc_pick_requests_shed_total");
  EXPECT_EQ(families[3].metric.at(0).counter.value, 0);
  EXPECT_EQ(families[4].name, "eoc_pick_body_bytes");
}

TEST_F(HttpServerTest, HalfOpenConnectionsBeyondTheCapDoNotLockOutAWellBehavedClient) {
  // More clients that send half a header and stall than the cap, as a slowloris attack: each new
  // connection takes the place of the one stalled longest, so a client that sends its request
  // at once is served every time, /healthz and all, long before the header timeout.
  constexpr std::size_t kCap = 40;
  StartServer({.header_timeout = std::chrono::seconds(60), .max_connections = kCap});
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (std::size_t i = 0; i < 3 * kCap; ++i) {
    stalled.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(stalled.back()->Send("GET /healthz HTTP/1.1\r\nHost: t"));
  }
  for (int i = 0; i < 5; ++i) {
    const auto response = Fetch(kGetHealthz);
    ASSERT_TRUE(response.has_value()) << "request " << i;
    EXPECT_EQ(response->status, 200);
  }
  EXPECT_LE(server_->open_connections(), kCap);
  EXPECT_GE(server_->evicted_connections(), 2 * kCap);
}

TEST_F(HttpServerTest, WhenEveryConnectionIsBusyANewOneIsClosed) {
  StartServer({.max_connections = 2});
  RawClient first(port());
  RawClient second(port());
  ASSERT_TRUE(first.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(second.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(AwaitLater(2));  // both busy: their answers are awaited

  RawClient third(port());
  EXPECT_TRUE(third.WaitForClose());
  EXPECT_EQ(third.pending(), "");

  EXPECT_TRUE(LaterAt(0).Answer([](Response& resp) { resp.body() = "one"; }));
  EXPECT_TRUE(LaterAt(1).Answer([](Response& resp) { resp.body() = "two"; }));
  std::set<std::string> bodies = {first.ReadResponse()->body, second.ReadResponse()->body};
  EXPECT_EQ(bodies, (std::set<std::string>{"one", "two"})) << "the busy ones are untouched";
}

TEST_F(HttpServerTest, ADeferredRequestIsAnsweredLaterFromAnotherThread) {
  StartServer({.threads = 1});
  RawClient client(port());
  // A deferred request and, pipelined behind it, another: answers come in order.
  ASSERT_TRUE(
      client.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"
                  "GET /v1/echo?n=2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(AwaitLater(1));
  // The only I/O thread is free meanwhile: another client is served.
  EXPECT_EQ(Fetch(kGetHealthz)->status, 200);
  EXPECT_EQ(echo_calls_, 0) << "the pipelined request waits its turn";

  std::thread answerer([later = LaterAt(0)] {
    EXPECT_TRUE(later.Answer([](Response& resp) {
      resp.set_status(202);
      resp.AddHeader("x-answer", "42");
    }));
    EXPECT_FALSE(later.Answer([](Response&) { ADD_FAILURE() << "a second answer ran"; }));
  });
  answerer.join();
  const auto first = client.ReadResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->status, 202);
  EXPECT_EQ(first->header("x-answer"), "42");
  EXPECT_EQ(first->body, "") << "what the handler filled before deferring is discarded";
  const auto second = client.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_THAT(second->body, HasSubstr("query=n=2"));
  EXPECT_TRUE(Abandoned().empty());
}

TEST_F(HttpServerTest, ARetriedRequestIsHandedToItsHandlerAgainWhole) {
  StartServer({.threads = 1});
  RawClient client(port());
  // The request, and pipelined behind it another, which arrives while the first is put off.
  ASSERT_TRUE(
      client.Send("POST /v1/again HTTP/1.1\r\nHost: t\r\nx-session-id: s1\r\n"
                  "Content-Length: 5\r\n\r\nhello"));
  ASSERT_TRUE(AwaitLater(1));
  ASSERT_TRUE(client.Send("GET /v1/echo?n=2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // read ahead while put off

  std::thread retrier([later = LaterAt(0)] {
    EXPECT_TRUE(later.Retry());
    EXPECT_FALSE(later.Retry()) << "only the first end of a deferral counts";
    EXPECT_FALSE(later.Answer([](Response&) { ADD_FAILURE() << "an answer after the retry ran"; }));
  });
  retrier.join();
  const auto first = client.ReadResponse();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "attempt=1 path=/v1/again session=s1 body=hello");
  const auto second = client.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_THAT(second->body, HasSubstr("query=n=2"));
  // The next request on the connection starts at attempt 0 again.
  ASSERT_TRUE(client.Send("POST /v1/again HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(AwaitLater(2));
}

TEST_F(HttpServerTest, AClientThatGoesAwayAbandonsItsDeferredRequest) {
  StartServer();
  {
    RawClient client(port());
    ASSERT_TRUE(client.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(AwaitLater(1));
  }
  ASSERT_TRUE(AwaitAbandoned(1));
  EXPECT_EQ(Abandoned(), std::vector<Abandon>{Abandon::kClientGone});
  EXPECT_FALSE(LaterAt(0).Answer([](Response&) {})) << "no one to answer";
}

// A client that sends a request that is put off, then one byte more, then leaves: the byte used to
// end the watch ("the next request: it waits its turn"), so nothing noticed the close and the
// request waited out its deadline (1,000 such picks filled a pool's queue with no connection
// open). What arrives behind a put-off request is read into the buffer and the watch goes on.
TEST_F(HttpServerTest, AClientThatPipelinesThenGoesAwayAbandonsItsDeferredRequest) {
  StartServer();
  {
    RawClient client(port());
    ASSERT_TRUE(client.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\nG"));
    ASSERT_TRUE(AwaitLater(1));
    ASSERT_TRUE(client.Send("ET /v1/echo HTTP/1.1\r\n"));  // more, in another segment
  }
  ASSERT_TRUE(AwaitAbandoned(1));
  EXPECT_EQ(Abandoned(), std::vector<Abandon>{Abandon::kClientGone});
}

// The pipelined request read while the first waited is served after it, whole.
TEST_F(HttpServerTest, WhatArrivesBehindADeferredRequestIsServedAfterIt) {
  StartServer();
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\nGET /v1/ec"));
  ASSERT_TRUE(AwaitLater(1));
  ASSERT_TRUE(client.Send("ho?n=3 HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the watch read it
  EXPECT_EQ(echo_calls_, 0) << "the pipelined request waits its turn";
  EXPECT_TRUE(LaterAt(0).Answer([](Response& resp) { resp.body() = "first"; }));
  EXPECT_EQ(client.ReadResponse()->body, "first");
  const auto second = client.ReadResponse();
  ASSERT_TRUE(second.has_value());
  EXPECT_THAT(second->body, HasSubstr("query=n=3"));
  EXPECT_TRUE(Abandoned().empty());
}

// More bytes behind a put-off request than the read buffer holds (the header limit and 64 KiB):
// the client gets no further hold on the server's memory; its request is abandoned and the
// connection closed.
TEST_F(HttpServerTest, MoreThanTheBufferBehindADeferredRequestClosesTheConnection) {
  StartServer({.max_header_bytes = 1024});
  RawClient client(port());
  ASSERT_TRUE(client.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(AwaitLater(1));
  ASSERT_TRUE(
      client.Send("GET /v1/echo HTTP/1.1\r\nx-pad: " + std::string(std::size_t{128} * 1024, 'a')));
  ASSERT_TRUE(AwaitAbandoned(1));
  EXPECT_EQ(Abandoned(), std::vector<Abandon>{Abandon::kClientGone});
  EXPECT_TRUE(client.WaitForClose());
}

std::string PostHead(std::string_view path, std::size_t length) {
  return "POST " + std::string(path) +
         " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

// Waits (bounded) until `done` holds.
template <typename Done>
bool Await(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Bodies used to be allocated whole from Content-Length before a byte of them came, with no bound
// over the process: about a thousand stalled uploads of 1 MiB passed the chart's memory limit. A
// body's memory now comes as its bytes do, from one budget over every connection.
TEST_F(HttpServerTest, ABodysMemoryComesAsItsBytesDo) {
  StartServer({.max_body_bytes = std::size_t{1024} * 1024,
               .max_body_bytes_in_flight = std::size_t{4} * 1024 * 1024});
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 20; ++i) {  // 20 MiB announced, a byte of each sent
    stalled.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(stalled.back()->Send(PostHead("/v1/echo", std::size_t{1024} * 1024) + "x"));
  }
  ASSERT_TRUE(Await([&] { return server_->body_bytes_in_flight() >= 20U; }));
  // Each holds its byte and room for 64 KiB more: 1.3 MiB, not 20.
  EXPECT_LE(server_->body_bytes_in_flight(), 20U * (64 * 1024 + 1));
  // Room for another: a whole request is served.
  EXPECT_EQ(Fetch(PostHead("/v1/echo", 5) + "hello")->status, 200);
  EXPECT_EQ(server_->shed_requests(), 0U);
}

// Past the budget a request is shed with 503 and Retry-After, its memory given back, and served
// again once the budget has room.
TEST_F(HttpServerTest, BodiesPastTheBudgetAreShedWith503AndRetryAfter) {
  constexpr std::size_t kBody = std::size_t{64} * 1024;
  StartServer({.max_body_bytes = kBody, .max_body_bytes_in_flight = 2 * kBody});
  auto first = std::make_unique<RawClient>(port());
  auto second = std::make_unique<RawClient>(port());
  ASSERT_TRUE(first->Send(PostHead("/v1/echo", kBody) + "x"));
  ASSERT_TRUE(second->Send(PostHead("/v1/echo", kBody) + "y"));
  ASSERT_TRUE(Await([&] { return server_->body_bytes_in_flight() == 2 * kBody; }));
  for (const std::string& request :
       {PostHead("/v1/echo", 5) + "hello",
        std::string("POST /v1/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5\r\nhello\r\n0\r\n\r\n")}) {
    const auto shed = Fetch(request);
    ASSERT_TRUE(shed.has_value());
    EXPECT_EQ(shed->status, 503);
    EXPECT_EQ(shed->header("retry-after"), "1");
    EXPECT_THAT(shed->body, HasSubstr("limit of 131072 bytes of request bodies"));
  }
  EXPECT_EQ(server_->shed_requests(), 2U);
  EXPECT_EQ(echo_calls_, 0);
  first.reset();
  second.reset();
  ASSERT_TRUE(Await([&] { return server_->body_bytes_in_flight() == 0; }));
  EXPECT_EQ(Fetch(PostHead("/v1/echo", 5) + "hello")->status, 200);
}

// A route that ignores bodies (the pick endpoint's gateway form) reads and drops them as they
// come: none is held, whatever its size, and the handler sees none.
TEST_F(HttpServerTest, ARouteThatDiscardsBodiesHoldsNone) {
  StartServer({.max_body_bytes = std::size_t{1024} * 1024,
               .max_body_bytes_in_flight = std::size_t{1024} * 1024});
  RawClient client(port());
  ASSERT_TRUE(client.Send(PostHead("/v1/ignore", std::size_t{900} * 1024) +
                          std::string(std::size_t{500} * 1024, 'a')));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the server read some
  EXPECT_EQ(server_->body_bytes_in_flight(), 0U);
  ASSERT_TRUE(client.Send(std::string(std::size_t{400} * 1024, 'b')));
  const auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body, EndsWith(" body="));
  // The same on a chunked body, on the same connection.
  ASSERT_TRUE(
      client.Send("POST /v1/ignore HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n0\r\n\r\n"));
  const auto chunked = client.ReadResponse();
  ASSERT_TRUE(chunked.has_value());
  EXPECT_THAT(chunked->body, EndsWith(" body="));
  EXPECT_EQ(server_->body_bytes_in_flight(), 0U);
}

TEST_F(HttpServerTest, StopAnswersWaitingDeferredRequests503) {
  StartServer({.threads = 2});
  RawClient waiting(port());
  ASSERT_TRUE(waiting.Send("GET /v1/later HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(AwaitLater(1));
  RawClient idle(port());

  server_->Stop();

  const auto response = waiting.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->body, R"({"code":503,"message":"the server is shutting down"})");
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(waiting.WaitForClose());
  EXPECT_TRUE(idle.WaitForClose());
  EXPECT_EQ(Abandoned(), std::vector<Abandon>{Abandon::kStopping});
  EXPECT_FALSE(LaterAt(0).Answer([](Response&) {}));
}

TEST_F(HttpServerTest, PatternsMatchWholeSegmentsAndAnExactPathWins) {
  StartServer();
  auto get = [&](const std::string& path) {
    return Fetch("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
  };
  EXPECT_EQ(get("/v1/items/pods/of/vllm-0")->body, "pods;vllm-0;");
  EXPECT_EQ(get("/v1/items/pods/of/vllm-0?x=1")->body, "pods;vllm-0;") << "the query is apart";
  EXPECT_EQ(get("/v1/items/a%2Fb/of/c")->body, "a%2Fb;c;") << "still encoded";
  EXPECT_EQ(get("/v1/items/special/of/one")->body, "exact:0");
  EXPECT_EQ(get("/v1/items//of/x")->status, 404) << "a parameter is never empty";
  EXPECT_EQ(get("/v1/items/a/of/b/c")->status, 404);
  EXPECT_EQ(get("/v1/items/a/of")->status, 404);
  EXPECT_EQ(get("/v1/items/a/to/b")->status, 404);
  const auto wrong =
      Fetch("POST /v1/items/a/of/b HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->header("allow"), "GET, HEAD");
}

TEST_F(HttpServerTest, ClosedConnectionsFreeTheirPlace) {
  StartServer({.max_connections = 1});
  {
    RawClient first(port());
    ASSERT_TRUE(first.Send(kGetHealthz));
    ASSERT_EQ(first.ReadResponse()->status, 200);
  }
  // The server notices the close on its own time: retry until it has (bounded).
  const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
  std::optional<RawResponse> response;
  while (!response && std::chrono::steady_clock::now() < deadline) {
    response = Fetch(kGetHealthz);
    if (!response) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpServerTest, ManyThreadsServeManyClients) {
  StartServer({.threads = 4});
  constexpr int kClients = 8;
  constexpr int kRequestsEach = 50;
  std::atomic<int> ok = 0;
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      RawClient client(port());
      for (int i = 0; i < kRequestsEach; ++i) {
        if (!client.Send(kGetHealthz)) return;
        const auto response = client.ReadResponse();
        if (!response || response->status != 200) return;
        ++ok;
      }
    });
  }
  for (auto& thread : clients) thread.join();
  EXPECT_EQ(ok, kClients * kRequestsEach);
}

TEST_F(HttpServerTest, StopClosesOpenConnectionsAndReturns) {
  StartServer({.threads = 2});
  RawClient fresh(port());
  RawClient kept_alive(port());
  ASSERT_TRUE(kept_alive.Send(kGetHealthz));
  ASSERT_EQ(kept_alive.ReadResponse()->status, 200);
  RawClient halfway(port());
  ASSERT_TRUE(halfway.Send("GET /healthz HTTP/1.1\r\n"));

  server_->Stop();  // a hang here is the failure (CTest's timeout catches it)

  EXPECT_TRUE(fresh.WaitForClose());
  EXPECT_TRUE(kept_alive.WaitForClose());
  EXPECT_TRUE(halfway.WaitForClose());
  EXPECT_EQ(server_->open_connections(), 0U);
  EXPECT_THROW(RawClient{port()}, std::runtime_error) << "nothing listens any more";
  server_->Stop();  // idempotent
}

TEST(HttpServerLifecycleTest, StopWithoutStartAndDestructionWithoutStop) {
  HttpServer never_started;
  never_started.Stop();
  HttpServer started;
  started.Handle("GET", "/healthz", HealthzHandler());
  started.Start();
  RawClient idle(started.port());
  // ~HttpServer stops it, idle connection and all.
}

TEST(HttpServerLifecycleTest, StartFailsNamingTheAddressInUse) {
  HttpServer first;
  first.Start();
  HttpServer second({.address = "127.0.0.1:" + std::to_string(first.port())});
  try {
    second.Start();
    ADD_FAILURE() << "two servers on one port";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), StartsWith("listen on 127.0.0.1:" + std::to_string(first.port())));
  }
}

TEST(HttpServerLifecycleTest, RejectsBadOptionsAndLateRoutes) {
  EXPECT_THROW(HttpServer({.address = "nowhere"}), std::invalid_argument);
  EXPECT_THROW(HttpServer({.address = "example.com:80"}), std::invalid_argument);
  EXPECT_THROW(HttpServer({.threads = 0}), std::invalid_argument);
  EXPECT_THROW(HttpServer({.max_connections = 0}), std::invalid_argument);
  EXPECT_THROW(HttpServer({.idle_timeout = std::chrono::milliseconds(0)}), std::invalid_argument);
  EXPECT_THROW(HttpServer({.drain_timeout = std::chrono::milliseconds(0)}), std::invalid_argument);

  HttpServer server;
  server.Handle("GET", "/healthz", HealthzHandler());
  EXPECT_THROW(server.Handle("GET", "/healthz", HealthzHandler()), std::invalid_argument);
  EXPECT_THROW(server.Handle("GET", "healthz", HealthzHandler()), std::invalid_argument);
  for (const std::string_view bad :
       {"/v1/{", "/v1/{}", "/v1/a{b}", "/v1/{a}{b}", "/v1/{a}b", "/{a}/{b}/{c}/{d}/{e}"}) {
    EXPECT_THROW(server.Handle("GET", bad, HealthzHandler()), std::invalid_argument) << bad;
  }
  server.Handle("GET", "/v1/{a}", HealthzHandler());
  EXPECT_THROW(server.Handle("GET", "/v1/{a}", HealthzHandler()), std::invalid_argument);
  server.Start();
  EXPECT_THROW(server.Handle("GET", "/late", HealthzHandler()), std::logic_error);
  EXPECT_THROW(server.Start(), std::logic_error);
}

}  // namespace
}  // namespace eoc::server
