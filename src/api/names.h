// The textual forms the InferencePool API checks: Kubernetes object names, label keys and values,
// HTTP header names and URLs. Pure functions of their argument.
//
//   eoc::api::IsLabelKey("app.kubernetes.io/name")    // true
//   eoc::api::IsLabelValue("")                         // true: a label value may be empty
//   eoc::api::IsDnsSubdomain("vllm-llama")             // a Deployment's or ConfigMap's name
//   eoc::api::IsHttpUrl("https://carbon.example/api")  // true
#pragma once

#include <cstddef>
#include <string_view>

namespace eoc::api {

inline constexpr std::size_t kMaxDnsSubdomainLength = 253;
inline constexpr std::size_t kMaxLabelNameLength = 63;

// RFC 1123 subdomain as Kubernetes names objects: at most 253 characters of lowercase letters,
// digits, '-' and '.', each dot-separated part starting and ending with a letter or digit.
bool IsDnsSubdomain(std::string_view text);

// RFC 1123 label, as Kubernetes names namespaces: 1-63 characters of lowercase letters, digits
// and '-', starting and ending with a letter or digit.
bool IsDnsLabel(std::string_view text);

// A label key: an optional DNS subdomain prefix and '/', then a name of 1-63 characters of
// [A-Za-z0-9._-] that starts and ends with a letter or digit.
bool IsLabelKey(std::string_view text);

// A label value: empty, or at most 63 characters of [A-Za-z0-9._-] that start and end with a
// letter or digit.
bool IsLabelValue(std::string_view text);

// An HTTP header name (an RFC 9110 token): letters, digits and !#$%&'*+-.^_`|~.
bool IsHttpHeaderName(std::string_view text);

// "http://" or "https://" followed by a host, then anything without whitespace or control
// characters (eoc::SplitHttpUrl of common/url.h).
bool IsHttpUrl(std::string_view text);

// A model name as `models` and the eoc.dev/models annotation list it: 1-253 characters, none of
// them a comma, whitespace or a control character.
bool IsModelName(std::string_view text);

// An absolute URL path ("/metrics"): a '/' and then no whitespace or control characters.
bool IsUrlPath(std::string_view text);

// A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]* ("vllm:num_requests_running").
bool IsMetricName(std::string_view text);

// An apiVersion as a reference names it: "v1", or "group/version" ("apps/v1",
// "ray.io/v1alpha1"), the group a DNS subdomain and the version a DNS label.
bool IsApiVersion(std::string_view text);

// A kind: a letter, then letters and digits, at most 63 characters ("Deployment").
bool IsKind(std::string_view text);

}  // namespace eoc::api
