#include "server/access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "common/clock.h"
#include "eventually.h"
#include "fake_reviewer.h"
#include "server/access_gate.h"

namespace eoc::server {
namespace {

using ::testing::HasSubstr;
using Verdict = AccessControl::Verdict;
using std::chrono::seconds;
using testing::FakeReviewer;

class AccessControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reviewer_.AddToken("tok-a", "system:serviceaccount:team-a:gw", {"system:authenticated"});
    reviewer_.Allow("system:serviceaccount:team-a:gw|create|team-a");
  }

  void Start(AccessControl::Options options = {}) {
    access_ = std::make_unique<AccessControl>(reviewer_, clock_, std::move(options));
    access_->Start();
  }

  // A request with these headers (and this client certificate).
  Request Make(const std::vector<Header>& headers, const PeerCertificate* cert = nullptr) {
    headers_ = headers;
    return {"POST", "/v1/pick", headers_, "", nullptr, cert};
  }

  // Check, counting the runs of the waiters it makes in known_.
  AccessControl::Answer Check(const Request& request, std::string_view verb, std::string_view ns) {
    return access_->Check(request, {.verb = verb, .ns = ns},
                          [this] { return AccessControl::Waiter([this] { ++known_; }); });
  }

  // Checks until the answer is no longer pending, waiting for each review (at most `rounds`).
  AccessControl::Answer Settle(const Request& request, std::string_view verb, std::string_view ns,
                               int rounds = 3) {
    for (int i = 0; i < rounds; ++i) {
      const int before = known_;
      auto answer = Check(request, verb, ns);
      if (answer.verdict != Verdict::kPending) return answer;
      EXPECT_TRUE(testing::Eventually([&] { return known_ > before; }));
    }
    return Check(request, verb, ns);
  }

  FakeReviewer reviewer_;
  ManualClock clock_;
  std::vector<Header> headers_;
  std::atomic<int> known_{0};
  std::unique_ptr<AccessControl> access_;  // last: stopped before the reviewer goes
};

const Header kTokenA{"Authorization", "Bearer tok-a"};

TEST_F(AccessControlTest, ACallerWithoutCredentialsIsUnauthenticated) {
  Start();
  const auto none = Check(Make({}), "create", "team-a");
  EXPECT_EQ(none.verdict, Verdict::kUnauthenticated);
  EXPECT_THAT(none.message, HasSubstr("no credentials"));
  const auto basic = Check(Make({{"Authorization", "Basic dXNlcjpwYXNz"}}), "create", "team-a");
  EXPECT_EQ(basic.verdict, Verdict::kUnauthenticated);
  EXPECT_THAT(basic.message, HasSubstr("bearer token"));
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer "}}), "create", "team-a").verdict,
            Verdict::kUnauthenticated);
  EXPECT_TRUE(reviewer_.Asked().empty()) << "no review is asked for what carries no credential";
}

TEST_F(AccessControlTest, ATokenIsReviewedThenItsPermissionThenBothServeFromTheCache) {
  Start();
  const Request request = Make({kTokenA});
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kPending);
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  EXPECT_EQ(reviewer_.Asked(),
            (std::vector<std::string>{"token:tok-a",
                                      "access:system:serviceaccount:team-a:gw|create|team-a,"
                                      "system:authenticated"}));
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(Check(request, "create", "team-a").verdict, Verdict::kAllowed);
  }
  EXPECT_EQ(access_->reviews(), 2U) << "known answers ask nothing more";
}

TEST_F(AccessControlTest, ConcurrentAsksForOneReviewShareIt) {
  Start();
  reviewer_.Hold(true);
  const Request request = Make({kTokenA});
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kPending);
  ASSERT_TRUE(testing::Eventually([&] { return reviewer_.Asked().size() == 1; }));
  reviewer_.Hold(false);
  ASSERT_TRUE(testing::Eventually([&] { return known_ == 5; })) << "every waiter is told";
  EXPECT_EQ(access_->reviews(), 1U);
}

