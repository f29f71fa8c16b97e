// The Carbon Aware SDK client against a local HTTP server speaking the SDK's format: the request
// it sends, good answers, missing zones, invalid JSON, a 500, a server that never answers, a body
// over the limit, and the poll's caching and hold on explicit times.
#include "controller/carbon/carbon_aware_sdk.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "fake_carbon_sdk.h"
#include "fixtures.h"
#include "local_http_server.h"

namespace eoc::controller::carbon {
namespace {

using eoc::testing::LocalHttpServer;
using FakeSdk = eoc::testing::FakeCarbonSdk;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using ::testing::HasSubstr;
using testing::kTwoZones;
using ::testing::StartsWith;

const signals::SteadyTime kT0 = signals::SteadyTime{} + hours(100);

TEST(UrlEscapeTest, EscapesAllButUnreserved) {
  EXPECT_EQ(UrlEscape("eastus"), "eastus");
  EXPECT_EQ(UrlEscape("CAISO_NORTH-1.a~"), "CAISO_NORTH-1.a~");
  EXPECT_EQ(UrlEscape("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
}

TEST(EmissionsRequestTargetTest, BuildsThePathWithEachZoneALocation) {
  std::string error;
  const std::vector<std::string> zones{"eastus", "west us"};
  auto t = EmissionsRequestTarget("http://10.96.0.20:8080", zones, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "10.96.0.20");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->path, "/emissions/bylocations?location=eastus&location=west%20us");
  t = EmissionsRequestTarget("http://carbon-sdk.tools.svc/api/", zones, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "carbon-sdk.tools.svc");
  EXPECT_EQ(t->port, 80);
  EXPECT_EQ(t->path, "/api/emissions/bylocations?location=eastus&location=west%20us");
  t = EmissionsRequestTarget("http://[fd00::1]:80", zones, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "fd00::1");
}

TEST(EmissionsRequestTargetTest, RefusesWhatItCannotFetch) {
  const std::vector<std::string> zones{"eastus"};
  std::string error;
  EXPECT_FALSE(EmissionsRequestTarget("https://sdk", zones, &error));
  EXPECT_THAT(error, HasSubstr("only plain http:// is supported"));
  EXPECT_FALSE(EmissionsRequestTarget("ftp://sdk", zones, &error));
  EXPECT_THAT(error, HasSubstr("is not an http:// URL"));
  EXPECT_FALSE(EmissionsRequestTarget("http://sdk/?x=1", zones, &error));
  EXPECT_THAT(error, HasSubstr("has a query or fragment"));
  EXPECT_FALSE(EmissionsRequestTarget("http://sdk:0", zones, &error));
  EXPECT_THAT(error, HasSubstr("port 0"));
  EXPECT_FALSE(EmissionsRequestTarget("http://sdk", {}, &error));
  EXPECT_EQ(error, "no zones to ask for");
  const std::vector<std::string> many(kMaxZonesPerRequest + 1, "z");
  EXPECT_FALSE(EmissionsRequestTarget("http://sdk", many, &error));
  EXPECT_THAT(error, HasSubstr("over the limit of 64 per request"));
}

TEST(ResolveHostTest, IpLiteralsPassAndNamesAreLookedUp) {
  std::string error;
  using Addresses = std::vector<std::string>;
  EXPECT_EQ(ResolveHost("10.1.2.3", milliseconds(100), &error), Addresses{"10.1.2.3"});
  EXPECT_EQ(ResolveHost("::1", milliseconds(100), &error), Addresses{"::1"});
  const auto local = ResolveHost("localhost", std::chrono::seconds(5), &error);
  ASSERT_TRUE(local) << error;
  ASSERT_FALSE(local->empty());
  for (const std::string& a : *local) EXPECT_TRUE(a == "127.0.0.1" || a == "::1") << a;
  EXPECT_FALSE(ResolveHost("no-such-host.invalid", std::chrono::seconds(5), &error));
  EXPECT_THAT(error, HasSubstr("no-such-host.invalid"));
}

class CarbonAwareSdkTest : public ::testing::Test {
 protected:
  std::unique_ptr<MetricsFetcher> fetcher_ = MakeCarbonFetcher();
  CarbonAwareSdkOptions options_{.timeout = milliseconds(2000),
                                 .allowed_cidrs = testing::AllowLoopback()};
  const std::vector<std::string> zones_{"eastus", "westus"};
};

TEST_F(CarbonAwareSdkTest, FetchesEveryZoneInOneRequest) {
  FakeSdk sdk(kTwoZones);
  const auto a = FetchEmissions(*fetcher_, sdk.url(), zones_, options_);
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("eastus"), 70);
  EXPECT_EQ(a.ratings.at("westus"), 64);
  const auto heads = sdk.heads();
  ASSERT_EQ(heads.size(), 1U);
  EXPECT_THAT(heads[0], StartsWith("GET /emissions/bylocations?location=eastus&location=westus "
                                   "HTTP/1.1\r\n"));
  EXPECT_THAT(heads[0], HasSubstr("eoc-operator/0.1 (carbon intensity)"));
}

TEST_F(CarbonAwareSdkTest, TheDocsQuickstartSeriesThroughHttp) {
  FakeSdk sdk(testing::Fixture("carbon-aware-sdk-emissions-bylocation-quickstart.json"));
  const std::vector<std::string> zones{"CAISO_NORTH"};
  const auto a = FetchEmissions(*fetcher_, sdk.url(), zones, options_);
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_DOUBLE_EQ(a.ratings.at("CAISO_NORTH"), 439.07741416000005);
}

TEST_F(CarbonAwareSdkTest, InvalidJsonIsRefusedNamingTheUrl) {
  FakeSdk sdk(testing::Fixture("carbon-aware-sdk-emissions-bylocations-docs.json"));
  const auto a = FetchEmissions(*fetcher_, sdk.url(), zones_, options_);
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, StartsWith("GET " + sdk.url() +
                                   "/emissions/bylocations: the answer: not valid JSON "));
}

TEST_F(CarbonAwareSdkTest, AServerErrorIsRefusedWithItsStatus) {
  FakeSdk sdk(R"({"title":"Internal Server Error","status":500})", "500 Internal Server Error");
  const auto a = FetchEmissions(*fetcher_, sdk.url(), zones_, options_);
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, HasSubstr("HTTP 500"));
  EXPECT_THAT(*a.error, HasSubstr("/emissions/bylocations?location=eastus"));
}

