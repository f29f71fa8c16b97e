// The pick endpoint over a real server on loopback: every form, every error and its message,
// waiting picks that hold no thread, sessions, and shutdown with picks waiting.
#include "server/pick_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_reviewer.h"
#include "raw_client.h"
#include "routing/pool_directory.h"
#include "routing/pool_snapshot.h"
#include "routing/prefix_hash.h"
#include "server/pick_metrics.h"
#include "server/pool_ticker.h"
#include "server/server.h"

namespace eoc::server {
namespace {

using ::testing::HasSubstr;
using testing::RawClient;
using testing::RawResponse;

// A worker of the pool prod/chat.
routing::Worker W(const std::string& name, std::int32_t weight = 1000,
                  std::vector<std::string> models = {}) {
  routing::Worker w;
  w.pod = "prod/" + name;
  w.key = routing::WorkerKeyOf(w.pod);
  w.address = "10.0.0." + std::to_string(name.back() - '0' + 1) + ":8000";
  w.weight = weight;
  w.capability.models = std::move(models);
  return w;
}

// A scraped load with `free` of 100 KV blocks of 16 tokens free.
routing::Load Blocks(std::int64_t free) {
  return {.kv_blocks_total = 100, .kv_blocks_free = free, .block_size = 16, .available = true};
}

std::string Post(std::string_view body) {
  return "POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

std::string Get(std::string_view path, std::string_view headers = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: t\r\n" + std::string(headers) + "\r\n";
}

constexpr std::string_view kGatewayPath = "/v1/pools/prod/chat/pick";

class PickEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  void Start(const routing::PoolState::Options& options = DefaultOptions(),
             std::vector<routing::Worker> workers = {W("vllm-0"), W("vllm-1")},
             const ServerOptions& server_options = {.threads = 2},
             const PoolHttpSettings& http = {.queue_timeout = std::chrono::seconds(20)}) {
    pool_ = Configure("prod/chat", options, http);
    pool_->SetSnapshot(
        routing::PoolSnapshot::Build(std::move(workers), 4, routing::Strategy::kRoundRobin),
        clock_.Now());
    server_ = std::make_unique<HttpServer>(server_options);
    endpoint_.Register(*server_);
    server_->Start();
    ticker_.Start();
  }

  static routing::PoolState::Options DefaultOptions() {
    routing::PoolState::Options options;
    options.models = {"llama", "qwen"};
    return options;
  }

  // Adds the pool as the controller does: its state to the directory, and the state with its
  // HTTP settings to the endpoint's table.
  std::shared_ptr<routing::PoolState> Configure(const std::string& key,
                                                const routing::PoolState::Options& options,
                                                const PoolHttpSettings& http = {}) {
    auto state = directory_.Configure(key, options, clock_.Now());
    pools_.Set(key, state, http);
    return state;
  }

  // Stops the server and takes the pool out, for a Start() with other settings.
  void Restart() {
    server_->Stop();
    server_.reset();
    ticker_.Stop();
    pools_.Remove("prod/chat");
    directory_.Remove("prod/chat");
  }

  std::optional<RawResponse> Fetch(const std::string& request) const {
    RawClient client(server_->port());
    if (!client.Send(request)) return std::nullopt;
    return client.ReadResponse();
  }

  // Every worker of the pool reports `free` blocks.
  void ObserveAll(std::int64_t free) {
    for (const auto& w : pool_->snapshot()->workers()) {
      pool_->ObserveLoad(w.key, Blocks(free), clock_.Now());
    }
  }

  // Waits (bounded) until `n` picks wait in the pool's queue.
  bool AwaitWaiting(std::size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pool_->Waiting() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  std::string Metrics() const {
    std::string text;
    for (const auto& family : metrics_.Collect(&directory_)) {
      for (const auto& m : family.metric) {
        text += family.name + "{";
        for (const auto& l : m.label) text += l.name + "=" + l.value + ",";
        text += "} " +
                std::to_string(family.type == prometheus::MetricType::Histogram
                                   ? static_cast<double>(m.histogram.sample_count)
                                   : m.counter.value + m.gauge.value) +
                "\n";
      }
    }
    return text;
  }

  const Clock& clock_ = RealClock();
  routing::SessionBudget budget_{100'000};
  routing::PrefixBudget prefix_budget_;
  routing::PoolDirectory directory_{budget_, prefix_budget_};
  PickPools pools_;
  std::shared_ptr<routing::PoolState> pool_;
  PickMetrics metrics_;
  PickEndpoint endpoint_{pools_, metrics_, clock_};
  PoolTicker ticker_{directory_, clock_};
  std::unique_ptr<HttpServer> server_;  // last: stopped first
};

TEST_F(PickEndpointTest, JsonPickAnswersTheWorkerWithItsReasonAndGeneration) {
  const auto response = Fetch(Post(R"({"pool":"prod/chat","model":"llama"})"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-type"), "application/json");
  EXPECT_THAT(response->body, ::testing::MatchesRegex(
                                  R"(\{"endpoint":"10\.0\.0\.[12]:8000","pod":"prod/vllm-[01]",)"
                                  R"("reason":"strategy","generation":4\})"));
}

TEST_F(PickEndpointTest, ASessionSticksAndIsToldApartFromANewBinding) {
  const auto first = Fetch(Post(R"({"pool":"prod/chat","session_id":"user-42"})"));
  ASSERT_EQ(first->status, 200);
  EXPECT_THAT(first->body, HasSubstr(R"("reason":"session")"));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Fetch(Post(R"({"pool":"prod/chat","session_id":"user-42"})"))->body, first->body);
  }
  // The gateway form with the pool's session header finds the same binding.
  const auto gateway = Fetch(Get(kGatewayPath, "x-session-id: user-42\r\n"));
  ASSERT_EQ(gateway->status, 200);
  EXPECT_THAT(first->body, HasSubstr(gateway->header("x-gateway-destination-endpoint")));
  EXPECT_EQ(gateway->header("x-eoc-reason"), "session");
  const std::string metrics = Metrics();
  EXPECT_THAT(metrics, HasSubstr("eoc_picks_total{code=200,pool=prod/chat,reason=session-new,} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("eoc_picks_total{code=200,pool=prod/chat,reason=session-hit,} 11"));
  EXPECT_THAT(metrics, HasSubstr("eoc_sessions{pool=prod/chat,} 1"));
}

TEST_F(PickEndpointTest, TheGatewayFormAnswersInHeadersWithNoBody) {
  for (const std::string_view method : {"GET", "POST"}) {
    const auto response = Fetch(std::string(method) +
                                " /v1/pools/prod/chat/pick HTTP/1.1\r\nHost: t\r\n"
                                "Content-Length: 0\r\nx-model: qwen\r\n\r\n");
    ASSERT_TRUE(response.has_value()) << method;
    EXPECT_EQ(response->status, 200);
    EXPECT_THAT(response->header("x-gateway-destination-endpoint"),
                ::testing::MatchesRegex(R"(10\.0\.0\.[12]:8000)"));
    EXPECT_THAT(response->header("x-eoc-pod"), ::testing::StartsWith("prod/vllm-"));
    EXPECT_EQ(response->header("x-eoc-reason"), "strategy");
    EXPECT_EQ(response->body, "");
  }
}

TEST_F(PickEndpointTest, BadInputIs400NamingTheFieldOrHeader) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Post("{\"pool\":"), "body: not valid JSON"},
      {Post("[1]"), "body: expected a JSON object"},
      {Post(R"({"model":"llama"})"), "pool: required"},
      {Post(R"({"pool":7})"), "pool: must be a string"},
      {Post(R"({"pool":"chat"})"), R"(pool: must be \"namespace/name\", not \"chat\")"},
      {Post(R"({"pool":"prod/chat","prompt_tokens":"9"})"), "prompt_tokens: must be a whole"},
      {Post(R"({"pool":"prod/chat","wait_ms":-1})"), "wait_ms: must be a whole number"},
      {Post(R"({"pool":"prod/chat","prefix_hashes":["xyz"]})"), "prefix_hashes[0]"},
      {Get(kGatewayPath, "x-eoc-prompt-tokens: many\r\n"),
       "header x-eoc-prompt-tokens: must be a whole number from 0 to 1000000000"},
      {Get(kGatewayPath, "x-eoc-wait-ms: 1.5\r\n"), "header x-eoc-wait-ms: must be a whole"},
      {Get(kGatewayPath, "x-eoc-prefix-hashes: 00000000000000aa, nope\r\n"),
       R"(header x-eoc-prefix-hashes: item 1 must be 16 hex digits, not \"nope\")"},
      {Get(kGatewayPath, "x-eoc-auth-mode: yes\r\n"), "header x-eoc-auth-mode: must be 1 or 0"},
      {Get(kGatewayPath, "x-session-id: " + std::string(300, 's') + "\r\n"),
       "header x-session-id: at most 256 bytes"},
      {Get(kGatewayPath, "x-model: " + std::string(300, 'm') + "\r\n"),
       "header x-model: at most 253 bytes"},
  };
  for (const auto& [request, message] : cases) {
    const auto response = Fetch(request);
    ASSERT_TRUE(response.has_value()) << request;
    EXPECT_EQ(response->status, 400) << request;
    EXPECT_EQ(response->header("content-type"), "application/json") << request;
    EXPECT_THAT(response->body, HasSubstr(R"({"code":400,"message":")")) << request;
    EXPECT_THAT(response->body, HasSubstr(message)) << request;
  }
  EXPECT_THAT(Metrics(), HasSubstr("eoc_picks_total{code=400,pool=,reason=bad-request,} 14"));
}

TEST_F(PickEndpointTest, AnUnknownPoolOrModelIs404) {
  auto response = Fetch(Post(R"({"pool":"prod/other"})"));
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->body,
            R"({"code":404,"message":"pool prod/other: not found on this replica"})");
  EXPECT_EQ(Fetch(Get("/v1/pools/prod/other/pick"))->status, 404);
  response = Fetch(Post(R"({"pool":"prod/chat","model":"mistral"})"));
  EXPECT_EQ(response->status, 404);
  EXPECT_THAT(response->body,
              HasSubstr(R"(model \"mistral\": pool prod/chat does not list it in spec.models)"));
}

TEST_F(PickEndpointTest, ARequestLargerThanTheLargestWorkerIs400NamingBothNumbers) {
  ObserveAll(100);  // 100 blocks of 16 tokens: 1,600 tokens at most
  const auto response =
      Fetch(Post(R"({"pool":"prod/chat","prompt_tokens":3000,"expected_tokens":200})"));
  EXPECT_EQ(response->status, 400);
  EXPECT_THAT(response->body,
              HasSubstr("the request needs 200 KV blocks, more than the largest worker of pool "
                        "prod/chat holds in all (100)"));
  EXPECT_EQ(pool_->Waiting(), 0U) << "answered at once, never queued";
}

TEST_F(PickEndpointTest, ARequestOverThePoolsMaxRequestTokensIs400NamingTheBound) {
  Restart();
  routing::PoolState::Options options = DefaultOptions();
  options.max_request_tokens = 1000;
  Start(options);
  const auto response =
      Fetch(Post(R"({"pool":"prod/chat","prompt_tokens":900,"expected_tokens":200})"));
  EXPECT_EQ(response->status, 400);
  EXPECT_THAT(response->body,
              HasSubstr("the request asks for 1100 tokens (prompt plus expected), more than pool "
                        "prod/chat allows (routing.admission.maxRequestTokens: 1000)"));
}

TEST_F(PickEndpointTest, APickWithNoRoomWaitsWithoutAThreadAndIsAnsweredWhenRoomAppears) {
  Restart();
  // One I/O thread: if a waiting pick held it, nothing else would be served.
  Start(DefaultOptions(), {W("vllm-0")}, {.threads = 1});
  ObserveAll(0);
  RawClient waiting(server_->port());
  ASSERT_TRUE(waiting.Send(Post(R"({"pool":"prod/chat","prompt_tokens":100})")));
  ASSERT_TRUE(AwaitWaiting(1));
  const auto other = Fetch(Get("/v1/pools/prod/other/pick"));
  ASSERT_TRUE(other.has_value()) << "the only I/O thread serves others meanwhile";
  EXPECT_EQ(other->status, 404);

  ObserveAll(50);  // a scrape shows room: the waiting pick is placed
  const auto response = waiting.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->body, HasSubstr(R"("reason":"queued")"));
  const std::string metrics = Metrics();
  EXPECT_THAT(metrics, HasSubstr("eoc_picks_total{code=200,pool=prod/chat,reason=queued,} 1"));
  EXPECT_THAT(metrics, HasSubstr("eoc_pick_queue_wait_seconds{pool=prod/chat,} 1"));
}

TEST_F(PickEndpointTest, AWaitPastItsDeadlineIs504AndAFullQueueIs429) {
  Restart();
  routing::PoolState::Options options = DefaultOptions();
  options.max_queue = 1;
  Start(options, {W("vllm-0")});
  ObserveAll(0);
  RawClient waiting(server_->port());
  ASSERT_TRUE(waiting.Send(Post(R"({"pool":"prod/chat","wait_ms":300})")));
  ASSERT_TRUE(AwaitWaiting(1));
  const auto full = Fetch(Get(kGatewayPath));
  EXPECT_EQ(full->status, 429);
  EXPECT_EQ(full->header("retry-after"), "1");
  EXPECT_THAT(full->body, HasSubstr("its queue is full"));
  const auto late = waiting.ReadResponse();
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->status, 504);
  EXPECT_THAT(late->body, HasSubstr("no worker had room within the wait of 300 ms"));
}

// With access control, every call is checked in the pool's namespace before the pool is looked
// up: a caller allowed in prod gets 403 for every pool and session of another namespace, whether
// it exists or not, with the same message; in prod it is served, and told of a missing pool.
TEST_F(PickEndpointTest, ACallerAllowedInOneNamespaceLearnsNothingOfAnother) {
  const auto other = Configure("team-b/chat", DefaultOptions());
  other->SetSnapshot(routing::PoolSnapshot::Build({W("vllm-2")}, 4, routing::Strategy::kRoundRobin),
                     clock_.Now());
  testing::FakeReviewer reviewer;
  reviewer.AddToken("gw-token", "gw");
  for (const char* verb : {"create", "get", "delete"})
    reviewer.Allow(std::string("gw|") + verb + "|prod");
  AccessControl access(reviewer, clock_, {});
  access.Start();
  const PickEndpoint guarded(pools_, metrics_, clock_, {.access = &access});
  HttpServer server({.threads = 2});  // after `guarded`: stopped first
  guarded.Register(server);
  server.Start();
  const auto fetch = [&](const std::string& request) {
    RawClient client(server.port());
    EXPECT_TRUE(client.Send(request));
    return client.ReadResponse().value_or(RawResponse{});
  };
  const std::string token = "Authorization: Bearer gw-token\r\n";
  const auto post = [&](std::string_view pool) {
    const std::string body = R"({"pool":")" + std::string(pool) + R"("})";
    return "POST /v1/pick HTTP/1.1\r\nHost: t\r\n" + token +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };

  // Allowed in prod: served, and a missing pool there is a 404.
  EXPECT_EQ(fetch(post("prod/chat")).status, 200);
  EXPECT_EQ(fetch(Get(kGatewayPath, token)).status, 200);
  EXPECT_EQ(fetch(post("prod/missing")).status, 404);
  EXPECT_EQ(fetch(Get("/v1/pools/prod/chat/sessions/s1", token)).status, 404);
  // Another namespace: 403 alike for what exists and what does not, the message naming only
  // the caller and the namespace.
  const auto exists = fetch(post("team-b/chat"));
  const auto missing = fetch(post("team-b/missing"));
  EXPECT_EQ(exists.status, 403);
  EXPECT_EQ(missing.status, 403);
  EXPECT_EQ(exists.body, missing.body);
  EXPECT_THAT(exists.body, HasSubstr(R"(user \"gw\" may not create inferencepools/pick)"));
  EXPECT_EQ(fetch(Get("/v1/pools/team-b/chat/pick", token)).status, 403);
  EXPECT_EQ(fetch(Get("/v1/pools/team-b/chat/sessions/s1", token)).status, 403);
  EXPECT_EQ(
      fetch("DELETE /v1/pools/team-b/chat/sessions/s1 HTTP/1.1\r\nHost: t\r\n" + token + "\r\n")
          .status,
      403);
  // No credentials: 401, or in auth_request form a 403 that carries it.
  const auto anonymous = fetch(Get(kGatewayPath));
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(anonymous.header("www-authenticate"), HasSubstr("Bearer"));
  const auto auth_form = fetch(Get(kGatewayPath, "x-eoc-auth-mode: 1\r\n"));
  EXPECT_EQ(auth_form.status, 403);
  EXPECT_EQ(auth_form.header("x-eoc-status"), "401");
  const std::string metrics = Metrics();
  EXPECT_THAT(metrics, HasSubstr("eoc_picks_total{code=403,pool=,reason=forbidden,} 3"));
  EXPECT_THAT(metrics, HasSubstr("eoc_picks_total{code=401,pool=,reason=unauthenticated,} 1"));
  EXPECT_THAT(metrics, HasSubstr("eoc_picks_total{code=403,pool=,reason=unauthenticated,} 1"));
  EXPECT_EQ(other->Waiting(), 0U);
  server.Stop();
  access.Stop();
}

// A caller's picks waiting in one pool stop at its cap, and each end user's it names (the
// gateway's x-eoc-fairness-key) at theirs; a place comes back when a waiting pick's client leaves.
TEST_F(PickEndpointTest, ACallerAndEachEndUserItNamesWaitWithinTheirCaps) {
  testing::FakeReviewer reviewer;
  reviewer.AddToken("gw-token", "gw");
  reviewer.Allow("gw|create|prod");
  AccessControl access(reviewer, clock_, {});
  access.Start();
  CallerCaps caps({.max_waiting_per_caller = 2, .max_waiting_per_user = 1});
  const PickEndpoint capped(pools_, metrics_, clock_, {.access = &access, .caps = &caps});
  HttpServer server({.threads = 2});  // after `capped`: stopped first
  capped.Register(server);
  server.Start();
  ObserveAll(0);  // no room: every pick waits
  const auto send = [&](std::string_view user) {
    auto client = std::make_unique<RawClient>(server.port());
    const std::string body = R"({"pool":"prod/chat"})";
    EXPECT_TRUE(
        client->Send("POST /v1/pick HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer gw-token\r\n"
                     "x-eoc-fairness-key: " +
                     std::string(user) + "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body));
    return client;
  };
  const auto refused = [&](std::string_view user, std::string_view message) {
    auto client = send(user);
    const auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value()) << user;
    EXPECT_EQ(response->status, 429) << user;
    EXPECT_EQ(response->header("retry-after"), "1");
    EXPECT_THAT(response->body, HasSubstr(message));
  };

  auto u1 = send("u1");
  ASSERT_TRUE(AwaitWaiting(1));
  refused("u1", R"(end user \"u1\" of caller \"gw\" has 1 picks waiting in pool prod/chat)");
  auto u2 = send("u2");
  ASSERT_TRUE(AwaitWaiting(2));
  refused("u3",
          R"(caller \"gw\" has 2 picks waiting in pool prod/chat (--pick-max-waiting-per-caller))");
  EXPECT_EQ(pool_->Waiting(), 2U);
  EXPECT_THAT(Metrics(),
              HasSubstr("eoc_picks_total{code=429,pool=prod/chat,reason=caller-full,} 2"));

  u1.reset();  // its client leaves: its places come back
  ASSERT_TRUE(AwaitWaiting(1));
  auto u3 = send("u3");
  EXPECT_TRUE(AwaitWaiting(2));
  // A key past the bound is a bad request.
  auto long_key = send(std::string(CallerCaps::kMaxUserBytes + 1, 'k'));
  const auto bad = long_key->ReadResponse();
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(bad->body, HasSubstr("header x-eoc-fairness-key: at most 256 bytes"));
  server.Stop();
  access.Stop();
}

// A caller whose picks reserve more than its share of the pool's KV cache (and never send the
// requests) may fill the pool while no one else picks, but once another caller's pick waits it is
// refused, for as long as its reservations would have held the pool, and the waiting pick is not
// overtaken: one caller cannot keep the pool looking full for the others (and their waiting
// picks, the autoscaler's demand).
TEST_F(PickEndpointTest, ACallerOverItsReservedShareIsRefusedWhileAnotherCallersPicksWait) {
  Restart();
  routing::PoolState::Options options = DefaultOptions();
  options.hold = std::chrono::seconds(60);  // the reservation window: one scrape interval
  Start(options);
  testing::FakeReviewer reviewer;
  reviewer.AddToken("batch-token", "batch");
  reviewer.AddToken("gw-token", "gw");
  reviewer.Allow("batch|create|prod");
  reviewer.Allow("gw|create|prod");
  AccessControl access(reviewer, clock_, {});
  access.Start();
  CallerCaps caps({.max_reserved_share = 0.5, .max_reserved_share_per_user = 0});
  const PickEndpoint capped(pools_, metrics_, clock_, {.access = &access, .caps = &caps});
  HttpServer server({.threads = 2});  // after `capped`: stopped first
  capped.Register(server);
  server.Start();
  ObserveAll(100);  // 2 workers of 100 blocks of 16 tokens: 3,200 tokens, 1,600 a caller's share
  const auto send = [&](std::string_view token) {
    auto client = std::make_unique<RawClient>(server.port());
    // 320 tokens: 20 blocks, so 10 picks fill the pool.
    const std::string body = R"({"pool":"prod/chat","prompt_tokens":304,"expected_tokens":16})";
    EXPECT_TRUE(client->Send(
        "POST /v1/pick HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + std::string(token) +
        "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    return client;
  };
  for (int i = 0; i < 10; ++i) {
    const auto response = send("batch-token")->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200) << "pick " << i << ": alone, a caller may use the whole pool";
  }
  auto gateway = send("gw-token");
  ASSERT_TRUE(AwaitWaiting(1));
  const auto refused = send("batch-token")->ReadResponse();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 429);
  EXPECT_THAT(refused->body, HasSubstr(R"(caller \"batch\" has reserved its share (50%) of pool )"
                                       R"(prod/chat's KV cache while other callers' picks wait )"
                                       R"((--pick-max-reserved-share))"));
  // 3,200 tokens at 1,600 per 60 s: paid off 120 s on, under the share 60 s on.
  EXPECT_EQ(refused->header("retry-after"), "60");
  auto gateway_again = send("gw-token");
  EXPECT_TRUE(AwaitWaiting(2)) << "the waiting caller is under its share: it waits";
  ObserveAll(100);  // the next scrape: batch's picks never arrived
  for (auto* client : {gateway.get(), gateway_again.get()}) {
    const auto placed = client->ReadResponse();
    ASSERT_TRUE(placed.has_value());
    EXPECT_EQ(placed->status, 200);
  }
  EXPECT_THAT(Metrics(),
              HasSubstr("eoc_picks_total{code=429,pool=prod/chat,reason=caller-full,} 1"));
  server.Stop();
  access.Stop();
}

// Picks waiting in all pools together stop at the endpoint's max_waiting (--pick-max-waiting):
// past it a pick that finds no room is answered 429 at once, though its pool's own queue has room;
// a place comes back when a waiting pick is answered or its client leaves.
TEST_F(PickEndpointTest, PicksWaitingInAllPoolsTogetherStopAtMaxWaiting) {
  const auto code =
      Configure("prod/code", DefaultOptions(), {.queue_timeout = std::chrono::seconds(20)});
  code->SetSnapshot(routing::PoolSnapshot::Build({W("vllm-2")}, 4, routing::Strategy::kRoundRobin),
                    clock_.Now());
  code->ObserveLoad(W("vllm-2").key, Blocks(0), clock_.Now());
  ObserveAll(0);  // no room in either pool
  const PickEndpoint capped(pools_, metrics_, clock_, {.max_waiting = 3});
  HttpServer server({.threads = 2});  // after `capped`: stopped first
  capped.Register(server);
  server.Start();
  const auto send = [&](std::string_view pool) {
    auto client = std::make_unique<RawClient>(server.port());
    EXPECT_TRUE(client->Send(Post(R"({"pool":")" + std::string(pool) + R"("})")));
    return client;
  };
  const auto waiting = [&](std::size_t chat, std::size_t in_code) {
    const auto deadline = std::chrono::steady_clock::now() + RawClient::kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pool_->Waiting() == chat && code->Waiting() == in_code) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  };
  const auto refused = [&](std::string_view pool) {
    auto client = send(pool);
    const auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value()) << "a pick past the cap waits";
    EXPECT_EQ(response->status, 429);
    EXPECT_EQ(response->header("retry-after"), "1");
    EXPECT_THAT(response->body, HasSubstr("3 picks wait on this replica (--pick-max-waiting)"));
  };

