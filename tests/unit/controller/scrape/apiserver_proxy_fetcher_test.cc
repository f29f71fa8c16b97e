// ApiServerProxyFetcher over the scripted kube transport: the pods/proxy path, the headers and
// deadline handed to the transport, how the API server's answers map to error kinds, and its own
// rate limit waiting on the injected clock. (Through a real API server it cannot be tested here:
// the API server refuses to proxy to loopback pod IPs, "address not allowed".)
#include "controller/scrape/apiserver_proxy_fetcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "clock_steps.h"
#include "controller/scrape/direct_fetcher.h"
#include "fake_transport.h"

namespace eoc::controller {
namespace {

using kube::testing::AwaitSleep;
using kube::testing::FakeClient;
using kube::testing::FakeTransport;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// A fetcher over a FakeClient whose options are the fetcher's own (ProxyClientOptions), and the
// results it calls back, in order.
class ProxyFetcherTest : public ::testing::Test {
 protected:
  void Make(ApiServerProxyFetcherOptions options) {
    FakeClient fake(clock_, ProxyClientOptions(options));
    transport_ = fake.transport;
    fetcher_ = std::make_unique<ApiServerProxyFetcher>(std::move(fake.client), options);
  }

  void Fetch(FetchRequest request) {
    fetcher_->Fetch(std::move(request), [this](FetchResult r) {
      const std::lock_guard lock(mu_);
      results_.push_back(std::move(r));
      done_.notify_all();
    });
  }
  // Waits (in real time, bounded) until `n` fetches have called back.
  bool AwaitResults(std::size_t n) {
    std::unique_lock lock(mu_);
    return done_.wait_for(lock, seconds(10), [&] { return results_.size() >= n; });
  }
  FetchResult Result(std::size_t i) {
    const std::lock_guard lock(mu_);
    return results_.at(i);
  }

  ManualClock clock_;
  FakeTransport* transport_ = nullptr;
  std::unique_ptr<ApiServerProxyFetcher> fetcher_;
  std::mutex mu_;
  std::condition_variable done_;
  std::vector<FetchResult> results_;
};

const FetchRequest kPod{.pod = "prod/vllm-0",
                        .address = "10.1.2.3:8000",
                        .path = "/metrics",
                        .timeout = milliseconds(2000)};

TEST_F(ProxyFetcherTest, GetsThePodsPageThroughPodsProxy) {
  Make({.qps = 0});
  transport_->Reply(200, "vllm:num_requests_running 3\n");
  Fetch(kPod);
  ASSERT_TRUE(AwaitResults(1));
  const FetchResult r = Result(0);
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.body, "vllm:num_requests_running 3\n");
  ASSERT_EQ(transport_->requests.size(), 1U);
  const kube::HttpRequest& sent = transport_->requests[0];
  EXPECT_EQ(sent.method, "GET");
  EXPECT_EQ(sent.path, "/api/v1/namespaces/prod/pods/vllm-0:8000/proxy/metrics");
  EXPECT_EQ(sent.accept, kPrometheusTextAccept);
  EXPECT_EQ(sent.deadline, milliseconds(2000));  // the transport cuts the call there
}

TEST_F(ProxyFetcherTest, TheApiServersAnswersMapToKinds) {
  Make({.qps = 0, .threads = 1});  // one thread: the script is consumed in order
  transport_->Reply(503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable","message":
      "error trying to reach service: dial tcp 10.1.2.3:8000: connect: connection refused"})");
  transport_->Fail(kube::kReasonTimeout, "GET https://api/...: timed out (deadline of 2000 ms)");
  transport_->Fail(kube::kReasonTooLarge, "GET https://api/...: the answer exceeds the limit");
  transport_->Reply(404, R"({"kind":"Status","code":404,"reason":"NotFound",
      "message":"pods \"vllm-0\" not found"})");
  transport_->Fail(kube::kReasonTransport, "connection reset");
  for (int i = 0; i < 5; ++i) Fetch(kPod);
  ASSERT_TRUE(AwaitResults(5));
  EXPECT_EQ(Result(0).error->kind, FetchErrorKind::kConnectRefused);
  EXPECT_EQ(Result(0).error->http_status, 503);
  EXPECT_EQ(Result(1).error->kind, FetchErrorKind::kDeadline);
  EXPECT_EQ(Result(2).error->kind, FetchErrorKind::kTooLarge);
  EXPECT_EQ(Result(3).error->kind, FetchErrorKind::kHttpStatus);
  EXPECT_EQ(Result(3).error->http_status, 404);
  EXPECT_THAT(Result(3).error->message, HasSubstr("prod/vllm-0"));
  EXPECT_THAT(Result(3).error->message, HasSubstr("not found"));
  EXPECT_EQ(Result(4).error->kind, FetchErrorKind::kTransport);
}

TEST_F(ProxyFetcherTest, ATargetWithoutPodOrPortIsRefusedUnsent) {
  Make({.qps = 0, .threads = 1});
  Fetch({.pod = "vllm-0", .address = "10.1.2.3:8000"});
  Fetch({.pod = "prod/vllm-0", .address = "10.1.2.3"});
  Fetch({.pod = "prod/vllm-0", .address = "10.1.2.3:8000", .path = "metrics"});
  ASSERT_TRUE(AwaitResults(3));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(Result(i).error->kind, FetchErrorKind::kTransport);
  EXPECT_THAT(Result(0).error->message, HasSubstr("namespace/name"));
  EXPECT_TRUE(transport_->requests.empty());
}

TEST_F(ProxyFetcherTest, ItsOwnRateLimitWaitsOnTheInjectedClock) {
  // One a second, no burst beyond one: the first goes at once, each next one a second later on
  // the clock, and nothing is sent before its turn.
  Make({.qps = 1, .burst = 1, .threads = 1});
  for (int i = 0; i < 3; ++i) transport_->Reply(200, "up 1\n");
  for (int i = 0; i < 3; ++i) Fetch(kPod);
  ASSERT_TRUE(AwaitResults(1));
  EXPECT_EQ(AwaitSleep(clock_, seconds(1)), seconds(1));
  EXPECT_EQ(transport_->Paths().size(), 1U);
  clock_.Advance(seconds(1));
  ASSERT_TRUE(AwaitResults(2));
  EXPECT_EQ(AwaitSleep(clock_, seconds(1)), seconds(1));
  EXPECT_EQ(transport_->Paths().size(), 2U);
  clock_.Advance(seconds(1));
  ASSERT_TRUE(AwaitResults(3));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(Result(i).ok());
}

TEST(ProxyClientOptions, AreTheFetchersOwnLimitWithoutRetries) {
  const kube::ClientOptions o = ProxyClientOptions({.qps = 300, .burst = 100, .body_limit = 1234});
  EXPECT_EQ(o.qps, 300);
  EXPECT_EQ(o.burst, 100);
  EXPECT_EQ(o.max_retries, 0);
  EXPECT_EQ(o.transport.max_response_bytes, 1234U);
  EXPECT_EQ(o.transport.user_agent, kScrapeUserAgent);
}

}  // namespace
}  // namespace eoc::controller