TEST_F(CarbonAwareSdkTest, AServerThatNeverAnswersTimesOut) {
  LocalHttpServer silent([](LocalHttpServer& server, int /*fd*/, const std::string& /*head*/) {
    server.HoldUntilStopped();
  });
  options_.timeout = milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  const auto a = FetchEmissions(*fetcher_, silent.url(), zones_, options_);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, HasSubstr("deadline of"));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_F(CarbonAwareSdkTest, ABodyOverTheLimitIsRefused) {
  LocalHttpServer huge([](LocalHttpServer& /*server*/, int fd, const std::string& /*head*/) {
    LocalHttpServer::Write(fd, "HTTP/1.1 200 OK\r\nContent-Length: " +
                                   std::to_string(kMaxEmissionsAnswerBytes + 1) + "\r\n\r\n[");
  });
  const auto a = FetchEmissions(*fetcher_, huge.url(), zones_, options_);
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, HasSubstr("exceeds the limit of 1048576 bytes"));
}

TEST_F(CarbonAwareSdkTest, NothingListening) {
  std::string url;
  {
    const LocalHttpServer gone([](LocalHttpServer&, int, const std::string&) {});
    url = gone.url();
  }
  const auto a = FetchEmissions(*fetcher_, url, zones_, options_);
  ASSERT_TRUE(a.error.has_value());
  EXPECT_THAT(*a.error, HasSubstr("connection refused"));
}