  auto chat_a = send("prod/chat");
  auto chat_b = send("prod/chat");
  auto code_a = send("prod/code");
  ASSERT_TRUE(waiting(2, 1));
  refused("prod/code");  // its own queue holds 1 of 1000
  EXPECT_EQ(code->Waiting(), 1U);
  EXPECT_THAT(Metrics(),
              HasSubstr("eoc_picks_total{code=429,pool=prod/code,reason=waiting-full,} 1"));

  code_a.reset();  // its client leaves: its place comes back
  ASSERT_TRUE(waiting(2, 0));
  auto code_b = send("prod/code");
  ASSERT_TRUE(waiting(2, 1)) << "a place given back by a client that left";

  ObserveAll(50);  // room for both picks of prod/chat: answered, their places come back
  for (auto* client : {chat_a.get(), chat_b.get()}) {
    const auto response = client->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
  }
  auto code_c = send("prod/code");
  auto code_d = send("prod/code");
  ASSERT_TRUE(waiting(0, 3)) << "places given back by answered picks";
  refused("prod/chat");
  EXPECT_EQ(pool_->Waiting(), 0U);
}

TEST_F(PickEndpointTest, AuthModeTurnsEveryFailureInto403CarryingTheRealStatus) {
  Restart();
  routing::PoolState::Options options = DefaultOptions();
  options.max_queue = 0;  // no waiting: an empty pool answers 503 at once
  Start(options, {});
  const auto response = Fetch(Get(kGatewayPath, "x-eoc-auth-mode: 1\r\n"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 403);
  EXPECT_EQ(response->header("x-eoc-status"), "503");
  EXPECT_EQ(response->header("retry-after"), "5");
  EXPECT_THAT(response->body, HasSubstr(R"({"code":503,)"));
  const auto unknown = Fetch(Get("/v1/pools/prod/nope/pick", "x-eoc-auth-mode: 1\r\n"));
  EXPECT_EQ(unknown->status, 403);
  EXPECT_EQ(unknown->header("x-eoc-status"), "404");
  const auto bad = Fetch(Get(kGatewayPath, "x-eoc-auth-mode: 1\r\nx-eoc-wait-ms: x\r\n"));
  EXPECT_EQ(bad->status, 403);
  EXPECT_EQ(bad->header("x-eoc-status"), "400");
  // Without auth mode, the real codes.
  EXPECT_EQ(Fetch(Get(kGatewayPath))->status, 503);
}

TEST_F(PickEndpointTest, ANotYetPublishedPoolIs503) {
  Configure("prod/new", DefaultOptions());
  const auto response = Fetch(Post(R"({"pool":"prod/new"})"));
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_THAT(response->body, HasSubstr("pool prod/new: its routing table is not published yet"));
}

TEST_F(PickEndpointTest, SessionsCanBeReadAndForgotten) {
  const auto pick = Fetch(Post(R"({"pool":"prod/chat","session_id":"user 7"})"));
  ASSERT_EQ(pick->status, 200);
  auto session = Fetch(Get("/v1/pools/prod/chat/sessions/user%207"));
  ASSERT_EQ(session->status, 200);
  EXPECT_THAT(session->body, HasSubstr(R"({"session":"user 7","pod":"prod/vllm-)"));
  EXPECT_THAT(session->body, HasSubstr(R"("expires_in_seconds":)"));
  EXPECT_EQ(
      Fetch("DELETE /v1/pools/prod/chat/sessions/user%207 HTTP/1.1\r\nHost: t\r\n\r\n")->status,
      204);
  session = Fetch(Get("/v1/pools/prod/chat/sessions/user%207"));
  EXPECT_EQ(session->status, 404);
  EXPECT_THAT(session->body,
              HasSubstr(R"(session \"user 7\": not bound to a worker of pool prod/chat)"));
  EXPECT_EQ(
      Fetch("DELETE /v1/pools/prod/chat/sessions/user%207 HTTP/1.1\r\nHost: t\r\n\r\n")->status,
      404);
  EXPECT_EQ(Fetch(Get("/v1/pools/prod/chat/sessions/bad%zz"))->status, 400);
  // Only hex digits: from_chars would read "-1" as a number, and decode it to 0xFF.
  for (const char* id : {"%-1", "%+1", "%1-", "a%-f"}) {
    const auto response = Fetch(Get("/v1/pools/prod/chat/sessions/" + std::string(id)));
    EXPECT_EQ(response->status, 400) << id << ": " << response->body;
  }
  EXPECT_EQ(Fetch(Get("/v1/pools/prod/other/sessions/x"))->status, 404);
}

TEST_F(PickEndpointTest, APickThatFindsNoRoomIsDecidedOnceAndQueuedByTheSameCall) {
  // Round robin takes one turn per decision (the pool's strategy here).
  const auto first = Fetch(Post(R"({"pool":"prod/chat"})"));  // turn 0
  ASSERT_EQ(first->status, 200);
  EXPECT_THAT(first->body, HasSubstr(R"("pod":"prod/vllm-0")"));
  ObserveAll(0);
  RawClient waiting(server_->port());
  ASSERT_TRUE(waiting.Send(Post(R"({"pool":"prod/chat"})")));  // turn 1, queued
  ASSERT_TRUE(AwaitWaiting(1));
  const auto& workers = pool_->snapshot()->workers();
  pool_->ObserveLoad(workers[0].key, Blocks(100), clock_.Now());  // turn 2: released to vllm-0
  const auto released = waiting.ReadResponse();
  ASSERT_TRUE(released.has_value());
  EXPECT_THAT(released->body, HasSubstr(R"("reason":"queued")"));
  pool_->ObserveLoad(workers[1].key, Blocks(100), clock_.Now());
  // Turn 3 is vllm-1's; had the waiting pick been decided twice (a try, then the pick that
  // queued it), this would be turn 4, vllm-0's.
  const auto next = Fetch(Post(R"({"pool":"prod/chat"})"));
  ASSERT_EQ(next->status, 200);
  EXPECT_THAT(next->body, HasSubstr(R"("pod":"prod/vllm-1")"));
}

TEST_F(PickEndpointTest, ThePoolsSessionHeaderAndQueueTimeoutAreTheServersTables) {
  pools_.Set("prod/chat", pool_,
             {.session_header = "x-conversation", .queue_timeout = std::chrono::milliseconds(200)});
  const auto first = Fetch(Get(kGatewayPath, "x-conversation: c-1\r\n"));
  ASSERT_EQ(first->status, 200);
  EXPECT_EQ(first->header("x-eoc-reason"), "session");
  const auto again = Fetch(Get(kGatewayPath, "x-conversation: c-1\r\n"));
  EXPECT_EQ(again->header("x-gateway-destination-endpoint"),
            first->header("x-gateway-destination-endpoint"));
  EXPECT_EQ(pool_->sessions()->Size(), 1U);
  EXPECT_EQ(Fetch(Get(kGatewayPath, "x-session-id: s-1\r\n"))->header("x-eoc-reason"), "strategy")
      << "the default header is not the pool's";
  EXPECT_THAT(Fetch(Get(kGatewayPath, "x-conversation: " + std::string(300, 'c') + "\r\n"))->body,
              HasSubstr("header x-conversation: at most 256 bytes"));

  ObserveAll(0);
  const auto late = Fetch(Post(R"({"pool":"prod/chat"})"));
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->status, 504);
  EXPECT_THAT(late->body, HasSubstr("no worker had room within the wait of 200 ms"));
}

TEST_F(PickEndpointTest, PipelinedPicksAreAnsweredInOrder) {
  RawClient client(server_->port());
  std::string batch;
  for (int i = 0; i < 20; ++i) {
    batch += i % 2 == 0
                 ? Post(R"({"pool":"prod/chat","session_id":"s)" + std::to_string(i) + R"("})")
                 : Get(kGatewayPath, "x-session-id: s" + std::to_string(i) + "\r\n");
  }
  ASSERT_TRUE(client.Send(batch));
  for (int i = 0; i < 20; ++i) {
    const auto response = client.ReadResponse();
    ASSERT_TRUE(response.has_value()) << i;
    EXPECT_EQ(response->status, 200) << i;
    EXPECT_EQ(response->body.empty(), i % 2 == 1) << "JSON, then headers, in turn: " << i;
  }
  EXPECT_EQ(pool_->sessions()->Size(), 20U);
}

TEST_F(PickEndpointTest, StoppingAnswersWaitingPicks503AndTakesThemOutOfTheQueue) {
  ObserveAll(0);
  RawClient json(server_->port());
  RawClient gateway(server_->port());
  ASSERT_TRUE(json.Send(Post(R"({"pool":"prod/chat"})")));
  ASSERT_TRUE(gateway.Send(Get(kGatewayPath, "x-eoc-auth-mode: 1\r\n")));
  ASSERT_TRUE(AwaitWaiting(2));
  server_->Stop();
  const auto a = json.ReadResponse();
  const auto b = gateway.ReadResponse();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->status, 503);
  EXPECT_EQ(b->status, 503) << "the server's own answer, in every form";
  EXPECT_EQ(pool_->Waiting(), 0U);
  EXPECT_THAT(Metrics(), HasSubstr("reason=shutting-down"));
}

