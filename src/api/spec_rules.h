// What each field of InferencePool.spec accepts: the bounds and syntax that the parser checks as
// it reads a field and Validate() checks again on a spec built in code. The CRD schema in
// crds/eoc.dev_inferencepools.yaml repeats them. Internal to src/api.
//
//   reader.Int("targetPort", spec.target_port, eoc::api::internal::rules::kPort);
#pragma once

#include <cstddef>

#include "api/json_reader.h"
#include "api/names.h"

namespace eoc::api::internal::rules {

inline constexpr IntRange kPort{.min = 1, .max = 65535, .between = true};

inline constexpr std::size_t kMaxModels = 64;
inline constexpr StringRule kModelName{
    .max_length = 253,
    .valid = IsModelName,
    .expected = "must be a model name: no commas, whitespace or control characters"};

inline constexpr StringRule kMetricsPath{
    .max_length = 1024,
    .valid = IsUrlPath,
    .expected = "must be a URL path: a '/' and then no whitespace or control characters"};
inline constexpr IntRange kMetricsSeconds{.min = 1, .max = 3600};
inline constexpr StringRule kMetricName{
    .max_length = 256,
    .valid = IsMetricName,
    .expected = "must be a Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*"};

inline constexpr StringRule kApiVersion{
    .max_length = 317,
    .valid = IsApiVersion,
    .expected =
        "must be an apiVersion such as v1 or apps/v1: a version, or a DNS subdomain, '/' "
        "and a version"};
inline constexpr StringRule kKind{
    .max_length = 63,
    .valid = IsKind,
    .expected = "must be a kind such as Deployment: a letter, then letters and digits"};
inline constexpr StringRule kObjectName{
    .max_length = 253,
    .valid = IsDnsSubdomain,
    .expected =
        "must be an object name: lowercase letters, digits, '-' and '.', starting and "
        "ending with a letter or digit"};

inline constexpr IntRange kMinReplicas{.min = 0};
inline constexpr IntRange kMaxReplicas{.min = 1};
inline constexpr IntRange kInitialReplicas{.min = 0};
inline constexpr NumberRange kTargetOngoingRequests{.min = 0, .exclusive_min = true, .max = 1e6};
inline constexpr NumberRange kDelaySeconds{.min = 0, .max = 604800};  // a week
inline constexpr NumberRange kLookBackPeriodSeconds{.min = 0, .exclusive_min = true, .max = 604800};
inline constexpr NumberRange kDrainTimeoutSeconds{.min = 0, .max = 86400};  // a day
inline constexpr NumberRange kFactor{.min = 0, .exclusive_min = true, .max = 100};

inline constexpr StringRule kHeader{
    .max_length = 256,
    .valid = IsHttpHeaderName,
    .expected = "must be an HTTP header name: letters, digits and !#$%&'*+-.^_`|~"};
inline constexpr IntRange kTtlSeconds{.min = 1, .max = 31'536'000};  // a year
inline constexpr IntRange kMaxSessions{.min = 1, .max = 100'000'000};
inline constexpr IntRange kBlockSizeTokens{.min = 1, .max = 4096};
inline constexpr IntRange kMaxBlocks{.min = 1, .max = 100'000'000};
inline constexpr NumberRange kLoadMargin{.min = 0, .max = 10};  // in busyness
inline constexpr IntRange kMaxQueue{.min = 0, .max = 1'000'000};
inline constexpr NumberRange kQueueTimeoutSeconds{.min = 0, .max = 3600};
inline constexpr IntRange kMaxRequestTokens{.min = 0, .max = 100'000'000};
inline constexpr IntRange kTokens{.min = 1, .max = 10'000'000};
inline constexpr IntRange kMaxConcurrency{.min = 1, .max = 1'000'000};
inline constexpr IntRange kPublishIntervalSeconds{.min = 1, .max = 3600};
inline constexpr IntRange kPublishThreshold{.min = 1, .max = 1000};  // of a weight's 1000

inline constexpr std::size_t kMaxProfiles = 64;
inline constexpr StringRule kAccelerator{
    .max_length = 63,
    .valid = IsLabelValue,
    .expected =
        "must be a label value (as the node label nvidia.com/gpu.product): "
        "[A-Za-z0-9._-], starting and ending with a letter or digit"};
inline constexpr StringRule kNamespace{
    .max_length = 63,
    .valid = IsDnsLabel,
    .expected =
        "must be a namespace name: lowercase letters, digits and '-', starting and ending "
        "with a letter or digit"};
inline constexpr NumberRange kWatts{.min = 0, .max = 1e6};
inline constexpr NumberRange kTokensPerSecond{.min = 0, .exclusive_min = true, .max = 1e9};

inline constexpr StringRule kZoneLabel{
    .max_length = 317,
    .valid = IsLabelKey,
    .expected =
        "must be a label key: an optional DNS subdomain prefix and '/', then 1-63 "
        "characters of [A-Za-z0-9._-] that start and end with a letter or digit"};
inline constexpr std::size_t kMaxStaticZones = 1024;
inline constexpr StringRule kZone{
    .max_length = 63,
    .valid = IsLabelValue,
    .expected =
        "must be a zone as a node label value: [A-Za-z0-9._-], starting and ending with "
        "a letter or digit"};
inline constexpr NumberRange kCarbonIntensity{.min = 0, .max = 100000};  // gCO2e/kWh
inline constexpr IntRange kMaxStaleSeconds{.min = 0, .max = 604'800};    // a week
inline constexpr StringRule kUrl{
    .max_length = 2048, .valid = IsHttpUrl, .expected = "must be an http:// or https:// URL"};

}  // namespace eoc::api::internal::rules