TEST_F(CarbonAwareSdkTest, AHostNameIsLookedUp) {
  FakeSdk sdk(kTwoZones);
  const std::string url = "http://localhost:" + sdk.url().substr(sdk.url().rfind(':') + 1);
  options_.resolve = [](const std::string& host, milliseconds, std::string*) {
    EXPECT_EQ(host, "localhost");
    return std::optional<std::vector<std::string>>({"127.0.0.1"});
  };
  const auto a = FetchEmissions(*fetcher_, url, zones_, options_);
  ASSERT_FALSE(a.error.has_value()) << *a.error;
  EXPECT_EQ(a.ratings.at("westus"), 64);
}

// A URL naming a loopback address, or a name that resolves to one, is refused before anything
// is sent, with a message naming the address, its range and the flag; the SDK is not asked.
TEST_F(CarbonAwareSdkTest, ALoopbackSdkIsRefusedUnlessAllowed) {
  FakeSdk sdk(kTwoZones);
  const CarbonAwareSdkOptions defaults{.timeout = milliseconds(2000)};
  const auto a = FetchEmissions(*fetcher_, sdk.url(), zones_, defaults);
  ASSERT_TRUE(a.error.has_value());
  EXPECT_EQ(*a.error, "GET " + sdk.url() +
                          "/emissions/bylocations: the address 127.0.0.1 is loopback "
                          "(127.0.0.0/8): refused unless --carbon-sdk-allowed-cidrs names it");
  const std::string by_name = "http://localhost:" + sdk.url().substr(sdk.url().rfind(':') + 1);
  const auto b = FetchEmissions(*fetcher_, by_name, zones_, defaults);
  ASSERT_TRUE(b.error.has_value());
  EXPECT_THAT(*b.error, HasSubstr("is loopback"));
  EXPECT_TRUE(sdk.heads().empty());

  // Allowed (options_ holds 127.0.0.1/32): asked, with the URL's own host in the Host header.
  const auto c = FetchEmissions(*fetcher_, sdk.url(), zones_, options_);
  ASSERT_FALSE(c.error.has_value()) << *c.error;
  EXPECT_EQ(c.ratings.at("eastus"), 70);
  ASSERT_EQ(sdk.heads().size(), 1U);
  EXPECT_THAT(sdk.heads()[0], HasSubstr("\r\nHost: " + sdk.url().substr(7) + "\r\n"));
}

// A name is looked up before every poll, and every address it gives is checked: one refused
// address refuses the poll, whichever comes first (a name re-pointed between two polls, as DNS
// rebinding does, is refused at the next). The connection goes to the checked address, and the
// Host header names the name.
TEST_F(CarbonAwareSdkTest, EveryResolvedAddressIsCheckedAtEveryPoll) {
  FakeSdk sdk(kTwoZones);
  const std::string port = sdk.url().substr(sdk.url().rfind(':') + 1);
  const std::string url = "http://sdk.example:" + port;
  std::vector<std::string> answer = {"127.0.0.1"};
  options_.resolve = [&answer](const std::string&, milliseconds, std::string*) {
    return std::optional<std::vector<std::string>>(answer);
  };
  const auto first = FetchEmissions(*fetcher_, url, zones_, options_);
  ASSERT_FALSE(first.error.has_value()) << *first.error;
  ASSERT_EQ(sdk.heads().size(), 1U);
  EXPECT_THAT(sdk.heads()[0], HasSubstr("\r\nHost: sdk.example:" + port + "\r\n"));

  answer = {"127.0.0.1", "169.254.169.254"};
  const auto second = FetchEmissions(*fetcher_, url, zones_, options_);
  ASSERT_TRUE(second.error.has_value());
  EXPECT_THAT(*second.error, HasSubstr("the address 169.254.169.254 is link-local"));
  answer = {"::ffff:169.254.169.254", "127.0.0.1"};
  const auto third = FetchEmissions(*fetcher_, url, zones_, options_);
  ASSERT_TRUE(third.error.has_value());
  EXPECT_THAT(*third.error, HasSubstr("the address ::ffff:169.254.169.254 is link-local"));
  EXPECT_EQ(sdk.heads().size(), 1U);  // neither was sent
}

