// DirectFetcher against real local sockets: servers that answer, hang, trickle, flood, speak
// something else, or are not there. Assertions are on the outcome (the error's kind, what the
// server saw, the order of callbacks), never on how fast anything ran.
#include "controller/scrape/direct_fetcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_worker.h"
#include "local_http_server.h"

namespace eoc::controller {
namespace {

using eoc::testing::LocalHttpServer;
using std::chrono::milliseconds;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

std::string Address(const LocalHttpServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

// One fetch, waited for (a broken fetcher fails the test instead of hanging it).
FetchResult FetchOne(MetricsFetcher& fetcher, FetchRequest request) {
  std::promise<FetchResult> got;
  auto future = got.get_future();
  fetcher.Fetch(std::move(request), [&](FetchResult r) { got.set_value(std::move(r)); });
  if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "the fetch never called back";
    return {};
  }
  return future.get();
}

FetchErrorKind KindOf(const FetchResult& r) {
  EXPECT_FALSE(r.ok()) << "expected an error, got a body of " << r.body.size() << " bytes";
  return r.ok() ? FetchErrorKind::kCancelled : r.error->kind;
}

// Writes `bytes` in pieces until done or the peer goes away; returns how many were sent.
std::size_t SendAll(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  return sent;
}

const std::string kPage = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n";

TEST(DirectFetcher, ReadsThePageAndSendsTheScrapeHeaders) {
  LocalHttpServer server([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd,
                           "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                           "Content-Length: " +
                               std::to_string(kPage.size()) + "\r\n\r\n" + kPage);
  });
  DirectFetcher fetcher;
  const FetchResult r = FetchOne(fetcher, {.pod = "ns/w-0", .address = Address(server)});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.body, kPage);
  EXPECT_GT(r.bytes_read, kPage.size());  // and the headers
  ASSERT_EQ(server.heads().size(), 1U);
  const std::string head = server.heads()[0];
  EXPECT_THAT(head, HasSubstr("GET /metrics HTTP/1.1"));
  EXPECT_THAT(head, ContainsRegex("Host: 127.0.0.1:[0-9]+"));
  EXPECT_THAT(head, HasSubstr("Accept: text/plain;version=0.0.4"));
  EXPECT_THAT(head, HasSubstr("User-Agent: eoc-operator/"));
  EXPECT_THAT(head, HasSubstr("Connection: close"));
}

TEST(DirectFetcher, ReadsAFakeWorkersMetricsPage) {
  eoc::testing::FakeWorker worker({.engine = eoc::api::Engine::kVllm});
  worker.Start();
  worker.SetLoad({.running = 5, .waiting = 2, .kv_cache_usage = 0.5});
  DirectFetcher fetcher;
  const FetchResult r = FetchOne(fetcher, {.address = worker.endpoint(), .path = "/metrics"});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.body, worker.MetricsText());
  EXPECT_THAT(r.body, HasSubstr("vllm:num_requests_running"));
}

