#include "common/url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace eoc {
namespace {

TEST(ParsePort, DigitsFromZeroTo65535) {
  EXPECT_EQ(ParsePort("0"), 0);
  EXPECT_EQ(ParsePort("6443"), 6443);
  EXPECT_EQ(ParsePort("65535"), 65535);
  for (const char* bad : {"", "65536", "-1", "+1", " 1", "1 ", "80x", "0x50"}) {
    EXPECT_EQ(ParsePort(bad), std::nullopt) << bad;
  }
}

TEST(SplitHostPort, SplitsEveryForm) {
  std::string error;
  auto hp = SplitHostPort("example.test:6443", &error);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "example.test");
  EXPECT_EQ(hp->port, 6443);
  EXPECT_FALSE(hp->bracketed);
  hp = SplitHostPort("[fd00::1%eth0]:443", &error);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "fd00::1%eth0");
  EXPECT_EQ(hp->port, 443);
  EXPECT_TRUE(hp->bracketed);
  hp = SplitHostPort("[::1]", &error);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, std::nullopt);
  hp = SplitHostPort(":9090", &error);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "");
  EXPECT_EQ(hp->port, 9090);
  hp = SplitHostPort("host", &error);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->port, std::nullopt);
}

TEST(SplitHostPort, SaysWhatIsWrong) {
  const auto why = [](std::string_view text) {
    std::string error;
    EXPECT_FALSE(SplitHostPort(text, &error)) << text;
    return error;
  };
  EXPECT_EQ(why("[::1:80"), "unbalanced brackets");
  EXPECT_EQ(why("::1]:80"), "unbalanced brackets");
  EXPECT_EQ(why("[::1]x:80"), "unexpected \"x:80\" after ']'");
  EXPECT_EQ(why("::1:80"), "an IPv6 host needs brackets, as in [::1]:8080");
  EXPECT_EQ(why("host:"), "port \"\" is not a number from 0 to 65535");
  EXPECT_EQ(why("host:65536"), "port \"65536\" is not a number from 0 to 65535");
}

TEST(SplitHttpUrl, SchemeAuthorityAndRest) {
  auto url = SplitHttpUrl("https://[::1]:6443/prefix?x=1");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->scheme, "https");
  EXPECT_EQ(url->authority, "[::1]:6443");
  EXPECT_EQ(url->rest, "/prefix?x=1");
  url = SplitHttpUrl("http://h?q#f");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->scheme, "http");
  EXPECT_EQ(url->authority, "h");
  EXPECT_EQ(url->rest, "?q#f");
  for (const char* bad : {"", "h:6443", "ftp://h", "HTTP://h", "http://", "http:///path",
                          "http://?q", "https://a b", "https://h/\x7f"}) {
    EXPECT_FALSE(SplitHttpUrl(bad)) << bad;
  }
}

TEST(IsServerUrl, HostPortAndAPathPrefixOnly) {
  for (const char* good : {"https://h", "https://api.example.test:6443", "http://[::1]:8080/prefix",
                           "https://10.0.0.1/", "https://my_host:1"}) {
    EXPECT_TRUE(IsServerUrl(good)) << good;
  }
  for (const char* bad :
       {"https://:443", "https://h:0", "https://h:99999", "https://h/?x=1", "https://h/#f",
        "https://user@h", "https://h:6443:1", "https://h!", "https://[::1", "https://[]:443"}) {
    EXPECT_FALSE(IsServerUrl(bad)) << bad;
  }
}

TEST(IsServerAuthority, NeedsAHostAndAPortFromOne) {
  EXPECT_TRUE(IsServerAuthority("10.96.0.1:443"));
  EXPECT_TRUE(IsServerAuthority("[fd00::1]:6443"));
  EXPECT_TRUE(IsServerAuthority("kubernetes.default.svc"));
  EXPECT_FALSE(IsServerAuthority(":443"));
  EXPECT_FALSE(IsServerAuthority("h:0"));
  EXPECT_FALSE(IsServerAuthority("fd00::1:6443"));
  EXPECT_FALSE(IsServerAuthority("h h:443"));
}

}  // namespace
}  // namespace eoc