TEST_F(CarbonAwareSdkTest, PollsAtMostOncePerIntervalAndHoldsTheLastValue) {
  FakeSdk sdk(kTwoZones);
  options_.min_interval = minutes(5);
  options_.hold = hours(1);
  CarbonAwareSdkSource source(*fetcher_, options_);

  EXPECT_TRUE(source.Poll(sdk.url(), zones_, kT0));
  EXPECT_EQ(source.intensities().Get("eastus", kT0), 70);
  EXPECT_FALSE(source.Poll(sdk.url(), zones_, kT0 + minutes(4)));  // cached: not asked again
  const std::vector<std::string> reordered{"westus", "eastus"};
  EXPECT_FALSE(source.Poll(sdk.url(), reordered, kT0 + minutes(4)));  // the same zone set
  EXPECT_EQ(sdk.heads().size(), 1U);

  // The SDK starts failing: the last values are kept for the hold, then the zones are unknown.
  sdk.Set("oops", "500 Internal Server Error");
  EXPECT_TRUE(source.Poll(sdk.url(), zones_, kT0 + minutes(5)));
  EXPECT_EQ(sdk.heads().size(), 2U);
  EXPECT_EQ(source.intensities().Get("westus", kT0 + minutes(59)), 64);
  EXPECT_TRUE(source.intensities().Errors(kT0 + minutes(59)).empty());
  EXPECT_EQ(source.intensities().Get("westus", kT0 + minutes(61)), std::nullopt);
  const auto errors = source.intensities().Errors(kT0 + minutes(61));
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_EQ(errors[0].zone, "eastus");
  EXPECT_THAT(errors[0].error, HasSubstr("HTTP 500"));
  EXPECT_EQ(errors[1].zone, "westus");

  // It recovers without one zone: that zone's error says so, the other is fresh again.
  sdk.Set(R"([{"location":"eastus","time":"2022-05-17T21:00:00Z","rating":75}])");
  EXPECT_TRUE(source.Poll(sdk.url(), zones_, kT0 + minutes(70)));
  EXPECT_EQ(source.intensities().Get("eastus", kT0 + minutes(70)), 75);
  const auto after = source.intensities().Errors(kT0 + minutes(70));
  ASSERT_EQ(after.size(), 1U);
  EXPECT_EQ(after[0].zone, "westus");
  EXPECT_THAT(after[0].error, HasSubstr("no entry for location \"westus\""));

  // Another zone set is another poll, due at once; zones no longer asked for are dropped.
  const std::vector<std::string> east{"eastus"};
  EXPECT_TRUE(source.Poll(sdk.url(), east, kT0 + minutes(71)));
  EXPECT_EQ(source.intensities().size(), 1U);
}

TEST_F(CarbonAwareSdkTest, ATimedOutPollFailsEveryZone) {
  LocalHttpServer silent([](LocalHttpServer& server, int /*fd*/, const std::string& /*head*/) {
    server.HoldUntilStopped();
  });
  options_.timeout = milliseconds(200);
  CarbonAwareSdkSource source(*fetcher_, options_);
  EXPECT_TRUE(source.Poll(silent.url(), zones_, kT0));
  const auto errors = source.intensities().Errors(kT0);
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_THAT(errors[0].error, HasSubstr("deadline of"));
  EXPECT_EQ(source.schedule().NextDue(signals::PollKey(silent.url(), zones_)), kT0 + minutes(5));
}

}  // namespace
}  // namespace eoc::controller::carbon
