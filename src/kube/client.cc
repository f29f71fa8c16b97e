#include "kube/client.h"

#include <algorithm>

#include "common/bounded_json.h"

namespace eoc::kube {
namespace {

using nlohmann::json;

// What the server is told to use for paging when the caller sets no limit on ListAll.
constexpr std::int64_t kDefaultPageSize = 500;
// How long past a watch's own timeoutSeconds the client waits on a silent stream.
constexpr std::chrono::seconds kWatchIdleMargin{30};
// The API server's own upper bound on a watch without timeoutSeconds (--min-request-timeout x 2).
constexpr std::int64_t kServerWatchTimeoutSeconds = 3600;

void AddQuery(std::string& path, const char* key, const std::string& value) {
  if (value.empty()) return;
  path += path.find('?') == std::string::npos ? '?' : '&';
  path += key;
  path += '=';
  path += PercentEncode(value);
}

std::string WithQuery(std::string path, const ListOptions& o, bool watch) {
  if (watch) AddQuery(path, "watch", "1");
  AddQuery(path, "labelSelector", o.label_selector);
  AddQuery(path, "fieldSelector", o.field_selector);
  AddQuery(path, "resourceVersion", o.resource_version);
  if (watch) {
    if (o.allow_watch_bookmarks) AddQuery(path, "allowWatchBookmarks", "true");
    if (o.timeout_seconds > 0) AddQuery(path, "timeoutSeconds", std::to_string(o.timeout_seconds));
  } else {
    if (o.limit > 0) AddQuery(path, "limit", std::to_string(o.limit));
    AddQuery(path, "continue", o.continue_token);
  }
  return path;
}

const char* ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

// A client-side refusal, before anything is sent.
Status Invalid(const std::string& message) { return Status{0, "Invalid", message, std::nullopt}; }

Status ErrorOf(const HttpResponse& response) {
  Status s = DecodeStatus(response.status, response.body);
  s.retry_after = ParseRetryAfter(response.retry_after);
  return s;
}

bool IsSuccess(int status) { return status >= 200 && status < 300; }

Result<Scale> ScaleOf(const ResourceRef& r, const Result<json>& doc) {
  if (!doc) return doc.error();
  try {
    return ParseScale(doc.value());
  } catch (const MappingError& e) {
    return Status{200, "InvalidResponse", r.QualifiedName() + " scale: " + e.what(), std::nullopt};
  }
}

}  // namespace

Result<std::optional<WatchEvent>> Watch::Next() {
  for (;;) {
    std::optional<std::string> line;
    try {
      line = stream_->NextLine();
    } catch (const TransportError& e) {
      return e.status();
    }
    if (!line) return std::optional<WatchEvent>();
    if (line->empty()) continue;
    try {
      return std::optional<WatchEvent>(ParseWatchEvent(*line));
    } catch (const MappingError& e) {
      return Status{0, "InvalidWatchEvent", e.what(), std::nullopt};
    }
  }
}

Client::Client(std::unique_ptr<Transport> transport, const ClientOptions& options,
               const Clock& clock)
    : transport_(std::move(transport)),
      options_(options),
      limiter_(options.qps, options.burst, clock),
      wake_(clock) {}

std::unique_ptr<Client> Client::Create(const RestConfig& config, const ClientOptions& options) {
  std::shared_ptr<CredentialSource> credentials = MakeCredentialSource(config, RealClock());
  return std::make_unique<Client>(
      MakeCpprestTransport(config, std::move(credentials), options.transport), options,
      RealClock());
}

void Client::Sleep(std::chrono::nanoseconds d) {
  // Not stoppable: a call has no Stop(), and its waits are bounded (a rate-limit turn, and at
  // most max_retries Retry-Afters of max_retry_after each).
  wake_.SleepFor(d, [] { return false; });
}

bool Client::ShouldRetry(const HttpResponse& response, int attempt) {
  // As client-go: a 429 or 5xx answer that says when to come back is retried after that long.
  if (attempt >= options_.max_retries) return false;
  if (response.status != 429 && response.status / 100 != 5) return false;
  const auto after = ParseRetryAfter(response.retry_after);
  if (!after) return false;
  Sleep(std::min<std::chrono::nanoseconds>(*after, options_.max_retry_after));
  return true;
}

Result<HttpResponse> Client::Call(const HttpRequest& request) {
  for (int attempt = 0;; ++attempt) {
    Sleep(limiter_.Reserve());
    HttpResponse response;
    try {
      response = transport_->Send(request);
    } catch (const TransportError& e) {
      return e.status();
    }
    if (ShouldRetry(response, attempt)) continue;
    if (!IsSuccess(response.status)) return ErrorOf(response);
    return response;
  }
}

Result<json> Client::CallJson(const HttpRequest& request) {
  auto response = Call(request);
  if (!response) return response.error();
  std::string error;
  std::optional<json> doc = ParseBoundedJson(
      response->body,
      {.max_depth = kMaxApiJsonDepth, .max_bytes = options_.transport.max_response_bytes}, error);
  if (!doc) {
    return Status{response->status, "InvalidResponse",
                  request.method + " " + request.path + ": the answer: " + error, std::nullopt};
  }
  return std::move(*doc);
}

Result<json> Client::Get(const ResourceRef& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  return CallJson({"GET", r.ObjectPath(ns, name, subresource), "", ""});
}

Result<ListPage> Client::List(const ResourceRef& r, const std::string& ns,
                              const ListOptions& options) {
  auto doc = CallJson({"GET", WithQuery(r.CollectionPath(ns), options, false), "", ""});
  if (!doc) return doc.error();
  try {
    return ParseListPage(std::move(doc).value());
  } catch (const MappingError& e) {
    return Status{200, "InvalidResponse", r.QualifiedName() + " list: " + e.what(), std::nullopt};
  }
}

Result<ListPage> Client::ListAll(const ResourceRef& r, const std::string& ns, ListOptions options) {
  if (options.limit <= 0) options.limit = kDefaultPageSize;
  const std::string requested_version = options.resource_version;
  ListPage all;
  for (bool first = true;; first = false) {
    auto page = List(r, ns, options);
    if (!page) {
      // As client-go's pager: a continue token that expired mid-list (410) falls back to one
      // list of everything at the version first asked for.
      if (first || !page.error().IsGone()) return page.error();
      options.limit = 0;
      options.continue_token.clear();
      options.resource_version = requested_version;
      return List(r, ns, options);
    }
    if (first) all.resource_version = page->resource_version;
    all.items.insert(all.items.end(), std::make_move_iterator(page->items.begin()),
                     std::make_move_iterator(page->items.end()));
    if (page->continue_token.empty()) return all;
    all.paged = true;
    options.continue_token = page->continue_token;
    // The token carries the version: the server refuses a page that names both (400).
    options.resource_version.clear();
  }
}

Result<json> Client::Create(const ResourceRef& r, const std::string& ns, const json& object,
                            const std::string& subresource) {
  if (subresource.empty()) {
    return CallJson({"POST", r.CollectionPath(ns), object.dump(), "application/json"});
  }
  std::string name;
  try {
    name = ParseObjectMeta(object).name;
  } catch (const MappingError& e) {
    return Invalid(r.QualifiedName() + " " + subresource + ": " + e.what());
  }
  return CallJson({"POST", r.ObjectPath(ns, name, subresource), object.dump(), "application/json"});
}

Result<json> Client::Update(const ResourceRef& r, const std::string& ns, const json& object,
                            const std::string& subresource) {
  std::string name;
  try {
    name = ParseObjectMeta(object).name;
  } catch (const MappingError& e) {
    return Invalid(r.QualifiedName() + " update: " + e.what());
  }
  return CallJson({"PUT", r.ObjectPath(ns, name, subresource), object.dump(), "application/json"});
}

Result<json> Client::Patch(const ResourceRef& r, const std::string& ns, const std::string& name,
                           PatchType type, const json& patch, const std::string& subresource) {
  if (type == PatchType::kJson && !patch.is_array()) {
    return Invalid(r.QualifiedName() + " patch: a JSON patch must be an array of operations");
  }
  if (type != PatchType::kJson && !patch.is_object()) {
    return Invalid(r.QualifiedName() + " patch: a merge patch must be an object");
  }
  return CallJson({"PATCH", r.ObjectPath(ns, name, subresource), patch.dump(), ContentType(type)});
}

Result<json> Client::Delete(const ResourceRef& r, const std::string& ns, const std::string& name,
                            const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty())
    body["preconditions"] = {{"uid", options.precondition_uid}};
  return CallJson({"DELETE", r.ObjectPath(ns, name), body.dump(), "application/json"});
}

