#include "server/http.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "server/path_table.h"
#include "server/wire.h"

namespace eoc::server {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(RequestTest, SplitsTheTargetIntoPathAndQuery) {
  const Request with_query("GET", "/v1/pools/ns/a/pick?x=1&y=%2F", {}, "");
  EXPECT_EQ(with_query.path(), "/v1/pools/ns/a/pick");
  EXPECT_EQ(with_query.query(), "x=1&y=%2F");
  EXPECT_EQ(with_query.target(), "/v1/pools/ns/a/pick?x=1&y=%2F");

  const Request without("POST", "/v1/pick", {}, "{}");
  EXPECT_EQ(without.path(), "/v1/pick");
  EXPECT_EQ(without.query(), "");
  EXPECT_EQ(without.body(), "{}");
  EXPECT_EQ(Request("GET", "/x?", {}, "").query(), "");
}

TEST(RequestTest, HeaderLookupIgnoresCaseAndReturnsTheFirst) {
  const std::vector<Header> headers = {
      {"X-Session-Id", "s1"}, {"x-session-id", "s2"}, {"X-Eoc-Wait-Ms", ""}};
  const Request request("GET", "/", headers, "");
  EXPECT_EQ(request.header("x-session-id"), "s1");
  EXPECT_EQ(request.header("X-SESSION-ID"), "s1");
  EXPECT_EQ(request.header("x-eoc-wait-ms"), "") << "present but empty is not absent";
  EXPECT_EQ(request.header("x-model"), std::nullopt);
  EXPECT_EQ(request.headers().size(), 3U);
}

TEST(ResponseTest, RefusesHeaderInjectionAndServerOwnedHeaders) {
  Response response;
  EXPECT_THROW(response.AddHeader("X-A", "v\r\nSet-Cookie: x"), std::invalid_argument);
  EXPECT_THROW(response.AddHeader("X-A", std::string_view("v\0w", 3)), std::invalid_argument);
  EXPECT_THROW(response.AddHeader("Bad Name", "v"), std::invalid_argument);
  EXPECT_THROW(response.AddHeader("", "v"), std::invalid_argument);
  EXPECT_THROW(response.AddHeader("content-length", "5"), std::invalid_argument);
  EXPECT_THROW(response.AddHeader("Connection", "close"), std::invalid_argument);
  EXPECT_THROW(response.set_content_type("text/html\r\nX: y"), std::invalid_argument);
  EXPECT_THROW(response.set_status(100), std::invalid_argument);
  EXPECT_THROW(response.set_status(600), std::invalid_argument);
  EXPECT_EQ(response.header_lines(), "");
  response.AddHeader("Retry-After", "2");
  EXPECT_EQ(response.header_lines(), "Retry-After: 2\r\n");
}

TEST(ResponseTest, ResetRestoresDefaultsAndKeepsMemory) {
  Response response;
  response.set_status(503);
  response.set_content_type("application/json");
  response.body().assign(1000, 'x');
  response.AddHeader("X-A", "b");
  const std::size_t capacity = response.body().capacity();
  response.Reset();
  EXPECT_EQ(response.status(), 200);
  EXPECT_EQ(response.content_type(), "text/plain; charset=utf-8");
  EXPECT_EQ(response.body(), "");
  EXPECT_EQ(response.header_lines(), "");
  EXPECT_EQ(response.body().capacity(), capacity);
}

// The bytes on the wire: head and body.
std::string Serialize(const Response& response, internal::Framing framing = {}) {
  std::string out = "stale bytes from the previous response";
  internal::SerializeHead(response, framing, out);
  return out + std::string(internal::BodyToSend(response, framing));
}

TEST(SerializeResponseTest, HeaderOnlyAnswerHasNoContentType) {
  Response response;
  response.AddHeader("x-gateway-destination-endpoint", "10.0.0.7:8000");
  EXPECT_THAT(Serialize(response),
              MatchesRegex("HTTP/1\\.1 200 OK\r\n"
                           "Date: [A-Z][a-z][a-z], [0-9][0-9] [A-Z][a-z][a-z] [0-9]{4} "
                           "[0-9][0-9]:[0-9][0-9]:[0-9][0-9] GMT\r\n"
                           "Content-Length: 0\r\n"
                           "x-gateway-destination-endpoint: 10\\.0\\.0\\.7:8000\r\n\r\n"));
}

TEST(SerializeResponseTest, BodyFramingAndConnectionHeaders) {
  Response response;
  response.set_status(503);
  response.body() = "informers-synced\n";
  const std::string closing = Serialize(response, {.keep_alive = false});
  EXPECT_THAT(closing, ::testing::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(closing, HasSubstr("\r\nContent-Type: text/plain; charset=utf-8\r\n"));
  EXPECT_THAT(closing, HasSubstr("\r\nContent-Length: 17\r\n"));
  EXPECT_THAT(closing, HasSubstr("\r\nConnection: close\r\n"));
  EXPECT_THAT(closing, ::testing::EndsWith("\r\n\r\ninformers-synced\n"));

  EXPECT_THAT(Serialize(response, {.http10 = true}), HasSubstr("\r\nConnection: keep-alive\r\n"));
  EXPECT_THAT(Serialize(response), ::testing::Not(HasSubstr("Connection:")));
  EXPECT_THAT(
      Serialize(response, {.omit_body = true}),
      ::testing::AllOf(HasSubstr("Content-Length: 17\r\n"), ::testing::EndsWith("\r\n\r\n")));

  Response no_content;
  no_content.set_status(204);
  no_content.body() = "dropped";
  EXPECT_THAT(Serialize(no_content), ::testing::Not(HasSubstr("Content-Length")));
  EXPECT_THAT(Serialize(no_content), ::testing::EndsWith("\r\n\r\n"));
}

class PathTableTest : public ::testing::Test {
 protected:
  PathTableTest() {
    paths_.Add("GET", "/healthz", [](const Request&, Response& r) { r.body() = "ok"; });
    paths_.Add("POST", "/v1/pick", [](const Request&, Response& r) { r.body() = "picked"; });
    paths_.Add("PUT", "/v1/pick", [](const Request&, Response&) {});
    paths_.Add("GET", "/boom", [](const Request&, Response& r) {
      r.AddHeader("X-Half", "done");
      throw std::runtime_error("bug");
    });
  }

  Response Serve(std::string_view method, std::string_view target) {
    Response response;
    omit_body_ = false;
    Request request(method, target, {}, "");
    served_ok_ = paths_.Serve(request, response, omit_body_, log_);
    return response;
  }

  internal::PathTable paths_;
  telemetry::Logger log_{"paths-test"};
  bool omit_body_ = false;
  bool served_ok_ = false;
};

TEST_F(PathTableTest, RoutesExactPathsByMethod) {
  EXPECT_EQ(Serve("GET", "/healthz?verbose=1").body(), "ok");
  EXPECT_EQ(Serve("POST", "/v1/pick").body(), "picked");
  EXPECT_EQ(Serve("GET", "/healthz/").status(), 404);
  EXPECT_EQ(Serve("get", "/healthz").status(), 405) << "methods are case-sensitive";
}

TEST_F(PathTableTest, WrongMethodListsTheAllowedOnes) {
  const Response response = Serve("GET", "/v1/pick");
  EXPECT_EQ(response.status(), 405);
  EXPECT_EQ(response.header_lines(), "Allow: POST, PUT\r\n");
  EXPECT_EQ(Serve("DELETE", "/healthz").header_lines(), "Allow: GET, HEAD\r\n");
}

TEST_F(PathTableTest, HeadUsesTheGetHandlerAndOmitsTheBody) {
  const Response response = Serve("HEAD", "/healthz");
  EXPECT_EQ(response.status(), 200);
  EXPECT_EQ(response.body(), "ok") << "the length is still that of the GET answer";
  EXPECT_TRUE(omit_body_);
  EXPECT_EQ(Serve("HEAD", "/nope").status(), 404);
  EXPECT_TRUE(omit_body_) << "no HEAD answer has a body";
}

TEST_F(PathTableTest, AThrowingHandlerBecomesAClean500) {
  const Response response = Serve("GET", "/boom");
  EXPECT_EQ(response.status(), 500);
  EXPECT_EQ(response.header_lines(), "") << "nothing of the half-built answer";
  EXPECT_FALSE(served_ok_);
  EXPECT_EQ(Serve("GET", "/healthz").status(), 200);
  EXPECT_TRUE(served_ok_);
}

TEST_F(PathTableTest, PatternsHandTheirParametersToTheHandler) {
  std::vector<std::string> seen;
  paths_.Add("GET", "/v1/pools/{namespace}/{name}/pick", [&](const Request& req, Response&) {
    seen.assign(req.params().begin(), req.params().end());
  });
  EXPECT_EQ(Serve("GET", "/v1/pools/prod/chat/pick?x=1").status(), 200);
  EXPECT_EQ(seen, (std::vector<std::string>{"prod", "chat"}));
  EXPECT_EQ(Serve("GET", "/v1/pools/prod/pick").status(), 404);
  EXPECT_EQ(Serve("GET", "/healthz").status(), 200) << "exact paths still match";
}

TEST(RequestTest, ARequestWithoutAConnectionCannotBeDeferred) {
  const Request request("GET", "/", {}, "");
  EXPECT_THROW(request.Defer(), std::logic_error);
}

TEST(ResponseTest, SetErrorAnswersJsonNamingTheProblem) {
  Response response;
  response.AddHeader("Retry-After", "1");
  response.body() = "was here";
  response.SetError(429, "pool \"prod/chat\": queue full\n");
  EXPECT_EQ(response.status(), 429);
  EXPECT_EQ(response.content_type(), "application/json");
  EXPECT_EQ(response.body(), R"({"code":429,"message":"pool \"prod/chat\": queue full\n"})");
  EXPECT_EQ(response.header_lines(), "Retry-After: 1\r\n");
}

}  // namespace
}  // namespace eoc::server
