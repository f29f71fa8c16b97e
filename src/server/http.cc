#include "server/http.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "common/text.h"
#include "telemetry/json_text.h"

namespace eoc::server {
namespace {

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return LowerAscii(x) == LowerAscii(y);
         });
}

// RFC 9110 section 5.6.2: tchar.
bool IsToken(std::string_view text) {
  constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           kPunctuation.find(c) != std::string_view::npos;
  });
}

}  // namespace

Request::Request(std::string_view method, std::string_view target, std::span<const Header> headers,
                 std::string_view body, internal::Deferrer* deferrer,
                 const PeerCertificate* peer_certificate)
    : method_(method),
      target_(target),
      path_(target),
      headers_(headers),
      body_(body),
      deferrer_(deferrer),
      peer_certificate_(peer_certificate) {
  if (const std::size_t q = target.find('?'); q != std::string_view::npos) {
    path_ = target.substr(0, q);
    query_ = target.substr(q + 1);
  }
}

std::optional<std::string_view> Request::header(std::string_view name) const {
  // A linear scan: requests carry a dozen headers, and this needs no index built per request.
  for (const Header& h : headers_) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return std::nullopt;
}

Later Request::Defer() const {
  if (deferrer_ == nullptr) {
    throw std::logic_error("Request::Defer: this request came on no connection to answer on");
  }
  return deferrer_->Defer();
}

void Response::set_status(int status) {
  if (status < 200 || status > 599) {
    throw std::invalid_argument("response status " + std::to_string(status) +
                                " is not between 200 and 599");
  }
  status_ = status;
}

void Response::set_content_type(std::string_view content_type) {
  if (content_type.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    throw std::invalid_argument("content type " + Quoted(content_type) +
                                " has a line break or NUL in it");
  }
  content_type_.assign(content_type);
}

void Response::AddHeader(std::string_view name, std::string_view value) {
  if (!IsToken(name))
    throw std::invalid_argument("header name " + Quoted(name) + " is not a token");
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
    throw std::invalid_argument("header " + std::string(name) +
                                ": value has a line break or NUL in it");
  }
  constexpr std::array<std::string_view, 5> kServerOwned = {
      "content-length", "content-type", "connection", "date", "transfer-encoding"};
  if (std::any_of(kServerOwned.begin(), kServerOwned.end(),
                  [&](std::string_view owned) { return EqualsIgnoreCase(name, owned); })) {
    throw std::invalid_argument("header " + std::string(name) + " is set by the server");
  }
  header_lines_.append(name).append(": ").append(value).append("\r\n");
}

void Response::SetError(int status, std::string_view message) {
  set_status(status);
  content_type_.assign(kJsonContentType);
  body_.assign("{\"code\":").append(std::to_string(status)).append(",\"message\":");
  telemetry::AppendJsonString(body_, message);
  body_.push_back('}');
}

void Response::Reset() {
  status_ = 200;
  content_type_.assign(kDefaultContentType);
  body_.clear();
  header_lines_.clear();
}

}  // namespace eoc::server
