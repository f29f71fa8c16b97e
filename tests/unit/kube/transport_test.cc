// The cpprestsdk transport against a local server that misbehaves on purpose.
#include "kube/transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "local_http_server.h"

namespace eoc::kube {
namespace {

using eoc::testing::LocalHttpServer;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

std::shared_ptr<CredentialSource> Credentials(const RestConfig& cfg) {
  return MakeCredentialSource(cfg, RealClock());
}

std::unique_ptr<Transport> MakeTransport(const std::string& url, const TransportOptions& o = {}) {
  RestConfig cfg;
  cfg.server = url;
  cfg.token = "t0k3n";
  return MakeCpprestTransport(cfg, Credentials(cfg), o);
}

const std::string kOkHead = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";

TEST(CpprestTransport, SendsTokenAndReadsBody) {
  LocalHttpServer server([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Content-Length: 11\r\n\r\n{\"a\":\"b\"}\n\n");
  });
  auto t = MakeTransport(server.url());
  const HttpResponse r = t->Send({"GET", "/api/v1/pods?limit=5", "", ""});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"a\":\"b\"}\n\n");
  ASSERT_EQ(server.heads().size(), 1U);
  EXPECT_THAT(server.heads()[0], HasSubstr("GET /api/v1/pods?limit=5 HTTP/1.1"));
  EXPECT_THAT(server.heads()[0], ContainsRegex("Authorization: ?Bearer t0k3n"));
  EXPECT_THAT(server.heads()[0], ContainsRegex("User-Agent: ?eoc-operator/"));
}

TEST(CpprestTransport, EveryCallHasATimeout) {
  LocalHttpServer server([](LocalHttpServer& s, int, const std::string&) { s.HoldUntilStopped(); });
  TransportOptions o;
  o.request_timeout = std::chrono::milliseconds(300);
  auto t = MakeTransport(server.url(), o);
  try {
    t->Send({"GET", "/api", "", ""});
    FAIL() << "expected a timeout";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTimeout);
    EXPECT_THAT(e.what(), HasSubstr("GET " + server.url() + "/api"));
  }
}

TEST(CpprestTransport, ADeadlineCutsAnAnswerThatTricklesIn) {
  // One byte every 100 ms: the inactivity timeout (30 s) never fires, the deadline does.
  LocalHttpServer server([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
    while (!s.stopping() && send(fd, "x", 1, MSG_NOSIGNAL) == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto t = MakeTransport(server.url());
  HttpRequest request{"GET", "/metrics", "", ""};
  request.accept = "text/plain;version=0.0.4";
  request.deadline = std::chrono::milliseconds(500);
  try {
    t->Send(request);
    FAIL() << "expected the deadline to cut the answer";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTimeout);
    EXPECT_THAT(e.what(), HasSubstr("deadline of 500 ms"));
  }
  ASSERT_EQ(server.heads().size(), 1U);
  EXPECT_THAT(server.heads()[0], ContainsRegex("Accept: ?text/plain;version=0.0.4"));
}

TEST(CpprestTransport, ADeadlineCutsAWaitForTheHeaders) {
  LocalHttpServer server([](LocalHttpServer& s, int, const std::string&) { s.HoldUntilStopped(); });
  auto t = MakeTransport(server.url());
  HttpRequest request{"GET", "/metrics", "", ""};
  request.deadline = std::chrono::milliseconds(300);
  try {
    t->Send(request);
    FAIL() << "expected the deadline to cut the wait";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTimeout);
  }
  // A request that ends in time is not cut later: the timer goes with it.
  LocalHttpServer ok([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Content-Length: 2\r\n\r\n{}");
  });
  auto t2 = MakeTransport(ok.url());
  request.deadline = std::chrono::milliseconds(5000);
  EXPECT_EQ(t2->Send(request).body, "{}");
}

TEST(CpprestTransport, RefusesAnswersOverTheLimit) {
  LocalHttpServer declared([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd,
                           kOkHead + "Content-Length: 100000\r\n\r\n" + std::string(100000, 'x'));
  });
  TransportOptions o;
  o.max_response_bytes = 1000;
  try {
    MakeTransport(declared.url(), o)->Send({"GET", "/", "", ""});
    FAIL() << "expected ResponseTooLarge";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTooLarge);
  }
  // Without a Content-Length, the limit is enforced while reading.
  LocalHttpServer chunked([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 100; ++i)
      LocalHttpServer::Write(fd, LocalHttpServer::Chunk(std::string(100, 'y')));
    LocalHttpServer::Write(fd, "0\r\n\r\n");
  });
  try {
    MakeTransport(chunked.url(), o)->Send({"GET", "/", "", ""});
    FAIL() << "expected ResponseTooLarge";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTooLarge);
  }
}