TEST_F(AccessControlTest, AnotherNamespaceIsForbiddenAndTheAnswerNamesNothingOfIt) {
  Start();
  const Request request = Make({kTokenA});
  const auto answer = Settle(request, "create", "team-b");
  EXPECT_EQ(answer.verdict, Verdict::kForbidden);
  EXPECT_EQ(answer.message,
            "user \"system:serviceaccount:team-a:gw\" may not create inferencepools/pick "
            "(eoc.dev) in namespace \"team-b\"");
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  EXPECT_EQ(Settle(request, "delete", "team-a").verdict, Verdict::kForbidden)
      << "each verb is its own permission";
}

TEST_F(AccessControlTest, AnInvalidTokenIsUnauthenticatedAndRememberedForItsTtl) {
  Start();
  const Request request = Make({{"Authorization", "Bearer forged"}});
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(access_->reviews(), 1U);
}

TEST_F(AccessControlTest, AClientCertificateNamesItsCallerUnderThePrefixWithoutAReview) {
  Start({.cert_prefix = "eoc:"});
  reviewer_.Allow("eoc:gateway|create|team-a");
  const PeerCertificate cert{.common_name = "gateway", .organizations = {"gateways"}};
  const Request request = Make({}, &cert);
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  EXPECT_EQ(reviewer_.Asked(),
            (std::vector<std::string>{"access:eoc:gateway|create|team-a,eoc:gateways"}));
}

TEST_F(AccessControlTest, NoClientCertificateMayClaimASystemName) {
  Start({.cert_prefix = ""});
  reviewer_.Allow("admin|create|team-a");
  for (const PeerCertificate& cert :
       {PeerCertificate{.common_name = "admin", .organizations = {"system:masters"}},
        PeerCertificate{.common_name = "system:kube-controller-manager"},
        PeerCertificate{.common_name = ""}}) {
    const auto answer = Check(Make({}, &cert), "create", "team-a");
    EXPECT_EQ(answer.verdict, Verdict::kUnauthenticated) << cert.common_name;
  }
  EXPECT_TRUE(reviewer_.Asked().empty());
}

TEST_F(AccessControlTest, AnAnswerIsRefreshedBeforeItExpiresWhileItGoesOnServing) {
  Start({.allowed_ttl = seconds(100)});
  const Request request = Make({kTokenA});
  ASSERT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  const auto before = access_->reviews();
  clock_.Advance(seconds(80));  // past three quarters of the TTL
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kAllowed) << "no wait";
  ASSERT_TRUE(testing::Eventually([&] { return access_->reviews() == before + 1; }));
  clock_.Advance(seconds(50));  // past the first answer's TTL, not the refreshed one's
  reviewer_.SetUnavailable(true);
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kAllowed);
}

TEST_F(AccessControlTest, ARevokedPermissionIsRefusedOnceTheRefreshSeesIt) {
  Start({.allowed_ttl = seconds(100)});
  const Request request = Make({kTokenA});
  ASSERT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  reviewer_.Revoke("system:serviceaccount:team-a:gw|create|team-a");
  clock_.Advance(seconds(80));
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kAllowed);
  ASSERT_TRUE(testing::Eventually(
      [&] { return Check(request, "create", "team-a").verdict == Verdict::kForbidden; }));
}

TEST_F(AccessControlTest, KnownAnswersServeThroughAnOutageForTheGraceThenNoLonger) {
  Start({.token_ttl = seconds(120), .allowed_ttl = seconds(300), .stale_grace = seconds(600)});
  const Request request = Make({kTokenA});
  ASSERT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
  reviewer_.SetUnavailable(true);
  // Past both TTLs, within the grace (10 minutes past the token's 2): still allowed, at once, every
  // time, while fresh answers are sought (once a minute here, as the caller comes once a minute).
  for (int minute = 1; minute <= 11; ++minute) {
    clock_.Advance(seconds(60));
    ASSERT_EQ(Check(request, "create", "team-a").verdict, Verdict::kAllowed) << minute;
    // The token's refresh is due from 90 s on, the permission's from 225 s.
    const auto due =
        static_cast<std::uint64_t>(2 + std::max(0, minute - 1) + std::max(0, minute - 3));
    ASSERT_TRUE(testing::Eventually([&] { return access_->reviews() == due; })) << minute;
  }
  // Past the token's TTL plus the grace: no longer.
  clock_.Advance(seconds(120));
  const auto answer = Settle(request, "create", "team-a");
  EXPECT_EQ(answer.verdict, Verdict::kUnavailable);
  EXPECT_THAT(answer.message, HasSubstr("try again"));
  // The API server back: the caller is reviewed anew and allowed.
  reviewer_.SetUnavailable(false);
  clock_.Advance(seconds(2));
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kAllowed);
}

