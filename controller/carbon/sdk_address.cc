#include "controller/carbon/sdk_address.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace eoc::controller::carbon {
namespace {

using Bytes = std::array<std::uint8_t, 16>;

// Bits of the IPv6 prefix ::ffff:0:0/96 that IPv4 addresses are held under.
constexpr int kMappedBits = 96;
// The NAT64 well-known prefix 64:ff9b::/96 (RFC 6052).
constexpr std::array<std::uint8_t, 12> kNat64{0x00, 0x64, 0xff, 0x9b};

// `ip` as 16 bytes, an IPv4 address (written as such, IPv4-mapped or NAT64) as ::ffff:a.b.c.d.
std::optional<Bytes> ParseIp(std::string_view ip) {
  const std::string text(ip);
  Bytes out{};
  if (inet_pton(AF_INET, text.c_str(), out.data() + 12) == 1) {
    out[10] = out[11] = 0xff;
    return out;
  }
  if (inet_pton(AF_INET6, text.c_str(), out.data()) != 1) return std::nullopt;
  if (std::equal(kNat64.begin(), kNat64.end(), out.begin())) {
    std::fill(out.begin(), out.begin() + 10, 0);
    out[10] = out[11] = 0xff;
  }
  return out;
}

bool Contains(const Cidr& block, const Bytes& ip) {
  const auto whole = static_cast<std::size_t>(block.bits / 8);
  if (!std::equal(block.prefix.begin(), block.prefix.begin() + whole, ip.begin())) return false;
  const int rest = block.bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (ip[whole] & mask) == block.prefix[whole];
}

struct Range {
  Cidr block;
  std::string_view name;
};

// The refused ranges, the narrower before the wider that hold them (the first match names it).
const std::vector<Range>& RefusedRanges() {
  static const std::vector<Range> ranges = [] {
    constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kTable{{
        {"127.0.0.0/8", "loopback (127.0.0.0/8)"},
        {"::1/128", "loopback (::1)"},
        {"169.254.0.0/16", "link-local (169.254.0.0/16, the clouds' metadata address among them)"},
        {"fe80::/10", "link-local (fe80::/10)"},
        {"0.0.0.0/8", "unspecified (0.0.0.0/8)"},
        {"::/128", "unspecified (::)"},
        {"100.100.100.200/32", "a cloud metadata address (Alibaba Cloud)"},
        {"fd00:ec2::254/128", "a cloud metadata address (AWS, IPv6)"},
        {"::/96", "IPv4-compatible (::/96, deprecated)"},
    }};
    std::vector<Range> out;
    out.reserve(kTable.size());
    std::string error;
    for (const auto& [text, name] : kTable) {
      out.push_back({*ParseCidr(text, &error), name});
    }
    return out;
  }();
  return ranges;
}

}  // namespace

std::optional<Cidr> ParseCidr(std::string_view text, std::string* error) {
  const std::size_t slash = text.find('/');
  const std::string_view address = text.substr(0, slash);
  const auto ip = ParseIp(address);
  if (!ip) {
    *error = Quoted(text) + " is not an IP address or CIDR block";
    return std::nullopt;
  }
  const bool v4 = address.find(':') == std::string_view::npos;
  const int max_bits = v4 ? 32 : 128;
  int bits = max_bits;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || bits < 0 ||
        bits > max_bits) {
      *error = Quoted(text) + " has a prefix length that is not 0 to " + std::to_string(max_bits);
      return std::nullopt;
    }
  }
  Cidr out{.prefix = *ip, .bits = v4 ? kMappedBits + bits : bits};
  for (int i = out.bits; i < 128; ++i) {
    out.prefix[static_cast<std::size_t>(i / 8)] &= static_cast<std::uint8_t>(~(0x80U >> (i % 8)));
  }
  return out;
}

std::optional<std::vector<Cidr>> ParseCidrList(std::string_view list, std::string* error) {
  std::vector<Cidr> out;
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    const auto block = ParseCidr(TrimWhitespace(list.substr(0, comma)), error);
    if (!block) return std::nullopt;
    out.push_back(*block);
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return out;
}

std::optional<std::string_view> RefusedRange(std::string_view ip) {
  const auto bytes = ParseIp(ip);
  if (!bytes) return std::nullopt;
  for (const Range& range : RefusedRanges()) {
    if (Contains(range.block, *bytes)) return range.name;
  }
  return std::nullopt;
}

std::string CheckSdkAddress(std::string_view ip, std::span<const Cidr> allowed) {
  const auto bytes = ParseIp(ip);
  if (!bytes) return "the address " + Quoted(ip) + " is not an IP address";
  const auto range = RefusedRange(ip);
  if (!range) return "";
  if (std::any_of(allowed.begin(), allowed.end(),
                  [&](const Cidr& block) { return Contains(block, *bytes); })) {
    return "";
  }
  return "the address " + std::string(ip) + " is " + std::string(*range) +
         ": refused unless --carbon-sdk-allowed-cidrs names it";
}

}  // namespace eoc::controller::carbon
