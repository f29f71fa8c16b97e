#include "kube/status.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace eoc::kube {
namespace {

TEST(DecodeStatus, ReadsMetav1Status) {
  const Status s = DecodeStatus(
      409, R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":409,"reason":"Conflict",
        "message":"Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified"})");
  EXPECT_EQ(s.code, 409);
  EXPECT_EQ(s.reason, "Conflict");
  EXPECT_TRUE(s.IsConflict());
  EXPECT_FALSE(s.IsAlreadyExists());
  EXPECT_EQ(s.ToString(),
            "409 Conflict: Operation cannot be fulfilled on deployments.apps \"web\": the object "
            "has been modified");
}

TEST(DecodeStatus, StatusCodeWinsOverHttpCode) {
  // A watch delivers 410 Expired as an ERROR event inside a 200 answer.
  const Status s = DecodeStatus(
      200,
      R"({"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"})");
  EXPECT_TRUE(s.IsGone());
  EXPECT_EQ(s.reason, "Expired");
}

TEST(DecodeStatus, NonStatusBodyKeepsCodeAndText) {
  const Status s = DecodeStatus(502, "<html>bad gateway</html>\n");
  EXPECT_EQ(s.code, 502);
  EXPECT_EQ(s.reason, "Unknown");
  EXPECT_EQ(s.message, "<html>bad gateway</html>");

  const Status forbidden = DecodeStatus(403, "");
  EXPECT_EQ(forbidden.reason, "Forbidden");
  EXPECT_EQ(forbidden.ToString(), "403 Forbidden");
}

TEST(DecodeStatus, LongBodiesAreCut) {
  const Status s = DecodeStatus(500, std::string(10000, 'x'));
  EXPECT_EQ(s.message, std::string(512, 'x') + "...");
}

// A Status nested deeper than the API's JSON may be is not read as one: it is text, cut short.
TEST(DecodeStatus, AStatusNestedTooDeepIsReadAsText) {
  const std::string body = R"({"kind":"Status","code":410,"reason":"Expired","details":)" +
                           std::string(100'000, '[') + std::string(100'000, ']') + "}";
  const Status s = DecodeStatus(500, body);
  EXPECT_EQ(s.code, 500);
  EXPECT_EQ(s.reason, "InternalError");
  EXPECT_FALSE(s.IsGone());
  EXPECT_EQ(s.message, body.substr(0, 512) + "...");
}

// What the answer says is text for logs and objects' status: cut short, one line of printable
// ASCII, whether it came as a Status or as a bare body (a proxy, or a webhook's message).
TEST(DecodeStatus, MessagesAreCutAndPrintable) {
  const std::string forged = "denied\n{\"level\":\"info\",\"msg\":\"all well\"}\x1b[2J";
  const Status bare = DecodeStatus(502, forged);
  EXPECT_EQ(bare.message, R"(denied\x0a{"level":"info","msg":"all well"}\x1b[2J)");

  nlohmann::json status = {{"kind", "Status"},
                           {"code", 403},
                           {"reason", "Forbidden\r\nX"},
                           {"message", forged + std::string(10'000, 'y')}};
  const Status s = DecodeStatus(403, status.dump());
  EXPECT_EQ(s.reason, R"(Forbidden\x0d\x0aX)");
  EXPECT_TRUE(s.message.starts_with(R"(denied\x0a{"level":)")) << s.message;
  // 512 bytes shown, two of them escaped (3 more bytes each), and "...".
  EXPECT_EQ(s.message.size(), 512U + 2 * 3 + 3);
  EXPECT_EQ(s.message.find('\n'), std::string::npos);
  EXPECT_TRUE(s.message.ends_with("yyy..."));
}

TEST(DecodeStatus, StatusWithWrongFieldTypesDoesNotThrow) {
  const Status s = DecodeStatus(404, R"({"kind":"Status","code":"x","reason":7,"message":null})");
  EXPECT_EQ(s.code, 404);
  EXPECT_EQ(s.reason, "NotFound");
  EXPECT_EQ(s.message, "");
}

TEST(ParseRetryAfter, SecondsOnly) {
  EXPECT_EQ(ParseRetryAfter("3"), std::chrono::seconds(3));
  EXPECT_EQ(ParseRetryAfter(" 10 "), std::chrono::seconds(10));
  EXPECT_EQ(ParseRetryAfter("0"), std::chrono::seconds(0));
  EXPECT_FALSE(ParseRetryAfter(""));
  EXPECT_FALSE(ParseRetryAfter("-1"));
  EXPECT_FALSE(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"));
  EXPECT_FALSE(ParseRetryAfter("5s"));
}

TEST(Result, HoldsValueOrStatus) {
  Result<int> ok = 5;
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 5);
  Result<int> bad = Status{0, kReasonTimeout, "GET /api: timed out", std::nullopt};
  ASSERT_FALSE(bad);
  EXPECT_TRUE(bad.error().IsTransport());
  EXPECT_EQ(bad.error().ToString(), "Timeout: GET /api: timed out");
}

}  // namespace
}  // namespace eoc::kube
