#include "kube/status.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/bounded_json.h"
#include "common/text.h"
#include "kube/json_limits.h"

namespace eoc::kube {
namespace {

// How much of an answer's message (a Status's, or a bare body's) is kept, in bytes before
// escaping (Printable).
constexpr std::size_t kMaxMessageBytes = 512;
// How much of a Status's reason is kept (the API's reasons are single words).
constexpr std::size_t kMaxReasonBytes = 64;

std::string ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

}  // namespace

std::string Status::ToString() const {
  std::string out;
  if (code != 0) out = std::to_string(code) + " ";
  out += reason.empty() ? "Unknown" : reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

Status DecodeStatus(int http_code, const std::string& body) {
  Status s;
  s.code = http_code;
  std::string error;  // a body that is not JSON, or too large or deep, is read as text
  const std::optional<nlohmann::json> parsed = ParseBoundedJson(
      body, {.max_depth = kMaxApiJsonDepth, .max_bytes = kMaxApiResponseBytes}, error);
  if (parsed && parsed->is_object() && parsed->value("kind", "") == "Status") {
    const nlohmann::json& doc = *parsed;
    if (const auto it = doc.find("code"); it != doc.end() && it->is_number_integer()) {
      // The Status's own code wins: a watch's ERROR event carries 410 inside a 200 answer.
      s.code = it->get<int>();
    }
    if (const auto it = doc.find("reason"); it != doc.end() && it->is_string()) {
      s.reason = Printable(it->get_ref<const std::string&>(), kMaxReasonBytes);
    }
    if (const auto it = doc.find("message"); it != doc.end() && it->is_string()) {
      s.message = Printable(it->get_ref<const std::string&>(), kMaxMessageBytes);
    }
  } else {
    std::string_view text = body;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    s.message = Printable(text, kMaxMessageBytes);
  }
  if (s.reason.empty()) s.reason = ReasonForCode(s.code);
  return s;
}

std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& value) {
  long long secs = 0;
  const char* first = value.data();
  const char* last = value.data() + value.size();
  while (first != last && *first == ' ') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, secs);
  if (ec != std::errc() || ptr == first || secs < 0) return std::nullopt;
  for (const char* p = ptr; p != last; ++p) {
    if (*p != ' ') return std::nullopt;
  }
  return std::chrono::seconds(secs);
}

}  // namespace eoc::kube