std::chrono::milliseconds Client::WatchIdleTimeout(std::int64_t timeout_seconds) {
  const std::int64_t server = timeout_seconds > 0 ? timeout_seconds : kServerWatchTimeoutSeconds;
  return std::chrono::seconds(server) + kWatchIdleMargin;
}

Result<std::unique_ptr<Watch>> Client::StartWatch(const ResourceRef& r, const std::string& ns,
                                                  const ListOptions& options) {
  const HttpRequest request{"GET", WithQuery(r.CollectionPath(ns), options, true), "", ""};
  for (int attempt = 0;; ++attempt) {
    Sleep(limiter_.Reserve());
    StreamResult result;
    try {
      result = transport_->Stream(request, WatchIdleTimeout(options.timeout_seconds));
    } catch (const TransportError& e) {
      return e.status();
    }
    if (result.stream) return std::make_unique<Watch>(std::move(result.stream));
    if (ShouldRetry(result.response, attempt)) continue;
    return ErrorOf(result.response);
  }
}

Result<Scale> Client::GetScale(const ResourceRef& r, const std::string& ns,
                               const std::string& name) {
  return ScaleOf(r, Get(r, ns, name, "scale"));
}

Result<Scale> Client::SetReplicas(const ResourceRef& r, const std::string& ns,
                                  const std::string& name, std::int32_t replicas) {
  if (replicas < 0) return Invalid(r.QualifiedName() + " scale: replicas must not be negative");
  return ScaleOf(
      r, Patch(r, ns, name, PatchType::kMerge, {{"spec", {{"replicas", replicas}}}}, "scale"));
}

Result<json> Client::GetPath(const std::string& path) {
  if (path.empty() || path.front() != '/') return Invalid("path must start with '/': " + path);
  return CallJson({"GET", path, "", ""});
}

Result<std::string> Client::GetText(const std::string& path, const std::string& accept,
                                    std::chrono::milliseconds deadline) {
  if (path.empty() || path.front() != '/') return Invalid("path must start with '/': " + path);
  auto response = Call({"GET", path, "", "", accept, deadline});
  if (!response) return response.error();
  return std::move(response->body);
}

}  // namespace eoc::kube
