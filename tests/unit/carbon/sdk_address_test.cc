// Which addresses a Carbon Aware SDK URL may reach: each refused range at its edges, the IPv4
// forms written in IPv6, the private ranges left allowed, and the allow list's CIDRs.
#include "controller/carbon/sdk_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace eoc::controller::carbon {
namespace {

using ::testing::HasSubstr;

std::string RangeOf(const std::string& ip) { return std::string(RefusedRange(ip).value_or("")); }

std::vector<Cidr> Cidrs(const std::string& list) {
  std::string error;
  auto cidrs = ParseCidrList(list, &error);
  EXPECT_TRUE(cidrs) << error;
  return cidrs.value_or(std::vector<Cidr>{});
}

TEST(RefusedRangeTest, LoopbackAtItsEdges) {
  EXPECT_EQ(RangeOf("127.0.0.0"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("127.0.0.1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("127.255.255.255"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("126.255.255.255"), "");
  EXPECT_EQ(RangeOf("128.0.0.0"), "");
  EXPECT_EQ(RangeOf("::1"), "loopback (::1)");
  EXPECT_EQ(RangeOf("0:0:0:0:0:0:0:1"), "loopback (::1)");
}

TEST(RefusedRangeTest, LinkLocalAndTheMetadataAddressesAtTheirEdges) {
  const std::string v4_link_local =
      "link-local (169.254.0.0/16, the clouds' metadata address among them)";
  EXPECT_EQ(RangeOf("169.254.169.254"), v4_link_local);
  EXPECT_EQ(RangeOf("169.254.0.0"), v4_link_local);
  EXPECT_EQ(RangeOf("169.254.255.255"), v4_link_local);
  EXPECT_EQ(RangeOf("169.253.255.255"), "");
  EXPECT_EQ(RangeOf("169.255.0.0"), "");
  EXPECT_EQ(RangeOf("fe80::1"), "link-local (fe80::/10)");
  EXPECT_EQ(RangeOf("FE80::a:b"), "link-local (fe80::/10)");
  EXPECT_EQ(RangeOf("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), "link-local (fe80::/10)");
  EXPECT_EQ(RangeOf("fe7f:ffff::"), "");
  EXPECT_EQ(RangeOf("fec0::"), "");
  EXPECT_EQ(RangeOf("100.100.100.200"), "a cloud metadata address (Alibaba Cloud)");
  EXPECT_EQ(RangeOf("100.100.100.199"), "");
  EXPECT_EQ(RangeOf("100.100.100.201"), "");
  EXPECT_EQ(RangeOf("fd00:ec2::254"), "a cloud metadata address (AWS, IPv6)");
  EXPECT_EQ(RangeOf("fd00:ec2:0:0:0:0:0:254"), "a cloud metadata address (AWS, IPv6)");
  EXPECT_EQ(RangeOf("fd00:ec2::253"), "");
  EXPECT_EQ(RangeOf("fd00:ec2::255"), "");
}

TEST(RefusedRangeTest, UnspecifiedAndIpv4Compatible) {
  EXPECT_EQ(RangeOf("0.0.0.0"), "unspecified (0.0.0.0/8)");
  EXPECT_EQ(RangeOf("0.255.255.255"), "unspecified (0.0.0.0/8)");
  EXPECT_EQ(RangeOf("1.0.0.0"), "");
  EXPECT_EQ(RangeOf("::"), "unspecified (::)");
  EXPECT_EQ(RangeOf("::2"), "IPv4-compatible (::/96, deprecated)");
  EXPECT_EQ(RangeOf("::127.0.0.1"), "IPv4-compatible (::/96, deprecated)");
  EXPECT_EQ(RangeOf("::1:0:0:0"), "");  // past ::/96
}

// An IPv4 address written in IPv6 is judged as the IPv4 address.
TEST(RefusedRangeTest, IpV4MappedAndNat64AreTheirIpV4Address) {
  EXPECT_EQ(RangeOf("::ffff:127.0.0.1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("::ffff:7f00:1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("0:0:0:0:0:ffff:a9fe:a9fe"), RangeOf("169.254.169.254"));
  EXPECT_EQ(RangeOf("::ffff:0.0.0.0"), "unspecified (0.0.0.0/8)");
  EXPECT_EQ(RangeOf("::ffff:100.100.100.200"), "a cloud metadata address (Alibaba Cloud)");
  EXPECT_EQ(RangeOf("64:ff9b::169.254.169.254"), RangeOf("169.254.169.254"));
  EXPECT_EQ(RangeOf("64:ff9b::7f00:1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(RangeOf("::ffff:10.0.0.1"), "");
  EXPECT_EQ(RangeOf("64:ff9b::10.0.0.1"), "");
}

// The private ranges stay allowed: an in-cluster SDK Service has an address in one.
TEST(RefusedRangeTest, PrivateAndPublicAddressesAreAllowed) {
  for (const char* ip : {"10.0.0.1", "10.96.0.20", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                         "100.64.0.1", "8.8.8.8", "fd12:3456::1", "fc00::1", "2001:db8::1"}) {
    EXPECT_EQ(RangeOf(ip), "") << ip;
    EXPECT_EQ(CheckSdkAddress(ip, {}), "") << ip;
  }
}

TEST(CheckSdkAddressTest, RefusedNamesTheAddressItsRangeAndTheFlag) {
  EXPECT_EQ(CheckSdkAddress("169.254.169.254", {}),
            "the address 169.254.169.254 is link-local (169.254.0.0/16, the clouds' metadata "
            "address among them): refused unless --carbon-sdk-allowed-cidrs names it");
  EXPECT_THAT(CheckSdkAddress("localhost", {}), HasSubstr("\"localhost\" is not an IP address"));
  EXPECT_THAT(CheckSdkAddress("fe80::1%eth0", {}), HasSubstr("is not an IP address"));
}

TEST(CheckSdkAddressTest, TheAllowedCidrsLetTheirAddressesThroughOnly) {
  const auto one = Cidrs("127.0.0.1/32");
  EXPECT_EQ(CheckSdkAddress("127.0.0.1", one), "");
  EXPECT_EQ(CheckSdkAddress("::ffff:127.0.0.1", one), "");
  EXPECT_THAT(CheckSdkAddress("127.0.0.2", one), HasSubstr("is loopback"));
  EXPECT_THAT(CheckSdkAddress("::1", one), HasSubstr("is loopback"));
  EXPECT_THAT(CheckSdkAddress("169.254.169.254", one), HasSubstr("is link-local"));

  const auto wide = Cidrs(" 127.0.0.0/8 , fe80::/10,::1");
  EXPECT_EQ(CheckSdkAddress("127.9.9.9", wide), "");
  EXPECT_EQ(CheckSdkAddress("fe80::1234", wide), "");
  EXPECT_EQ(CheckSdkAddress("::1", wide), "");
  EXPECT_THAT(CheckSdkAddress("169.254.1.1", wide), HasSubstr("is link-local"));
}

TEST(ParseCidrTest, FormsAndErrors) {
  std::string error;
  const auto bare = ParseCidr("127.0.0.1", &error);
  ASSERT_TRUE(bare) << error;
  EXPECT_EQ(*bare, *ParseCidr("127.0.0.1/32", &error));
  EXPECT_EQ(bare->bits, 128);
  EXPECT_EQ(*ParseCidr("10.1.2.3/8", &error), *ParseCidr("10.0.0.0/8", &error));  // host bits
  EXPECT_EQ(ParseCidr("::/0", &error)->bits, 0);
  EXPECT_EQ(ParseCidr("0.0.0.0/0", &error)->bits, 96);  // every IPv4 address, no IPv6 one
  EXPECT_THAT(CheckSdkAddress("::1", Cidrs("0.0.0.0/0")), HasSubstr("is loopback"));
  for (const char* bad : {"1.2.3.4/33", "::1/129", "1.2.3.4/", "1.2.3.4/x", "1.2.3.4/-1", "/8",
                          "1.2.3", "localhost", "1.2.3.4/8/8", ""}) {
    error.clear();
    EXPECT_FALSE(ParseCidr(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_EQ(ParseCidrList("", &error)->size(), 0U);
  EXPECT_FALSE(ParseCidrList("127.0.0.1/32,,::1", &error));
  EXPECT_FALSE(ParseCidrList("127.0.0.1/32,nope", &error));
  EXPECT_THAT(error, HasSubstr("\"nope\""));
}

}  // namespace
}  // namespace eoc::controller::carbon
