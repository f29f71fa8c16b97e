#include "server/pick_endpoint.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/mix64.h"
#include "routing/prefix_hash.h"
#include "routing/wait_queue.h"
#include "server/pick_body.h"
#include "telemetry/json_text.h"

namespace eoc::server {
namespace {

using routing::PickOutcome;
using routing::PickStatus;
using Outcome = PickMetrics::Outcome;
using std::chrono::nanoseconds;

constexpr std::string_view kDestinationHeader = "x-gateway-destination-endpoint";

// How a pick was asked for, and so how it is answered.
enum class Form : std::uint8_t {
  kJson,     // POST /v1/pick: a JSON answer
  kGateway,  // the gateway form: the answer in headers, errors with their real codes
  kAuth,     // the gateway form with x-eoc-auth-mode: 1: every failure is a 403
};

// What one thread reuses from pick to pick, so that a warm pick allocates nothing of its own.
struct Scratch {
  PickBody body;
  PickBodyScratch body_scratch;
  std::string key;                         // "namespace/name"
  std::vector<routing::BlockHash> hashes;  // the gateway header's, or a prompt's
  std::string text;                        // numbers and answers
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Fresh uniform 64 bits per pick: SplitMix64 (its finalizer is common/mix64.h's), seeded per
// thread.
std::uint64_t NextRandom() {
  thread_local std::uint64_t state = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                                     std::random_device{}() ^
                                     std::hash<std::thread::id>{}(std::this_thread::get_id());
  return Mix64(state += 0x9e3779b97f4a7c15ULL);
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A whole number from 0 to `max`, nothing else.
std::optional<std::int64_t> WholeNumber(std::string_view text, std::int64_t max) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

// The %XX escapes of a path segment decoded; nullopt for a malformed one.
std::optional<std::string> PercentDecoded(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out.push_back(segment[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= segment.size()) return std::nullopt;
    const auto [ptr, ec] =
        std::from_chars(segment.data() + i + 1, segment.data() + i + 3, value, 16);
    if (ec != std::errc() || ptr != segment.data() + i + 3) return std::nullopt;
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

// The pool's key from its path parameters, into `key`; false if they are not a namespace and a
// name.
bool PoolKeyOf(const Request& request, std::string& key) {
  const auto params = request.params();
  if (params.size() < 2 || params[0].empty() || params[1].empty()) return false;
  key.assign(params[0]).append("/").append(params[1]);
  return key.size() <= routing::PoolDirectory::kMaxKeyBytes;
}

int CodeOf(PickStatus status) {
  switch (status) {
    case PickStatus::kPicked:
      return 200;
    case PickStatus::kTooLarge:
      return 400;
    case PickStatus::kUnknownModel:
      return 404;
    case PickStatus::kQueueFull:
      return 429;
    case PickStatus::kTimedOut:
      return 504;
    case PickStatus::kNoRoom:
    case PickStatus::kQueued:
    case PickStatus::kUnavailable:
    case PickStatus::kNotPublished:
      break;
  }
  return 503;
}

Outcome OutcomeOf(const PickOutcome& out) {
  switch (out.status) {
    case PickStatus::kPicked:
      switch (out.reason) {
        case routing::PickReason::kSession:
          return out.new_session ? Outcome::kSessionNew : Outcome::kSessionHit;
        case routing::PickReason::kSessionOverflow:
          return Outcome::kSessionOverflow;
        case routing::PickReason::kPrefix:
          return Outcome::kPrefix;
        case routing::PickReason::kStrategy:
          return Outcome::kStrategy;
        case routing::PickReason::kQueued:
          return Outcome::kQueued;
      }
      return Outcome::kStrategy;
    case PickStatus::kTooLarge:
      return Outcome::kTooLarge;
    case PickStatus::kUnknownModel:
      return Outcome::kUnknownModel;
    case PickStatus::kQueueFull:
      return Outcome::kQueueFull;
    case PickStatus::kTimedOut:
      return Outcome::kTimedOut;
    case PickStatus::kNotPublished:
      return Outcome::kNotPublished;
    case PickStatus::kNoRoom:
    case PickStatus::kQueued:
    case PickStatus::kUnavailable:
      break;
  }
  return Outcome::kUnavailable;
}

// A failure, answered in the request's form: its own code, or in auth mode a 403 that carries
// the code in x-eoc-status. The JSON body names the real code either way.
void Fail(Response& response, Form form, int code, std::string_view message,
          std::string_view retry_after = {}) {
  response.SetError(code, message);
  if (!retry_after.empty()) response.AddHeader("Retry-After", retry_after);
  if (form == Form::kAuth && code != 200) {
    response.set_status(403);
    response.AddHeader("x-eoc-status", std::to_string(code));
  }
}

// What a pick is answered with, once its outcome is known.
struct Context {
  std::string_view pool;  // "namespace/name"
  std::string_view model;
  Form form = Form::kJson;
  nanoseconds wait{};  // the longest it could have waited
};

void Answer(Response& response, const Context& context, const PickOutcome& out) {
  if (out.picked()) {
    const routing::Worker& worker = out.worker();
    if (context.form == Form::kJson) {
      std::string& body = response.body();
      body.assign(R"({"endpoint":)");
      telemetry::AppendJsonString(body, worker.address);
      body.append(R"(,"pod":)");
      telemetry::AppendJsonString(body, worker.pod);
      body.append(R"(,"reason":")").append(routing::ToString(out.reason));
      body.append(R"(","generation":)").append(std::to_string(out.snapshot->generation()));
      body.push_back('}');
      response.set_content_type(kJsonContentType);
    } else {
      response.AddHeader(kDestinationHeader, worker.address);
      response.AddHeader("x-eoc-pod", worker.pod);
      response.AddHeader("x-eoc-reason", routing::ToString(out.reason));
    }
    return;
  }
  const std::string pool = "pool " + std::string(context.pool);
  const int code = CodeOf(out.status);
  switch (out.status) {
    case PickStatus::kTooLarge:
      Fail(response, context.form, code,
           "the request needs " + std::to_string(out.blocks_needed) +
               " KV blocks, more than the largest worker of " + pool + " holds in all (" +
               std::to_string(out.blocks_largest) + ")");
      return;
    case PickStatus::kUnknownModel:
      Fail(response, context.form, code,
           "model " + Quoted(context.model) + ": " + pool + " does not list it in spec.models");
      return;
    case PickStatus::kQueueFull:
      Fail(response, context.form, code,
           pool + ": its queue is full (routing.admission.maxQueue picks wait already)", "1");
      return;
    case PickStatus::kTimedOut:
      Fail(response, context.form, code,
           pool + ": no worker had room within the wait of " +
               std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(context.wait).count()) +
               " ms");
      return;
    case PickStatus::kNotPublished:
      Fail(response, context.form, code, pool + ": its routing table is not published yet", "1");
      return;
    case PickStatus::kPicked:
    case PickStatus::kNoRoom:
    case PickStatus::kQueued:
    case PickStatus::kUnavailable:
      break;
  }
  Fail(response, context.form, code,
       pool + ": no worker can take the request, and the pool cannot bring one up", "5");
}

}  // namespace

PickEndpoint::PickEndpoint(const routing::PoolDirectory& pools, PickMetrics& metrics,
                           const Clock& clock, Options options)
    : pools_(pools), metrics_(metrics), clock_(clock), options_(std::move(options)) {}

bool PickEndpoint::PoolsLoaded() const { return !options_.pools_loaded || options_.pools_loaded(); }

void PickEndpoint::Register(HttpServer& server) const {
  server.Handle("POST", "/v1/pick",
                [this](const Request& req, Response& resp) { PickJson(req, resp); });
  const auto gateway = [this](const Request& req, Response& resp) { PickGateway(req, resp); };
  server.Handle("GET", "/v1/pools/{namespace}/{name}/pick", gateway);
  // The gateway form reads nothing of the body: it is dropped as it arrives, never held.
  server.Handle("POST", "/v1/pools/{namespace}/{name}/pick", gateway, BodyUse::kDiscard);
  server.Handle("GET", "/v1/pools/{namespace}/{name}/sessions/{id}",
                [this](const Request& req, Response& resp) { GetSession(req, resp); });
  server.Handle("DELETE", "/v1/pools/{namespace}/{name}/sessions/{id}",
                [this](const Request& req, Response& resp) { DeleteSession(req, resp); });
}

namespace {

// One pick, parsed: the pool and the engine's request.
struct Parsed {
  routing::PickRequest request;
  std::optional<std::string_view> prompt;  // to hash, when the pool has prefix affinity
  std::optional<nanoseconds> wait;         // the request's own wait
};

// The shared part of both forms, once the inputs are parsed and the pool found: pick, and answer
// now or later.
void Serve(const std::shared_ptr<routing::PoolState>& pool,
           const routing::PoolState::EndpointSettings& settings, PickMetrics& metrics,
           const Clock& clock, const Request& request, Response& response, std::string_view key,
           Form form, Parsed& parsed, std::optional<nanoseconds> default_wait,
           Clock::TimePoint start) {
  Scratch& scratch = ThreadScratch();
  if (parsed.prompt && settings.prefix_block_tokens > 0) {
    scratch.hashes = routing::PrefixHashes(parsed.request.model, *parsed.prompt,
                                           static_cast<std::size_t>(settings.prefix_block_tokens));
    parsed.request.prefix = scratch.hashes;
  }
  const Clock::TimePoint now = clock.Now();
  PickOutcome out = pool->TryPick(parsed.request, NextRandom(), now);
  Context context{.pool = key, .model = parsed.request.model, .form = form};
  if (out.status != PickStatus::kNoRoom) {
    Answer(response, context, out);
    metrics.Record(key, OutcomeOf(out), response.status(), clock.Now() - start);
    return;
  }
  // No room now: wait in the queue, without this thread.
  const std::optional<nanoseconds> wait = parsed.wait ? parsed.wait : default_wait;
  const Clock::TimePoint deadline = routing::WaitDeadline(now, settings.queue_timeout, wait);
  context.wait = deadline - now;
  const Later later = request.Defer();
  // The answer's context outlives the request's views: the callback keeps its own copies.
  auto finish = [later, &metrics, &clock, key = std::string(key),
                 model = std::string(parsed.request.model), form, wait = context.wait, start,
                 now](const PickOutcome& outcome) {
    later.Answer([outcome, &metrics, &clock, key, model, form, wait, start, now](Response& resp) {
      Answer(resp, {.pool = key, .model = model, .form = form, .wait = wait}, outcome);
      const Clock::TimePoint end = clock.Now();
      metrics.Record(key, OutcomeOf(outcome), resp.status(), end - start);
      metrics.RecordWait(key, end - now);
    });
  };
  out = pool->Pick(parsed.request, NextRandom(), now, {.deadline = deadline, .done = finish});
  if (out.status == PickStatus::kQueued) {
    later.OnAbandon([weak = std::weak_ptr<routing::PoolState>(pool), ticket = out.ticket, &metrics,
                     &clock, key = std::string(key), form, start](Abandon why) {
      if (const auto state = weak.lock()) state->Cancel(ticket);
      if (why == Abandon::kStopping) {
        metrics.Record(key, Outcome::kShuttingDown, form == Form::kAuth ? 403 : 503,
                       clock.Now() - start);
      }
    });
    return;
  }
  finish(out);  // answered at once after all (refused, or placed as it was queued)
}

// A pool that is not in the directory: unknown, or not loaded yet.
void UnknownPool(PickMetrics& metrics, const Clock& clock, Response& response, std::string_view key,
                 Form form, bool loaded, Clock::TimePoint start) {
  if (loaded) {
    Fail(response, form, 404, "pool " + std::string(key) + ": not found on this replica");
  } else {
    Fail(response, form, 503,
         "pool " + std::string(key) + ": this replica has not loaded its pools yet", "1");
  }
  metrics.Record({}, loaded ? Outcome::kUnknownPool : Outcome::kNotPublished, response.status(),
                 clock.Now() - start);
}

}  // namespace

void PickEndpoint::PickJson(const Request& request, Response& response) const {
  const Clock::TimePoint start = clock_.Now();
  Scratch& scratch = ThreadScratch();
  const std::string error = ParsePickBody(request.body(), scratch.body, scratch.body_scratch);
  if (!error.empty()) {
    Fail(response, Form::kJson, 400, error);
    metrics_.Record({}, Outcome::kBadRequest, 400, clock_.Now() - start);
    return;
  }
  const PickBody& body = scratch.body;
  const std::size_t slash = body.pool.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == body.pool.size() ||
      body.pool.find('/', slash + 1) != std::string_view::npos ||
      body.pool.size() > routing::PoolDirectory::kMaxKeyBytes) {
    Fail(response, Form::kJson, 400, "pool: must be \"namespace/name\", not " + Quoted(body.pool));
    metrics_.Record({}, Outcome::kBadRequest, 400, clock_.Now() - start);
    return;
  }
  Parsed parsed;
  parsed.request.model = body.model;
  if (body.session_id) parsed.request.session = routing::SessionHashOf(*body.session_id);
  parsed.request.prefix = body.prefix_hashes;
  parsed.request.prompt_tokens = body.prompt_tokens;
  parsed.request.expected_tokens = body.expected_tokens;
  parsed.prompt = body.prompt;
  if (body.wait_ms) parsed.wait = std::chrono::milliseconds(*body.wait_ms);
  const auto pool = pools_.Find(body.pool);
  if (pool == nullptr) {
    UnknownPool(metrics_, clock_, response, body.pool, Form::kJson, PoolsLoaded(), start);
    return;
  }
  Serve(pool, pool->endpoint_settings(), metrics_, clock_, request, response, body.pool,
        Form::kJson, parsed, std::nullopt, start);
}

void PickEndpoint::PickGateway(const Request& request, Response& response) const {
  const Clock::TimePoint start = clock_.Now();
  Scratch& scratch = ThreadScratch();
  Form form = Form::kGateway;
  if (const auto mode = request.header("x-eoc-auth-mode")) {
    const std::string_view value = Trim(*mode);
    if (value == "1") {
      form = Form::kAuth;
    } else if (value != "0") {
      Fail(response, form, 400, "header x-eoc-auth-mode: must be 1 or 0, not " + Quoted(value));
      metrics_.Record({}, Outcome::kBadRequest, 400, clock_.Now() - start);
      return;
    }
  }
  auto bad = [&](const std::string& message) {
    Fail(response, form, 400, message);
    metrics_.Record({}, Outcome::kBadRequest, response.status(), clock_.Now() - start);
  };
  if (!PoolKeyOf(request, scratch.key)) {
    bad("path: the pool must be /v1/pools/{namespace}/{name}/pick");
    return;
  }
  Parsed parsed;
  if (const auto model = request.header("x-model")) {
    if (model->size() > routing::kMaxModelNameBytes) {
      bad("header x-model: at most " + std::to_string(routing::kMaxModelNameBytes) + " bytes");
      return;
    }
    parsed.request.model = Trim(*model);
  }
  for (const auto& [name, field] :
       {std::pair{"x-eoc-prompt-tokens", &parsed.request.prompt_tokens},
        std::pair{"x-eoc-expected-tokens", &parsed.request.expected_tokens}}) {
    if (const auto value = request.header(name)) {
      const auto n = WholeNumber(Trim(*value), kMaxPickTokens);
      if (!n) {
        bad(std::string("header ") + name + ": must be a whole number from 0 to " +
            std::to_string(kMaxPickTokens));
        return;
      }
      *field = *n;
    }
  }
  if (const auto value = request.header("x-eoc-wait-ms")) {
    const auto n = WholeNumber(Trim(*value), kMaxPickWaitMs);
    if (!n) {
      bad("header x-eoc-wait-ms: must be a whole number from 0 to " +
          std::to_string(kMaxPickWaitMs));
      return;
    }
    parsed.wait = std::chrono::milliseconds(*n);
  }
  if (const auto value = request.header("x-eoc-prefix-hashes")) {
    scratch.hashes.clear();
    std::string_view list = *value;
    std::size_t index = 0;
    while (!Trim(list).empty()) {
      const std::size_t comma = list.find(',');
      const std::string_view item = Trim(list.substr(0, comma));
      const auto hash = routing::ParseBlockHash(item);
      if (!hash) {
        bad("header x-eoc-prefix-hashes: item " + std::to_string(index) +
            " must be 16 hex digits, not " + Quoted(item));
        return;
      }
      if (scratch.hashes.size() < routing::kMaxPrefixBlocks) scratch.hashes.push_back(*hash);
      ++index;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    parsed.request.prefix = scratch.hashes;
  }
  const auto pool = pools_.Find(scratch.key);
  if (pool == nullptr) {
    UnknownPool(metrics_, clock_, response, scratch.key, form, PoolsLoaded(), start);
    return;
  }
  const routing::PoolState::EndpointSettings settings = pool->endpoint_settings();
  // The session header is the pool's own (sessionAffinity.header).
  if (const auto session = request.header(settings.session_header)) {
    const std::string_view id = Trim(*session);
    if (id.size() > routing::kMaxSessionIdBytes) {
      bad("header " + settings.session_header + ": at most " +
          std::to_string(routing::kMaxSessionIdBytes) + " bytes");
      return;
    }
    if (!id.empty()) parsed.request.session = routing::SessionHashOf(id);
  }
  const std::optional<nanoseconds> default_wait =
      form == Form::kAuth ? std::optional<nanoseconds>(options_.auth_mode_wait) : std::nullopt;
  Serve(pool, settings, metrics_, clock_, request, response, scratch.key, form, parsed,
        default_wait, start);
}

namespace {

// The session of a sessions path, decoded, or an error answered.
std::optional<std::string> SessionIdOf(const Request& request, Response& response) {
  const auto params = request.params();
  auto id = params.size() >= 3 ? PercentDecoded(params[2]) : std::nullopt;
  if (!id || id->empty()) {
    response.SetError(400, "path: the session id is not a valid percent-encoded segment");
    return std::nullopt;
  }
  if (id->size() > routing::kMaxSessionIdBytes) {
    response.SetError(400, "path: the session id is over " +
                               std::to_string(routing::kMaxSessionIdBytes) + " bytes");
    return std::nullopt;
  }
  return id;
}

// What a sessions request names: its pool (found) and the session id, decoded; nullopt once
// the error is answered.
struct SessionTarget {
  std::string key;
  std::string id;
  std::shared_ptr<routing::PoolState> pool;
};

std::optional<SessionTarget> FindSession(const routing::PoolDirectory& pools,
                                         const Request& request, Response& response) {
  SessionTarget target;
  if (!PoolKeyOf(request, target.key)) {
    response.SetError(400, "path: the pool must be /v1/pools/{namespace}/{name}/sessions/{id}");
    return std::nullopt;
  }
  auto id = SessionIdOf(request, response);
  if (!id) return std::nullopt;
  target.id = std::move(*id);
  target.pool = pools.Find(target.key);
  if (target.pool == nullptr) {
    response.SetError(404, "pool " + target.key + ": not found on this replica");
    return std::nullopt;
  }
  return target;
}

void NotBound(Response& response, const SessionTarget& target) {
  response.SetError(404, "session " + Quoted(target.id) + ": not bound to a worker of pool " +
                             target.key + " on this replica");
}

}  // namespace

void PickEndpoint::GetSession(const Request& request, Response& response) const {
  const auto target = FindSession(pools_, request, response);
  if (!target) return;
  const auto table = target->pool->sessions();
  const Clock::TimePoint now = clock_.Now();
  const auto entry = table ? table->Peek(routing::SessionHashOf(target->id), now) : std::nullopt;
  if (!entry) {
    NotBound(response, *target);
    return;
  }
  std::string& body = response.body();
  body.assign(R"({"session":)");
  telemetry::AppendJsonString(body, target->id);
  const auto snapshot = target->pool->snapshot();
  const auto index = snapshot ? snapshot->IndexOf(entry->worker) : std::nullopt;
  if (index) {
    body.append(R"(,"pod":)");
    telemetry::AppendJsonString(body, snapshot->worker(*index).pod);
    body.append(R"(,"endpoint":)");
    telemetry::AppendJsonString(body, snapshot->worker(*index).address);
  } else {
    body.append(R"(,"pod":null,"endpoint":null)");  // its worker left: the next turn rebinds it
  }
  body.append(R"(,"expires_in_seconds":)");
  if (entry->expires == Clock::TimePoint::max()) {
    body.append("null");
  } else {
    body.append(std::to_string(
        std::chrono::duration_cast<std::chrono::seconds>(entry->expires - now).count()));
  }
  body.push_back('}');
  response.set_content_type(kJsonContentType);
}

void PickEndpoint::DeleteSession(const Request& request, Response& response) const {
  const auto target = FindSession(pools_, request, response);
  if (!target) return;
  const auto table = target->pool->sessions();
  if (!table || !table->Forget(routing::SessionHashOf(target->id))) {
    NotBound(response, *target);
    return;
  }
  response.set_status(204);
}

}  // namespace eoc::server
