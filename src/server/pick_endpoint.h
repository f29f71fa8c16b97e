// The pick endpoint (DESIGN.md, "The pick endpoint"): the routing engine served over HTTP, what
// gateways call on every request to learn which worker should take it. Every replica serves it
// from its own pool directory, leader or not.
//
//   eoc::server::PickPools pools;          // the controller writes it beside the pool directory
//   eoc::server::PickMetrics metrics;
//   eoc::server::PickEndpoint picks(pools, metrics, eoc::RealClock());
//   picks.Register(server);   // before server.Start()
//
// Routes:
//   POST /v1/pick                              JSON in, JSON out:
//        {"pool":"ns/name","model":"m","session_id":"s","prompt_tokens":900,
//         "expected_tokens":200,"prefix_hashes":["3f2a9c0d1e4b5a67"] |
//         "prompt":"...","wait_ms":5000}
//        -> 200 {"endpoint":"10.0.3.7:8000","pod":"ns/vllm-0","reason":"session","generation":4}
//   GET|POST /v1/pools/{namespace}/{name}/pick the gateway form: inputs from headers (the pool's
//        sessionAffinity.header, x-model, x-eoc-prompt-tokens, x-eoc-expected-tokens,
//        x-eoc-prefix-hashes as a comma list, x-eoc-wait-ms), the body dropped unread; answers 200
//        with no body and x-gateway-destination-endpoint: ip:port (and x-eoc-pod, x-eoc-reason).
//        With x-eoc-auth-mode: 1 (nginx's auth_request passes on only 2xx, 401 and 403) every
//        failure is 403 with x-eoc-status: <the real code>, and a wait defaults to 30 s.
//   GET|DELETE /v1/pools/{namespace}/{name}/sessions/{id}
//        this replica's binding of the session: 200
//        {"session","pod","endpoint","expires_in_seconds"} or 404; DELETE answers 204, or 404 when
//        there was none.
// Errors are JSON {"code":N,"message":"..."} (Response::SetError), the message naming the field or
// the problem: 400 bad input (and a request that needs more KV blocks than the largest worker
// holds), 404 unknown pool (503 while the replica is still loading its pools) or model, 429 queue
// full, or Options::max_waiting picks waiting in all pools together (Retry-After: 1), 503 no worker
// and no way to wait for one (Retry-After: 5) or the routing table not yet published (Retry-After:
// 1), 504 waited past the deadline.
//
// A pick that finds no room waits in its pool's queue without holding an I/O thread
// (Request::Defer), up to the pool's queueTimeoutSeconds or the request's shorter wait; a client
// that goes away takes its pick out of the queue, and a stopping server answers the waiting ones
// 503.
//
// How a pick goes through: each form has its parser (pick_body.h, pick_headers.h), which fills
// the pick's inputs; the pool's entry in the server's table (pick_pools.h) gives its routing
// state and its HTTP settings (the session header, the queue timeout) in one lookup; one call of
// PoolState::Pick decides, and queues the pick in the same call when no worker has room (only
// then is the request deferred); and one function answers every pick, in its form, and records
// it. The hot path takes no lock: the table and the pool's state are read lock-free, the metrics
// are per thread (PickMetrics), and the parse and answer reuse per-thread buffers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/clock.h"
#include "server/access.h"
#include "server/caller_caps.h"
#include "server/http.h"
#include "server/pick_metrics.h"
#include "server/pick_pools.h"
#include "server/server.h"

namespace eoc::server {

class PickEndpoint {
 public:
  // Options::max_waiting's default: half of --pick-max-connections's (4096).
  static constexpr std::size_t kDefaultMaxWaiting = 2048;

  struct Options {
    // How long an auth_request-mode pick waits at most when it does not say (x-eoc-wait-ms): under
    // gateways' usual 60 s upstream timeout.
    std::chrono::milliseconds auth_mode_wait = std::chrono::seconds(30);
    // Whether this replica has loaded its pools (the InferencePool informer has synced): until
    // then a pool it does not know answers 503 (Retry-After: 1), not 404. Null: always loaded.
    std::function<bool()> pools_loaded;
    // Picks waiting at once in all pools together (--pick-max-waiting), below the connection cap
    // so that waiting picks never hold every connection: past it a pick that finds no room is
    // answered 429 at once (as queue-full; eoc_picks_total's reason `waiting-full`).
    std::size_t max_waiting = kDefaultMaxWaiting;
    // Who may pick (access.h): every call is checked before its pool is looked up, so that a
    // caller refused in a namespace learns nothing of what is in it. Null: anyone may (the
    // controller's --pick-auth=none).
    AccessControl* access = nullptr;
    // What one caller, and each end user it names, may hold waiting in one pool (caller_caps.h):
    // past it a pick that finds no room is answered 429 at once (eoc_picks_total's reason
    // `caller-full`). Null: only the pool's maxQueue and max_waiting.
    CallerCaps* caps = nullptr;
  };

  // `pools`, `metrics` and `clock` must outlive the server the endpoint is registered on, and the
  // endpoint must too (waiting picks are answered through it).
  PickEndpoint(const PickPools& pools, PickMetrics& metrics, const Clock& clock, Options options);
  PickEndpoint(const PickPools& pools, PickMetrics& metrics, const Clock& clock)
      : PickEndpoint(pools, metrics, clock, Options{}) {}

  // Adds the routes above to `server` (before its Start()).
  void Register(HttpServer& server) const;

  // The handlers, for callers that route themselves.
  void PickJson(const Request& request, Response& response) const;
  void PickGateway(const Request& request, Response& response) const;
  void GetSession(const Request& request, Response& response) const;
  void DeleteSession(const Request& request, Response& response) const;

  // A pick's parts, defined beside the handlers (pick_endpoint.cc).
  struct Context;  // its request context: what its answer and its metrics need
  struct Inputs;   // its inputs, as its form's parser gave them
  struct Ending;   // how it ends: a worker, or a refusal

 private:
  bool PoolsLoaded() const;
  // Whether the caller may `verb` in `ns` (always, without Options::access); false once the
  // request is answered (refused: a pick through Finish with `context`, a sessions request
  // without one), or put off until its review ends. Allowed, the pick's context keeps who called.
  bool Allowed(const Request& request, Response& response, Context* context, std::string_view verb,
               std::string_view ns) const;
  // Picks for a found pool, and answers now or later.
  void Serve(const Request& request, Response& response, Context& context,
             const PickPools::Entry& pool, Inputs& inputs) const;
  // Answers the pick in its form and records it: every pick's answer goes through here.
  void Finish(Response& response, const Context& context, const Ending& ending) const;
  void Record(const Context& context, PickMetrics::Outcome outcome, int code) const;

  const PickPools& pools_;
  PickMetrics& metrics_;
  const Clock& clock_;
  const Options options_;
  // Picks deferred now, in every pool (Options::max_waiting).
  mutable std::atomic<std::size_t> waiting_{0};
};

}  // namespace eoc::server
