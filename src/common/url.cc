#include "common/url.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/text.h"

namespace eoc {
namespace {

bool IsSpaceOrControl(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte <= 0x20 || byte == 0x7f;
}

bool OnlyChars(std::string_view s, std::string_view allowed_punctuation) {
  return std::ranges::all_of(s, [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           allowed_punctuation.find(c) != std::string_view::npos;
  });
}

}  // namespace

std::optional<std::uint16_t> ParsePort(std::string_view text) {
  std::uint16_t port = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, port);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return port;
}

std::optional<HostPort> SplitHostPort(std::string_view text, std::string* error) {
  HostPort out;
  std::string_view after_host;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *error = "unbalanced brackets";
      return std::nullopt;
    }
    out.host = text.substr(1, close - 1);
    out.bracketed = true;
    after_host = text.substr(close + 1);
    if (!after_host.empty() && !after_host.starts_with(':')) {
      *error = "unexpected " + Quoted(after_host) + " after ']'";
      return std::nullopt;
    }
  } else {
    const std::size_t colon = std::min(text.find(':'), text.size());
    out.host = text.substr(0, colon);
    after_host = text.substr(colon);
    if (text.find_first_of("[]") != std::string_view::npos) {
      *error = "unbalanced brackets";
      return std::nullopt;
    }
    if (after_host.find(':', 1) != std::string_view::npos) {
      *error = "an IPv6 host needs brackets, as in [::1]:8080";
      return std::nullopt;
    }
  }
  if (after_host.empty()) return out;
  const std::string_view port = after_host.substr(1);
  out.port = ParsePort(port);
  if (!out.port) {
    *error = "port " + Quoted(port) + " is not a number from 0 to 65535";
    return std::nullopt;
  }
  return out;
}

std::optional<HttpUrl> SplitHttpUrl(std::string_view url) {
  HttpUrl out;
  if (url.starts_with("https://")) {
    out.scheme = url.substr(0, 5);
  } else if (url.starts_with("http://")) {
    out.scheme = url.substr(0, 4);
  } else {
    return std::nullopt;
  }
  if (std::ranges::any_of(url, IsSpaceOrControl)) return std::nullopt;
  const std::string_view after_scheme = url.substr(out.scheme.size() + 3);
  const std::size_t end = std::min(after_scheme.find_first_of("/?#"), after_scheme.size());
  out.authority = after_scheme.substr(0, end);
  out.rest = after_scheme.substr(end);
  if (out.authority.empty()) return std::nullopt;
  return out;
}

bool IsServerAuthority(std::string_view authority) {
  std::string error;
  const std::optional<HostPort> hp = SplitHostPort(authority, &error);
  if (!hp || hp->host.empty() || hp->port == 0) return false;
  return hp->bracketed ? OnlyChars(hp->host, ":.%") : OnlyChars(hp->host, "-._");
}

bool IsServerUrl(std::string_view url) {
  const std::optional<HttpUrl> parts = SplitHttpUrl(url);
  return parts && url.find_first_of("?#@") == std::string_view::npos &&
         IsServerAuthority(parts->authority);
}

}  // namespace eoc
