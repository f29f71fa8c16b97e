// Which addresses a Carbon Aware SDK URL (spec.carbon.carbonAwareSdk.url, a tenant's) may make the
// operator connect to. FetchEmissions resolves the URL's host before every poll, checks every
// address it resolves to here, and connects to the first one it checked: the fetcher makes no
// lookup of its own, so a name re-pointed after the check (DNS rebinding) cannot move the poll.
//
// Refused unless --carbon-sdk-allowed-cidrs names them (RefusedRange):
//   loopback          127.0.0.0/8, ::1
//   link-local        169.254.0.0/16 (the clouds' metadata 169.254.169.254 among them), fe80::/10
//   unspecified       0.0.0.0/8, :: (Linux takes a connection to 0.0.0.0 to this host)
//   cloud metadata    100.100.100.200 (Alibaba Cloud), fd00:ec2::254 (AWS over IPv6)
//   IPv4-compatible   ::/96, deprecated (Linux may tunnel it to the IPv4 address)
// An IPv4 address written in IPv6 (IPv4-mapped ::ffff:a.b.c.d, or NAT64 64:ff9b::a.b.c.d) is
// judged, and matched against the allowed CIDRs, as the IPv4 address it carries. The private
// ranges (10/8, 172.16/12, 192.168/16, fc00::/7) stay allowed: an SDK in the cluster is reached
// at a Service's address in one of them.
//
//   std::string error;
//   auto allowed = ParseCidrList("127.0.0.1/32,::1", &error);  // --carbon-sdk-allowed-cidrs
//   CheckSdkAddress("10.96.0.20", *allowed);       // "": allowed
//   CheckSdkAddress("169.254.169.254", {});        // "the address 169.254.169.254 is
//   link-local..."
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::controller::carbon {

// An address block: IPv4 ones held as IPv4-mapped IPv6 (a.b.c.d/n as ::ffff:a.b.c.d/96+n), so
// that one comparison serves both families.
struct Cidr {
  std::array<std::uint8_t, 16> prefix{};  // bits past `bits` are zero
  int bits = 0;                           // 0 to 128

  bool operator==(const Cidr&) const = default;
};

// "a.b.c.d/n" (n 0 to 32), "v6/n" (n 0 to 128), or an address alone (a block of one). Host bits
// are cleared. nullopt and *error for anything else.
std::optional<Cidr> ParseCidr(std::string_view text, std::string* error);
// A comma-separated list of ParseCidr's forms ("" for none); *error names the bad entry.
std::optional<std::vector<Cidr>> ParseCidrList(std::string_view list, std::string* error);

// The refused range the IP literal `ip` lies in, as messages name it ("link-local
// (169.254.0.0/16)"); nullopt when it lies in none, or is not an IP literal.
std::optional<std::string_view> RefusedRange(std::string_view ip);

// Why the SDK may not be reached at the IP literal `ip`: "" when it lies in no refused range or
// in one of `allowed`, else a message naming the address, its range and the flag that allows it.
std::string CheckSdkAddress(std::string_view ip, std::span<const Cidr> allowed);

}  // namespace eoc::controller::carbon