// A server whose answers never end: after `head`, chunks of 64 KiB until the client closes the
// connection (a send fails) or kGiveUp bytes have gone, whichever comes first. A client that
// closes has read no more than kGiveUp less what the sockets' buffers hold.
class EndlessServer {
 public:
  static constexpr std::size_t kGiveUp = std::size_t{64} << 20;

  explicit EndlessServer(std::string head)
      : server_([this, head = std::move(head)](LocalHttpServer& s, int fd, const std::string&) {
          Serve(s, fd, head);
        }) {}
  std::string url() const { return server_.url(); }
  // Waits (bounded) for the answer to end; then whether the client closed it, and the bytes sent.
  bool AwaitEnd() {
    std::unique_lock lock(mu_);
    return ended_.wait_for(lock, std::chrono::seconds(30), [&] { return done_; });
  }
  bool closed_by_client() const {
    const std::lock_guard lock(mu_);
    return closed_by_client_;
  }
  std::size_t sent() const {
    const std::lock_guard lock(mu_);
    return sent_;
  }

 private:
  void Serve(const LocalHttpServer& s, int fd, const std::string& head) {
    LocalHttpServer::Write(fd, head);
    const std::string chunk = LocalHttpServer::Chunk(std::string(std::size_t{64} << 10, 'x'));
    std::size_t sent = 0;
    bool closed = false;
    while (!s.stopping() && sent < kGiveUp) {
      const ssize_t n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        closed = true;
        break;
      }
      sent += static_cast<std::size_t>(n);
    }
    const std::lock_guard lock(mu_);
    done_ = true;
    closed_by_client_ = closed;
    sent_ = sent;
    ended_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable ended_;
  bool done_ = false;
  bool closed_by_client_ = false;
  std::size_t sent_ = 0;
  LocalHttpServer server_;  // last: its handler threads end before the members above go
};

TEST(CpprestTransport, AnAnswerOverTheLimitClosesItsConnection) {
  // Refusing the answer is not enough: cpprestsdk reads a body on its own threads whether or not
  // anyone takes it, so the transfer must be cut, or an endless body is read (and buffered) for
  // as long as the server sends.
  TransportOptions o;
  o.max_response_bytes = std::size_t{1} << 20;
  const auto expect_cut = [&](EndlessServer& server, auto call) {
    try {
      call(*MakeTransport(server.url(), o));
      ADD_FAILURE() << "expected ResponseTooLarge";
    } catch (const TransportError& e) {
      EXPECT_EQ(e.status().reason, kReasonTooLarge);
    }
    ASSERT_TRUE(server.AwaitEnd());
    EXPECT_TRUE(server.closed_by_client()) << server.sent() << " bytes sent";
  };
  const auto send = [](Transport& t) { t.Send({"GET", "/metrics", "", ""}); };
  // Read up to the limit.
  EndlessServer chunked(kOkHead + "Transfer-Encoding: chunked\r\n\r\n");
  expect_cut(chunked, send);
  // Refused at once from its Content-Length.
  EndlessServer declared(kOkHead + "Content-Length: 1000000000000\r\n\r\n");
  expect_cut(declared, send);
  // A streamed request's error answer, which is read whole.
  EndlessServer refused("HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n");
  expect_cut(refused, [](Transport& t) {
    t.Stream({"GET", "/w", "", ""}, std::chrono::seconds(30));
  });
}

TEST(CpprestTransport, StreamsLinesAsTheyArrive) {
  LocalHttpServer server([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Transfer-Encoding: chunked\r\n\r\n");
    LocalHttpServer::Write(fd, LocalHttpServer::Chunk("{\"n\":1}\n{\"n\""));
    LocalHttpServer::Write(fd, LocalHttpServer::Chunk(":2}\r\n"));
    // The third line comes only after the client has read the first two: a stream that waited
    // for more bytes than were there would hang here.
    s.HoldUntilStopped();
  });
  TransportOptions o;
  auto t = MakeTransport(server.url(), o);
  StreamResult r = t->Stream({"GET", "/api/v1/pods?watch=1", "", ""}, std::chrono::seconds(30));
  ASSERT_NE(r.stream, nullptr);
  EXPECT_EQ(r.stream->NextLine(), "{\"n\":1}");
  EXPECT_EQ(r.stream->NextLine(), "{\"n\":2}");
  r.stream->Cancel();
  EXPECT_EQ(r.stream->NextLine(), std::nullopt);
}

