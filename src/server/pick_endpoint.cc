#include "server/pick_endpoint.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
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
#include "server/access_gate.h"
#include "server/pick_body.h"
#include "server/pick_headers.h"
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

// Fresh uniform 64 bits per pick: SplitMix64 (its finalizer is common/mix64.h's), seeded per
// thread.
std::uint64_t NextRandom() {
  thread_local std::uint64_t state = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                                     std::random_device{}() ^
                                     std::hash<std::thread::id>{}(std::this_thread::get_id());
  return Mix64(state += 0x9e3779b97f4a7c15ULL);
}

// A hex digit's value; nullopt for any other character.
std::optional<int> HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

// The %XX escapes of a path segment decoded (XX two hex digits); nullopt for a malformed one.
std::optional<std::string> PercentDecoded(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out.push_back(segment[i]);
      continue;
    }
    if (i + 2 >= segment.size()) return std::nullopt;
    const auto high = HexDigit(segment[i + 1]);
    const auto low = HexDigit(segment[i + 2]);
    if (!high || !low) return std::nullopt;
    out.push_back(static_cast<char>(*high * 16 + *low));
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

// Whether the JSON form's `pool` is "namespace/name".
bool IsPoolKey(std::string_view pool) {
  const std::size_t slash = pool.find('/');
  return slash != std::string_view::npos && slash != 0 && slash + 1 != pool.size() &&
         pool.find('/', slash + 1) == std::string_view::npos &&
         pool.size() <= routing::PoolDirectory::kMaxKeyBytes;
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

// What one thread reuses from pick to pick, so that a warm pick allocates nothing of its own.
struct Scratch {
  PickBody body;
  PickBodyScratch body_scratch;
  PickHeaders headers;
  std::string key;                         // "namespace/name" of a gateway path
  std::vector<routing::BlockHash> hashes;  // a prompt's
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace

// One pick's request context: what its answer and its metrics need, from its dispatch to its
// answer. A handler fills its thread's own (its text reusing the capacity); a pick that waits
// keeps a copy.
struct PickEndpoint::Context {
  Form form = Form::kJson;
  Clock::TimePoint start;  // the dispatch
  std::string pool;        // "namespace/name", as the request named it
  std::string model;
  bool found = false;        // the pool is this replica's: the metrics' label
  bool queued = false;       // it waited in the queue (from `decided`)
  Clock::TimePoint decided;  // when the engine decided
  nanoseconds wait{};        // the longest it could wait
  std::shared_ptr<const AccessControl::Identity> caller;  // who, when access control said
  std::string user;  // the end user a gateway named (x-eoc-fairness-key); empty: none

  // The label the metrics count it under: "" for a pool this replica does not have.
  std::string_view Label() const { return found ? std::string_view(pool) : std::string_view(); }
};

// One pick's inputs, from either form's parser: views into the request and the thread's scratch.
struct PickEndpoint::Inputs {
  routing::PickRequest request;
  std::optional<std::string_view> prompt;  // to hash, when the pool has prefix affinity
  std::optional<nanoseconds> wait;         // the request's own wait
};

// How one pick ends: the worker it was given, or the status, message and Retry-After of its
// refusal; and what the metrics count it as.
struct PickEndpoint::Ending {
  Outcome outcome = Outcome::kStrategy;
  const PickOutcome* picked = nullptr;  // when a worker was chosen
  int code = 200;
  std::string message;
  std::string retry_after;  // owned: OverShare's is made for the answer
};

namespace {

using Context = PickEndpoint::Context;
using Inputs = PickEndpoint::Inputs;
using Ending = PickEndpoint::Ending;

Ending Refused(Outcome outcome, int code, std::string message, std::string retry_after = {}) {
  return {.outcome = outcome,
          .code = code,
          .message = std::move(message),
          .retry_after = std::move(retry_after)};
}

Ending BadRequest(std::string message) {
  return Refused(Outcome::kBadRequest, 400, std::move(message));
}

// A pool that is not this replica's: unknown, or not loaded yet.
Ending UnknownPool(const Context& context, bool loaded) {
  if (loaded) {
    return Refused(Outcome::kUnknownPool, 404,
                   "pool " + context.pool + ": not found on this replica");
  }
  return Refused(Outcome::kNotPublished, 503,
                 "pool " + context.pool + ": this replica has not loaded its pools yet", "1");
}

// The engine's outcome as the endpoint answers it.
Ending EndingOf(const Context& context, const PickOutcome& out) {
  if (out.picked()) return {.outcome = OutcomeOf(out), .picked = &out};
  const std::string pool = "pool " + context.pool;
  const Outcome outcome = OutcomeOf(out);
  const int code = CodeOf(out.status);
  switch (out.status) {
    case PickStatus::kTooLarge:
      if (out.tokens_allowed > 0) {
        return Refused(outcome, code,
                       "the request asks for " + std::to_string(out.tokens_asked) +
                           " tokens (prompt plus expected), more than " + pool +
                           " allows (routing.admission.maxRequestTokens: " +
                           std::to_string(out.tokens_allowed) + ")");
      }
      return Refused(outcome, code,
                     "the request needs " + std::to_string(out.blocks_needed) +
                         " KV blocks, more than the largest worker of " + pool + " holds in all (" +
                         std::to_string(out.blocks_largest) + ")");
    case PickStatus::kUnknownModel:
      return Refused(
          outcome, code,
          "model " + Quoted(context.model) + ": " + pool + " does not list it in spec.models");
    case PickStatus::kQueueFull:
      return Refused(outcome, code,
                     pool + ": its queue is full (routing.admission.maxQueue picks wait already)",
                     "1");
    case PickStatus::kTimedOut:
      return Refused(
          outcome, code,
          pool + ": no worker had room within the wait of " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(context.wait).count()) +
              " ms");
    case PickStatus::kNotPublished:
      return Refused(outcome, code, pool + ": its routing table is not published yet", "1");
    case PickStatus::kPicked:
    case PickStatus::kNoRoom:
    case PickStatus::kQueued:
    case PickStatus::kUnavailable:
      break;
  }
  return Refused(outcome, code,
                 pool + ": no worker can take the request, and the pool cannot bring one up", "5");
}

// The inputs both forms share; each form sets the rest.
template <class Parsed>
Inputs InputsOf(const Parsed& parsed) {
  Inputs inputs{.request = {.model = parsed.model,
                            .prefix = parsed.prefix_hashes,
                            .prompt_tokens = parsed.prompt_tokens,
                            .expected_tokens = parsed.expected_tokens}};
  if (parsed.session_id) inputs.request.session = routing::SessionHashOf(*parsed.session_id);
  if (parsed.wait_ms) inputs.wait = std::chrono::milliseconds(*parsed.wait_ms);
  return inputs;
}

// This thread's context, reset for a new pick.
Context& NewContext(Form form, Clock::TimePoint start) {
  thread_local Context context;
  context.form = form;
  context.start = start;
  context.pool.clear();
  context.model.clear();
  context.found = false;
  context.queued = false;
  context.decided = start;
  context.wait = {};
  context.caller.reset();
  context.user.clear();
  return context;
}

// A deferred pick's place among the endpoint's waiting picks (Options::max_waiting): taken when
// the pick is deferred, given back once, when its answer is handed to its connection or its
// client abandons it, whichever comes first.
class WaitingPlace {
 public:
  explicit WaitingPlace(std::atomic<std::size_t>& waiting) : waiting_(waiting) {
    waiting_.fetch_add(1, std::memory_order_relaxed);
  }
  void GiveBack() {
    if (!given_back_.exchange(true, std::memory_order_relaxed)) {
      waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

 private:
  std::atomic<std::size_t>& waiting_;
  std::atomic<bool> given_back_{false};
};

// A pick that would have waited while `max_waiting` picks wait on this replica.
Ending WaitingFull(std::size_t max_waiting) {
  return Refused(Outcome::kWaitingFull, 429,
                 std::to_string(max_waiting) +
                     " picks wait on this replica (--pick-max-waiting): no worker has room",
                 "1");
}

// Who a capped pick came from, for its message: "caller \"gw\"" or "end user \"u1\" of ...".
std::string CapHolder(const Context& context, CallerCaps::Cap cap) {
  std::string caller =
      context.caller ? "caller " + Quoted(context.caller->user.username) : "the caller";
  if (cap != CallerCaps::Cap::kUser) return caller;
  return "end user " + Quoted(context.user) + " of " + caller;
}

// A pick that would have waited past its caller's cap, or its end user's, in the pool.
Ending CallerFull(const Context& context, CallerCaps::Cap cap, const CallerCaps::Options& caps) {
  const bool user = cap == CallerCaps::Cap::kUser;
  return Refused(
      Outcome::kCallerFull, 429,
      CapHolder(context, cap) + " has " +
          std::to_string(user ? caps.max_waiting_per_user : caps.max_waiting_per_caller) +
          " picks waiting in pool " + context.pool +
          (user ? " (--pick-max-waiting-per-user)" : " (--pick-max-waiting-per-caller)") +
          ": no worker has room",
      "1");
}

// A pick of a caller, or end user, over its share of the pool's KV cache while others wait.
Ending OverShare(const Context& context, const CallerCaps::Verdict& verdict,
                 const CallerCaps::Options& caps) {
  const bool user = verdict.share == CallerCaps::Cap::kUser;
  const double share = user ? caps.max_reserved_share_per_user : caps.max_reserved_share;
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(verdict.retry_after).count();
  return Refused(
      Outcome::kCallerFull, 429,
      CapHolder(context, verdict.share) + " has reserved its share (" +
          std::to_string(static_cast<int>(std::lround(share * 100))) + "%) of pool " +
          context.pool + "'s KV cache while " + (user ? "other end users'" : "other callers'") +
          " picks wait" +
          (user ? " (--pick-max-reserved-share-per-user)" : " (--pick-max-reserved-share)"),
      std::to_string(std::max<std::int64_t>(seconds, 1)));
}

}  // namespace

PickEndpoint::PickEndpoint(const PickPools& pools, PickMetrics& metrics, const Clock& clock,
                           Options options)
    : pools_(pools), metrics_(metrics), clock_(clock), options_(std::move(options)) {}

bool PickEndpoint::PoolsLoaded() const { return !options_.pools_loaded || options_.pools_loaded(); }

bool PickEndpoint::Allowed(const Request& request, Response& response, Context* context,
                           std::string_view verb, std::string_view ns) const {
  if (options_.access == nullptr) return true;
  const auto answer = Admit(*options_.access, request, {.verb = verb, .ns = ns});
  using Verdict = AccessControl::Verdict;
  switch (answer.verdict) {
    case Verdict::kAllowed:
      if (context != nullptr) context->caller = answer.identity;
      return true;
    case Verdict::kPending:
      return false;
    case Verdict::kUnauthenticated:
    case Verdict::kForbidden:
    case Verdict::kUnavailable:
      break;
  }
  if (context == nullptr) {
    AnswerRefusal(answer, response);
    return false;
  }
  const Outcome outcome = answer.verdict == Verdict::kUnauthenticated ? Outcome::kUnauthenticated
                          : answer.verdict == Verdict::kForbidden     ? Outcome::kForbidden
                                                                      : Outcome::kAccessUnavailable;
  const int code = StatusOf(answer.verdict);
  Finish(response, *context, Refused(outcome, code, answer.message, code == 503 ? "1" : ""));
  if (response.status() == 401) {
    response.AddHeader("WWW-Authenticate", kBearerChallenge);
  }
  return false;
}

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

void PickEndpoint::Record(const Context& context, Outcome outcome, int code) const {
  const Clock::TimePoint end = clock_.Now();
  metrics_.Record(context.Label(), outcome, code, end - context.start);
  if (context.queued) metrics_.RecordWait(context.Label(), end - context.decided);
}

void PickEndpoint::Finish(Response& response, const Context& context, const Ending& ending) const {
  if (ending.picked != nullptr) {
    const PickOutcome& out = *ending.picked;
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
  } else {
    // The JSON body names the real code in every form; auth mode sends it as a 403 that carries
    // the code in x-eoc-status.
    response.SetError(ending.code, ending.message);
    if (!ending.retry_after.empty()) response.AddHeader("Retry-After", ending.retry_after);
    if (context.form == Form::kAuth) {
      response.set_status(403);
      response.AddHeader("x-eoc-status", std::to_string(ending.code));
    }
  }
  Record(context, ending.outcome, response.status());
}

void PickEndpoint::Serve(const Request& request, Response& response, Context& context,
                         const PickPools::Entry& pool, Inputs& inputs) const {
  context.found = true;
  if (inputs.prompt) {
    if (const std::int32_t block_tokens = pool.state->PromptBlockTokens(); block_tokens > 0) {
      std::vector<routing::BlockHash>& hashes = ThreadScratch().hashes;
      hashes = routing::PrefixHashes(inputs.request.model, *inputs.prompt,
                                     static_cast<std::size_t>(block_tokens));
      inputs.request.prefix = hashes;
    }
  }
  const Clock::TimePoint now = clock_.Now();
  std::optional<nanoseconds> wait = inputs.wait;
  if (!wait && context.form == Form::kAuth) wait = options_.auth_mode_wait;
  const Clock::TimePoint deadline = routing::WaitDeadline(now, pool.http.queue_timeout, wait);
  context.decided = now;
  context.wait = deadline - now;
  // At max_waiting picks waiting on this replica, a pick that finds no room is refused rather
  // than queued. Read before the pick and counted when it is deferred, so a pick being decided on
  // each other I/O thread at the same moment may pass the bound by one.
  const bool waiting_full = waiting_.load(std::memory_order_relaxed) >= options_.max_waiting;
  // And its caller's caps in this pool, and its end user's (read the same way): over a share of
  // the pool's KV cache while others wait, it is refused now.
  const CallerCaps::Key caps_key{
      .caller = context.caller ? context.caller->key : std::string_view(),
      .pool = context.pool,
      .user = context.user};
  routing::PoolState::Reservation reservation;
  CallerCaps::Verdict verdict;
  if (options_.caps != nullptr) {
    reservation = pool.state->ReservationOf(inputs.request);
    verdict = options_.caps->Check(caps_key, reservation, now);
    if (verdict.share != CallerCaps::Cap::kNone) {
      Finish(response, context, OverShare(context, verdict, options_.caps->options()));
      return;
    }
  }
  const CallerCaps::Cap cap = verdict.waiting;
  // Made only when the engine queues the pick: the request is put off, takes its place among the
  // waiting picks (and its caller's), and the callback answers it through a copy of the context.
  std::optional<Later> later;
  std::shared_ptr<WaitingPlace> place;
  std::shared_ptr<CallerCaps::Place> caller_place;
  const auto make_done = [&]() -> routing::PickCallback {
    later = request.Defer();
    place = std::make_shared<WaitingPlace>(waiting_);
    if (options_.caps != nullptr) caller_place = options_.caps->Take(caps_key);
    Context kept = context;
    kept.queued = true;
    return [this, answer = *later, place, caller_place,
            kept = std::move(kept)](const PickOutcome& out) {
      place->GiveBack();
      if (caller_place) caller_place->GiveBack();
      answer.Answer([this, kept, out](Response& r) { Finish(r, kept, EndingOf(kept, out)); });
    };
  };
  const bool refused = waiting_full || cap != CallerCaps::Cap::kNone;
  const PickOutcome out =
      pool.state->Pick(inputs.request, NextRandom(), now,
                       {.deadline = deadline, .make_done = make_done, .refused = refused});
  // A pick placed, or waiting, holds its reservation (or will): metered to its caller.
  if (options_.caps != nullptr && (out.picked() || out.status == PickStatus::kQueued)) {
    options_.caps->Charge(caps_key, reservation, now);
  }
  if (!later) {  // decided at once
    const bool capped = refused && out.status == PickStatus::kQueueFull;
    Finish(response, context,
           capped && waiting_full               ? WaitingFull(options_.max_waiting)
           : capped && options_.caps != nullptr ? CallerFull(context, cap, options_.caps->options())
                                                : EndingOf(context, out));
    return;
  }
  if (out.status != PickStatus::kQueued) {  // the queue refused it: answered through the deferral
    place->GiveBack();
    if (caller_place) caller_place->GiveBack();
    later->Answer(
        [this, kept = context, out](Response& r) { Finish(r, kept, EndingOf(kept, out)); });
    return;
  }
  later->OnAbandon([this, weak = std::weak_ptr<routing::PoolState>(pool.state), ticket = out.ticket,
                    place, caller_place, kept = context](Abandon why) {
    place->GiveBack();
    if (caller_place) caller_place->GiveBack();
    if (const auto state = weak.lock()) state->Cancel(ticket);
    if (why == Abandon::kStopping) {
      Record(kept, Outcome::kShuttingDown, kept.form == Form::kAuth ? 403 : 503);
    }
  });
}

void PickEndpoint::PickJson(const Request& request, Response& response) const {
  Context& context = NewContext(Form::kJson, clock_.Now());
  Scratch& scratch = ThreadScratch();
  const std::string error = ParsePickBody(request.body(), scratch.body, scratch.body_scratch);
  if (!error.empty()) {
    Finish(response, context, BadRequest(error));
    return;
  }
  const PickBody& body = scratch.body;
  if (!IsPoolKey(body.pool)) {
    Finish(response, context,
           BadRequest("pool: must be \"namespace/name\", not " + Quoted(body.pool)));
    return;
  }
  if (!Allowed(request, response, &context, "create", body.pool.substr(0, body.pool.find('/')))) {
    return;
  }
  context.pool.assign(body.pool);
  context.model.assign(body.model);
  std::string_view user;
  if (std::string fairness = ParseFairnessKey(request, user); !fairness.empty()) {
    Finish(response, context, BadRequest(std::move(fairness)));
    return;
  }
  context.user.assign(user);
  const auto pool = pools_.Find(body.pool);
  if (pool == nullptr) {
    Finish(response, context, UnknownPool(context, PoolsLoaded()));
    return;
  }
  Inputs inputs = InputsOf(body);
  inputs.prompt = body.prompt;
  Serve(request, response, context, *pool, inputs);
}

void PickEndpoint::PickGateway(const Request& request, Response& response) const {
  Context& context = NewContext(Form::kGateway, clock_.Now());
  Scratch& scratch = ThreadScratch();
  const bool named = PoolKeyOf(request, scratch.key);
  if (named) {
    if (IsAuthMode(request)) context.form = Form::kAuth;
    if (!Allowed(request, response, &context, "create", request.params()[0])) return;
  }
  const auto pool = named ? pools_.Find(scratch.key) : nullptr;
  // The session header is the pool's own (sessionAffinity.header).
  const std::string error = ParsePickHeaders(
      request, pool != nullptr ? std::string_view(pool->http.session_header) : std::string_view(),
      scratch.headers);
  const PickHeaders& headers = scratch.headers;
  if (headers.auth_mode) context.form = Form::kAuth;
  if (!error.empty()) {
    Finish(response, context, BadRequest(error));
    return;
  }
  if (!named) {
    Finish(response, context,
           BadRequest("path: the pool must be /v1/pools/{namespace}/{name}/pick"));
    return;
  }
  context.pool.assign(scratch.key);
  context.model.assign(headers.model);
  context.user.assign(headers.fairness_key);
  if (pool == nullptr) {
    Finish(response, context, UnknownPool(context, PoolsLoaded()));
    return;
  }
  Inputs inputs = InputsOf(headers);
  Serve(request, response, context, *pool, inputs);
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

// `allowed` checks the caller's access to the pool's namespace (PickEndpoint::Allowed), before
// the pool is looked up.
std::optional<SessionTarget> FindSession(const PickPools& pools, const Request& request,
                                         Response& response,
                                         const std::function<bool(std::string_view)>& allowed) {
  SessionTarget target;
  if (!PoolKeyOf(request, target.key)) {
    response.SetError(400, "path: the pool must be /v1/pools/{namespace}/{name}/sessions/{id}");
    return std::nullopt;
  }
  if (!allowed(request.params()[0])) return std::nullopt;
  auto id = SessionIdOf(request, response);
  if (!id) return std::nullopt;
  target.id = std::move(*id);
  const auto entry = pools.Find(target.key);
  if (entry == nullptr) {
    response.SetError(404, "pool " + target.key + ": not found on this replica");
    return std::nullopt;
  }
  target.pool = entry->state;
  return target;
}

void NotBound(Response& response, const SessionTarget& target) {
  response.SetError(404, "session " + Quoted(target.id) + ": not bound to a worker of pool " +
                             target.key + " on this replica");
}

}  // namespace

void PickEndpoint::GetSession(const Request& request, Response& response) const {
  const auto target = FindSession(pools_, request, response, [&](std::string_view ns) {
    return Allowed(request, response, nullptr, "get", ns);
  });
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
  const auto target = FindSession(pools_, request, response, [&](std::string_view ns) {
    return Allowed(request, response, nullptr, "delete", ns);
  });
  if (!target) return;
  const auto table = target->pool->sessions();
  if (!table || !table->Forget(routing::SessionHashOf(target->id))) {
    NotBound(response, *target);
    return;
  }
  response.set_status(204);
}

}  // namespace eoc::server
