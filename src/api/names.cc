#include "api/names.h"

#include <algorithm>
#include <optional>

#include "common/url.h"

namespace eoc::api {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(char c) { return IsAlpha(c) || (c >= '0' && c <= '9'); }

// Whitespace (as ASCII knows it), control characters and DEL.
bool IsSpaceOrControl(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte <= 0x20 || byte == 0x7f;
}

// The name part of a label key, or a non-empty label value.
bool IsLabelName(std::string_view name) {
  if (name.empty() || name.size() > kMaxLabelNameLength) return false;
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  return std::ranges::all_of(name,
                             [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool NoSpaceOrControl(std::string_view text) {
  return std::ranges::none_of(text, IsSpaceOrControl);
}

}  // namespace

bool IsDnsLabel(std::string_view text) {
  if (text.empty() || text.size() > kMaxLabelNameLength) return false;
  if (!IsLowerAlnum(text.front()) || !IsLowerAlnum(text.back())) return false;
  return std::ranges::all_of(text, [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsDnsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxDnsSubdomainLength) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    if (!IsDnsLabel(text.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsLabelKey(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return IsLabelName(text);
  return IsDnsSubdomain(text.substr(0, slash)) && IsLabelName(text.substr(slash + 1));
}

bool IsLabelValue(std::string_view text) { return text.empty() || IsLabelName(text); }

bool IsHttpHeaderName(std::string_view text) {
  constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::ranges::all_of(text, [&](char c) {
    return IsAlnum(c) || kTokenPunctuation.find(c) != std::string_view::npos;
  });
}

bool IsHttpUrl(std::string_view text) {
  const std::optional<HttpUrl> url = SplitHttpUrl(text);
  return url && !url->authority.starts_with(':');  // ":8080" names no host
}

bool IsModelName(std::string_view text) {
  if (text.empty() || text.size() > kMaxDnsSubdomainLength) return false;
  return text.find(',') == std::string_view::npos && NoSpaceOrControl(text);
}

bool IsUrlPath(std::string_view text) { return text.starts_with('/') && NoSpaceOrControl(text); }

bool IsMetricName(std::string_view text) {
  const auto allowed = [](char c) { return IsAlpha(c) || c == '_' || c == ':'; };
  if (text.empty() || !allowed(text.front())) return false;
  return std::ranges::all_of(text, [&](char c) { return allowed(c) || (c >= '0' && c <= '9'); });
}

bool IsApiVersion(std::string_view text) {
  const std::size_t slash = text.find('/');
  const std::string_view version = slash == std::string_view::npos ? text : text.substr(slash + 1);
  if (slash != std::string_view::npos && !IsDnsSubdomain(text.substr(0, slash))) return false;
  return IsDnsLabel(version);  // "v1", "v2beta1": a CRD's version is a DNS label
}

bool IsKind(std::string_view text) {
  if (text.empty() || text.size() > kMaxLabelNameLength || !IsAlpha(text.front())) return false;
  return std::ranges::all_of(text, IsAlnum);
}

}  // namespace eoc::api
