#include "server/address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace eoc::server {
namespace {

TEST(ParseHostPortTest, AcceptsHostPortForms) {
  auto a = ParseHostPort("127.0.0.1:8080");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8080);
  a = ParseHostPort(":9090");
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.port, 9090);
  a = ParseHostPort("[::1]:0");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 0);
  a = ParseHostPort("localhost:65535");
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 65535);
}

TEST(ParseHostPortTest, RejectsMalformedAddressesQuotingThem) {
  for (const std::string_view bad : {"8080", "host:", "host:http", "host:65536", "host:-1",
                                     "host:80x", "::1:80", "[::1:80", "::1]:80", ""}) {
    try {
      (void)ParseHostPort(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("\"" + std::string(bad) + "\"")) << bad;
    }
  }
}

}  // namespace
}  // namespace eoc::server
