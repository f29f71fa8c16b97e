// Server addresses and URLs: the one parser that every part uses to split and check them (kube
// config's server URL and in-cluster address, the transport's scheme, api's URL fields, the
// HTTP server's listen addresses). Pure functions of their argument; results view the input.
//
//   eoc::SplitHttpUrl("https://[::1]:6443/prefix")  // {.scheme = "https", .authority =
//   "[::1]:6443",
//                                                   //  .rest = "/prefix"}
//   eoc::SplitHostPort("[::1]:6443", &error)        // {.host = "::1", .port = 6443}
//   eoc::IsServerUrl("https://h:6443")              // true; "https://h/?x=1" false
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace eoc {

// A port: decimal digits only (no sign, no spaces), 0 to 65535.
std::optional<std::uint16_t> ParsePort(std::string_view text);

// "host", "host:port", "[v6]" or "[v6]:port" (as a URL's authority or a listen address gives it).
struct HostPort {
  std::string_view host;  // without brackets; may be empty (":8080")
  std::optional<std::uint16_t> port;
  bool bracketed = false;  // the host was in brackets (an IPv6 address)
};
// Splits `text`; the host's characters are not checked. On a malformed one returns nullopt and
// sets *error to why (unbalanced brackets, an IPv6 host without them, a port that is not a number
// from 0 to 65535).
std::optional<HostPort> SplitHostPort(std::string_view text, std::string* error);

// The parts of an http:// or https:// URL that has no whitespace or control characters anywhere
// and a non-empty authority.
struct HttpUrl {
  std::string_view scheme;     // "http" or "https" (lower case, as written)
  std::string_view authority;  // up to the first '/', '?' or '#'
  std::string_view rest;       // path, query and fragment: the rest, from that character
};
// nullopt when `url` is not one (another scheme, no authority, a space or control character).
std::optional<HttpUrl> SplitHttpUrl(std::string_view url);

// An API server's authority: host[:port], where the host is a DNS name or IPv4 address (letters,
// digits, '-', '.', '_') or a bracketed IPv6 address (with an optional %zone), and the port, when
// given, is 1 to 65535.
bool IsServerAuthority(std::string_view authority);

// An API server's URL: http(s)://host[:port][/prefix] with IsServerAuthority. A path prefix is
// allowed (proxies such as Rancher's serve the API under one); userinfo, query and fragment are
// not.
bool IsServerUrl(std::string_view url);

}  // namespace eoc