TEST_F(PickEndpointTest, AClientThatLeavesTakesItsPickOutOfTheQueue) {
  ObserveAll(0);
  {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send(Post(R"({"pool":"prod/chat"})")));
    ASSERT_TRUE(AwaitWaiting(1));
  }
  EXPECT_TRUE(AwaitWaiting(0));
}

TEST_F(PickEndpointTest, PromptsAreHashedAsDesignSaysSoPrefixesFollow) {
  const std::string prompt(std::size_t{64} * 8, 'p');  // 8 blocks of 16 tokens
  const auto first =
      Fetch(Post(R"({"pool":"prod/chat","model":"llama","prompt":")" + prompt + R"("})"));
  ASSERT_EQ(first->status, 200);
  // The same prefix as hashes, through the header form: the worker that had the prompt.
  std::string hashes;
  for (const auto h : routing::PrefixHashes("llama", prompt, 16)) {
    hashes += (hashes.empty() ? "" : ",") + routing::FormatBlockHash(h);
  }
  const auto second =
      Fetch(Get(kGatewayPath, "x-model: llama\r\nx-eoc-prefix-hashes: " + hashes + "\r\n"));
  ASSERT_EQ(second->status, 200);
  EXPECT_EQ(second->header("x-eoc-reason"), "prefix");
  EXPECT_THAT(first->body, HasSubstr(second->header("x-gateway-destination-endpoint")));
}

}  // namespace
}  // namespace eoc::server