TEST(DirectFetcher, AnEndpointThatNeverAnswersHitsTheDeadline) {
  LocalHttpServer server([](LocalHttpServer& s, int, const std::string&) { s.HoldUntilStopped(); });
  DirectFetcher fetcher;
  const FetchResult r = FetchOne(
      fetcher, {.pod = "ns/w-0", .address = Address(server), .timeout = milliseconds(200)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kDeadline);
  EXPECT_THAT(r.error->message, HasSubstr("deadline of 200 ms exceeded while reading the answer"));
  EXPECT_THAT(r.error->message, HasSubstr("pod ns/w-0"));
}

TEST(DirectFetcher, AnAnswerThatTricklesInIsCutByTheDeadline) {
  // A byte every 200 ms: never silent for long, so only a total deadline ends it.
  LocalHttpServer server([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
    while (!s.stopping() && send(fd, "x", 1, MSG_NOSIGNAL) == 1) {
      std::this_thread::sleep_for(milliseconds(200));
    }
  });
  DirectFetcher fetcher;
  const FetchResult r =
      FetchOne(fetcher, {.address = Address(server), .timeout = milliseconds(1000)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kDeadline);
}

// A 10 MB page, sized up front or not: refused at the limit, having read little more than it.
class HugeBody : public ::testing::TestWithParam<bool> {};

TEST_P(HugeBody, IsRefusedAndReadingStopsAtTheLimit) {
  const bool sized = GetParam();
  std::atomic<std::size_t> sent{0};
  LocalHttpServer server([&](LocalHttpServer&, int fd, const std::string&) {
    std::string head = "HTTP/1.1 200 OK\r\n";
    head += sized ? "Content-Length: 10000000\r\n\r\n" : "Connection: close\r\n\r\n";
    const std::string piece(std::size_t{64} << 10, 'x');
    // The head and the first of the body in one write, so that one read brings both: Beast 1.74's
    // eager parse then forgets the body limit (see DirectFetcher's Read), the case to hold.
    LocalHttpServer::Write(fd, head + piece);
    sent += head.size() + piece.size();
    while (sent < 10'000'000) {
      const std::size_t n = SendAll(fd, piece);
      sent += n;
      if (n < piece.size()) break;  // the fetcher closed the connection
    }
    shutdown(fd, SHUT_WR);
  });
  constexpr std::size_t kLimit = std::size_t{1} << 20;
  DirectFetcher fetcher({.body_limit = kLimit});
  const FetchResult r = FetchOne(fetcher, {.address = Address(server)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kTooLarge);
  EXPECT_THAT(r.error->message, HasSubstr("exceeds the limit of 1048576 bytes"));
  EXPECT_TRUE(r.body.empty());
  // The parser stopped reading at the limit: what was read (so what memory could hold) is the
  // limit and at most one more read's worth, not the 10 MB on offer.
  EXPECT_LE(r.bytes_read, kLimit + (std::size_t{128} << 10));
  if (sized) {
    EXPECT_LT(r.bytes_read, std::size_t{64} << 10);  // refused at the header, before the body
  } else {
    EXPECT_GE(r.bytes_read, kLimit);  // read up to the limit, then stopped
  }
}

INSTANTIATE_TEST_SUITE_P(SizedOrNot, HugeBody, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Sized" : "Unsized";
                         });

TEST(DirectFetcher, HeadersOverTheLimitAreTooLarge) {
  LocalHttpServer server([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nX-Pad: " + std::string(100'000, 'p') +
                                   "\r\nContent-Length: 0\r\n\r\n");
  });
  DirectFetcher fetcher({.header_limit = 8192});
  const FetchResult r = FetchOne(fetcher, {.address = Address(server)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kTooLarge);
  EXPECT_THAT(r.error->message, HasSubstr("headers exceed the limit of 8192 bytes"));
}

TEST(DirectFetcher, AnAnswerThatIsNotHttpIsMalformed) {
  LocalHttpServer server([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n\x01\x02\x03 garbage\r\n\r\n");
    s.HoldUntilStopped();  // no end of stream to blame: the bytes alone are wrong
  });
  DirectFetcher fetcher;
  const FetchResult r =
      FetchOne(fetcher, {.address = Address(server), .timeout = milliseconds(10'000)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kMalformed);
  EXPECT_THAT(r.error->message, HasSubstr("not an HTTP answer"));
}

TEST(DirectFetcher, AClosedPortIsConnectRefused) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = probe.local_endpoint().port();
  probe.close();  // nothing listens there now
  DirectFetcher fetcher;
  const FetchResult r = FetchOne(fetcher, {.address = "127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kConnectRefused);
  EXPECT_THAT(r.error->message, HasSubstr("connection refused"));
}

TEST(DirectFetcher, AnErrorStatusIsReportedWithItsCode) {
  LocalHttpServer server([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(
        fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 8\r\n\r\nwarmup\r\n");
  });
  DirectFetcher fetcher;
  const FetchResult r = FetchOne(fetcher, {.address = Address(server)});
  EXPECT_EQ(KindOf(r), FetchErrorKind::kHttpStatus);
  EXPECT_EQ(r.error->http_status, 503);
  EXPECT_THAT(r.error->message, HasSubstr("HTTP 503"));
  EXPECT_THAT(r.error->message, HasSubstr("warmup"));
}

TEST(DirectFetcher, AnAddressThatIsNotAnIpIsRefusedUnsent) {
  DirectFetcher fetcher;
  for (const char* address : {"vllm-0.svc:8000", "10.0.0.1", "[::1:80", "10.0.0.1:0"}) {
    const FetchResult r = FetchOne(fetcher, {.address = address});
    EXPECT_EQ(KindOf(r), FetchErrorKind::kTransport) << address;
    EXPECT_THAT(r.error->message, HasSubstr("bad address")) << address;
  }
}

TEST(DirectFetcher, NeverOpensMoreThanMaxInFlightConnections) {
  // The server counts connections from accept until it has closed its side; a page has no
  // Content-Length, so the fetcher reads to that close before it frees its slot.
  std::mutex mu;
  int open = 0;
  int most = 0;
  LocalHttpServer server([&](LocalHttpServer&, int fd, const std::string&) {
    {
      const std::lock_guard lock(mu);
      most = std::max(most, ++open);
    }
    std::this_thread::sleep_for(milliseconds(20));
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + kPage);
    {
      const std::lock_guard lock(mu);
      --open;
    }
    shutdown(fd, SHUT_WR);
  });
  constexpr std::size_t kMaxInFlight = 4;
  DirectFetcher fetcher({.max_in_flight = kMaxInFlight});
  std::vector<FetchRequest> requests(40, FetchRequest{.address = Address(server)});
  std::size_t ok = 0;
  FetchAll(fetcher, requests, [&](std::size_t, FetchResult r) {
    EXPECT_TRUE(r.ok()) << r.error->message;
    ok += r.ok() && r.body == kPage ? 1 : 0;
    EXPECT_LE(fetcher.in_flight(), kMaxInFlight);
  });
  EXPECT_EQ(ok, requests.size());
  EXPECT_LE(most, static_cast<int>(kMaxInFlight));
  EXPECT_GE(most, 2);  // and they did run side by side
}

TEST(DirectFetcher, AHungTargetDoesNotHoldUpTheOthers) {
  LocalHttpServer hung([](LocalHttpServer& s, int, const std::string&) { s.HoldUntilStopped(); });
  LocalHttpServer fine([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: " +
                                   std::to_string(kPage.size()) + "\r\n\r\n" + kPage);
  });
  DirectFetcher fetcher({.max_in_flight = 2});
  std::vector<FetchRequest> requests{
      {.pod = "ns/hung", .address = Address(hung), .timeout = milliseconds(3000)}};
  for (int i = 0; i < 10; ++i)
    requests.push_back({.address = Address(fine), .timeout = milliseconds(3000)});
  std::vector<std::size_t> order;
  std::vector<FetchResult> results(requests.size());
  FetchAll(fetcher, requests, [&](std::size_t i, FetchResult r) {
    order.push_back(i);
    results[i] = std::move(r);
  });
  // The hung one, started first, is called back last: at its deadline, after all the others
  // went through the second slot.
  ASSERT_EQ(order.size(), requests.size());
  EXPECT_EQ(order.back(), 0U);
  EXPECT_EQ(KindOf(results[0]), FetchErrorKind::kDeadline);
  for (std::size_t i = 1; i < results.size(); ++i) EXPECT_TRUE(results[i].ok()) << i;
}

TEST(DirectFetcher, AFullQueueRefusesAndStoppingCancelsTheRest) {
  LocalHttpServer hung([](LocalHttpServer& s, int, const std::string&) { s.HoldUntilStopped(); });
  std::vector<FetchResult> results(3);
  std::atomic<int> called{0};
  {
    DirectFetcher fetcher({.max_in_flight = 1, .max_queued = 1});
    for (FetchResult& result : results) {
      // An hour: a stop that waits for the deadline instead of cancelling fails by the test's
      // timeout, not by luck.
      fetcher.Fetch({.address = Address(hung), .timeout = std::chrono::hours(1)},
                    [&called, &result](FetchResult r) {
                      result = std::move(r);
                      ++called;
                    });
    }
    // The third found one running and one queued: refused at once, on this thread.
    EXPECT_EQ(called.load(), 1);
    EXPECT_EQ(KindOf(results[2]), FetchErrorKind::kOverloaded);
    EXPECT_EQ(fetcher.queued(), 1U);
  }  // the destructor calls back the running and the queued fetch before it returns
  EXPECT_EQ(called.load(), 3);
  EXPECT_EQ(KindOf(results[0]), FetchErrorKind::kCancelled);
  EXPECT_EQ(KindOf(results[1]), FetchErrorKind::kCancelled);
}

}  // namespace
}  // namespace eoc::controller