TEST_F(AccessControlTest, ACallerNeverSeenIsUnavailableDuringAnOutageAndAskedAgainLater) {
  Start({.retry_after_unavailable = seconds(1)});
  reviewer_.SetUnavailable(true);
  const Request request = Make({kTokenA});
  EXPECT_EQ(Settle(request, "create", "team-a").verdict, Verdict::kUnavailable);
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kUnavailable)
      << "not asked again at once";
  EXPECT_EQ(access_->reviews(), 1U);
  clock_.Advance(seconds(2));
  EXPECT_EQ(Check(request, "create", "team-a").verdict, Verdict::kPending);
}

TEST_F(AccessControlTest, TheCachesAndTheQueueAreBounded) {
  Start({.max_tokens = 2, .max_reviews_queued = 2});
  for (const char* token : {"t1", "t2", "t3"}) reviewer_.AddToken(token, token);
  for (const char* token : {"t1", "t2", "t3"}) {
    const std::string value = std::string("Bearer ") + token;
    EXPECT_EQ(Settle(Make({{"Authorization", value}}), "get", "").verdict, Verdict::kForbidden);
  }
  // Each token's review, then its permission's.
  ASSERT_TRUE(testing::Eventually([&] { return access_->reviews() == 6; }));
  // t1 went first: it is reviewed again.
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer t1"}}), "get", "").verdict, Verdict::kPending);
  ASSERT_TRUE(testing::Eventually([&] { return access_->reviews() == 7; }));

  reviewer_.Hold(true);
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer q1"}}), "get", "").verdict, Verdict::kPending);
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer q2"}}), "get", "").verdict, Verdict::kPending);
  const auto full = Check(Make({{"Authorization", "Bearer q3"}}), "get", "");
  EXPECT_EQ(full.verdict, Verdict::kUnavailable) << "the queue holds two reviews";
  reviewer_.Hold(false);
}

TEST_F(AccessControlTest, StoppingTellsEveryWaiter) {
  Start({.threads = 1});
  reviewer_.Hold(true);
  EXPECT_EQ(Check(Make({kTokenA}), "create", "team-a").verdict, Verdict::kPending);
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer other"}}), "create", "team-a").verdict,
            Verdict::kPending);
  ASSERT_TRUE(testing::Eventually([&] { return reviewer_.Asked().size() == 1; }));
  std::thread stopper([this] { access_->Stop(); });
  reviewer_.Hold(false);
  stopper.join();
  EXPECT_EQ(known_, 2);
  EXPECT_EQ(Check(Make({{"Authorization", "Bearer new"}}), "create", "team-a").verdict,
            Verdict::kUnavailable);
}

TEST(AccessGateTest, RefusalsAnswerTheirStatusAndHeaders) {
  Response response;
  AnswerRefusal({Verdict::kUnauthenticated, "no credentials"}, response);
  EXPECT_EQ(response.status(), 401);
  EXPECT_THAT(std::string(response.header_lines()), HasSubstr("WWW-Authenticate: Bearer"));
  response.Reset();
  AnswerRefusal({Verdict::kForbidden, "no"}, response);
  EXPECT_EQ(response.status(), 403);
  response.Reset();
  AnswerRefusal({Verdict::kUnavailable, "later"}, response);
  EXPECT_EQ(response.status(), 503);
  EXPECT_THAT(std::string(response.header_lines()), HasSubstr("Retry-After: 1"));
}

}  // namespace
}  // namespace eoc::server
