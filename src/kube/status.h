// The outcome of an API call that did not succeed: a decoded metav1.Status, or a client-side
// failure (no answer, timeout, TLS) in the same shape, so callers handle both alike.
//
//   eoc::kube::Result<nlohmann::json> r = client.Get(kDeployments, "default", "web");
//   if (!r) {
//     if (r.error().IsNotFound()) { ... }
//     log("get failed: " + r.error().ToString());   // "404 NotFound: deployments.apps \"web\" not
//     found"
//   }
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace eoc::kube {

struct Status {
  // The HTTP status code; 0 when no HTTP answer came (see `reason`).
  int code = 0;
  // metav1.Status reason ("NotFound", "Conflict", "Expired", ...), or for client-side failures one
  // of kReasonTransport, kReasonTimeout, kReasonTooLarge, kReasonCancelled, kReasonCredentials.
  std::string reason;
  std::string message;
  // Retry-After of a 429 (or 5xx) answer, when the server sent one.
  std::optional<std::chrono::seconds> retry_after;

  bool IsNotFound() const { return code == 404; }
  bool IsConflict() const { return code == 409; }
  bool IsAlreadyExists() const { return code == 409 && reason == "AlreadyExists"; }
  bool IsGone() const { return code == 410; }  // "Expired": the resourceVersion is too old
  bool IsForbidden() const { return code == 403; }
  bool IsUnauthorized() const { return code == 401; }
  bool IsTooManyRequests() const { return code == 429; }
  bool IsTransport() const { return code == 0; }
  // "409 Conflict: <message>" or "Timeout: <message>".
  std::string ToString() const;
};

inline constexpr const char* kReasonTransport = "TransportError";
inline constexpr const char* kReasonTimeout = "Timeout";
inline constexpr const char* kReasonTooLarge = "ResponseTooLarge";
inline constexpr const char* kReasonCancelled = "Cancelled";
inline constexpr const char* kReasonCredentials = "CredentialError";

// Decodes an error answer. A body that is a metav1.Status gives code, reason and message; any other
// body (a proxy's HTML page, plain text) keeps the HTTP code, a reason named after it, and the
// start of the body as the message.
Status DecodeStatus(int http_code, const std::string& body);

// Parses a Retry-After header value in seconds ("3"); an HTTP date or garbage gives nullopt.
std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& value);

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const Status& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace eoc::kube