TEST(CpprestTransport, StreamIdleTimeoutAndLineLimit) {
  LocalHttpServer idle([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Transfer-Encoding: chunked\r\n\r\n");
    LocalHttpServer::Write(fd, LocalHttpServer::Chunk("{}\n"));
    s.HoldUntilStopped();
  });
  auto t = MakeTransport(idle.url());
  StreamResult r = t->Stream({"GET", "/w", "", ""}, std::chrono::milliseconds(300));
  ASSERT_NE(r.stream, nullptr);
  EXPECT_EQ(r.stream->NextLine(), "{}");
  try {
    r.stream->NextLine();
    FAIL() << "expected an idle timeout";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTimeout);
  }

  LocalHttpServer endless([](LocalHttpServer& s, int fd, const std::string&) {
    LocalHttpServer::Write(fd, kOkHead + "Transfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 50 && !s.stopping(); ++i) {
      LocalHttpServer::Write(fd, LocalHttpServer::Chunk(std::string(1000, 'z')));
    }
    s.HoldUntilStopped();
  });
  TransportOptions o;
  o.max_line_bytes = 10000;
  StreamResult big =
      MakeTransport(endless.url(), o)->Stream({"GET", "/w", "", ""}, std::chrono::seconds(30));
  ASSERT_NE(big.stream, nullptr);
  try {
    big.stream->NextLine();
    FAIL() << "expected ResponseTooLarge";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTooLarge);
  }
}

TEST(CpprestTransport, StreamErrorAnswersAreReadWhole) {
  LocalHttpServer server([](LocalHttpServer&, int fd, const std::string&) {
    const std::string body = R"({"kind":"Status","code":403,"reason":"Forbidden"})";
    LocalHttpServer::Write(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  StreamResult r =
      MakeTransport(server.url())->Stream({"GET", "/w", "", ""}, std::chrono::seconds(5));
  EXPECT_EQ(r.stream, nullptr);
  EXPECT_EQ(r.response.status, 403);
  EXPECT_THAT(r.response.body, HasSubstr("Forbidden"));
}

TEST(CpprestTransport, RetriesOnceWithARotatedTokenAfter401) {
  const std::string token_file = ::testing::TempDir() + "/eoc-transport-token";
  std::ofstream(token_file) << "old\n";
  LocalHttpServer server([&](LocalHttpServer&, int fd, const std::string& head) {
    if (head.find("Bearer new") != std::string::npos) {
      LocalHttpServer::Write(fd, kOkHead + "Content-Length: 2\r\n\r\n{}");
      return;
    }
    // The token rotates while the old one is in flight.
    std::ofstream(token_file) << "new\n";
    LocalHttpServer::Write(fd, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
  });
  RestConfig cfg;
  cfg.server = server.url();
  cfg.token_file = token_file;
  auto t = MakeCpprestTransport(cfg, Credentials(cfg), {});
  const HttpResponse r = t->Send({"GET", "/api", "", ""});
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(server.heads().size(), 2U);
  EXPECT_THAT(server.heads()[0], HasSubstr("Bearer old"));
  EXPECT_THAT(server.heads()[1], HasSubstr("Bearer new"));

  // When refreshing gives the same token, the 401 is the answer: one request, no loop.
  LocalHttpServer refusing([](LocalHttpServer&, int fd, const std::string&) {
    LocalHttpServer::Write(fd, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
  });
  cfg.server = refusing.url();
  const HttpResponse refused =
      MakeCpprestTransport(cfg, Credentials(cfg), {})->Send({"GET", "/", "", ""});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refusing.heads().size(), 1U);
  std::remove(token_file.c_str());
}

TEST(CpprestTransport, ConnectionRefusedIsATransportError) {
  int port = 0;
  {
    LocalHttpServer closed([](LocalHttpServer&, int, const std::string&) {});
    port = closed.port();
  }
  try {
    MakeTransport("http://127.0.0.1:" + std::to_string(port))->Send({"GET", "/", "", ""});
    FAIL() << "expected a transport error";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status().reason, kReasonTransport);
  }
}

}  // namespace
}  // namespace eoc::kube
