// How handlers use AccessControl: one call that either answers at once from the cache or puts
// the request off until its reviews have ended and hands it to the handler again
// (Later::Retry), and a wrapper that guards a whole route (/metrics).
//
//   const auto answer = eoc::server::Admit(access, request, {.verb = "create", .ns = "team-a"});
//   if (answer.verdict == AccessControl::Verdict::kPending) return;  // handed back later
//   if (answer.verdict != AccessControl::Verdict::kAllowed) { ...refuse with answer.message... }
//
//   server.Handle("GET", "/metrics", eoc::server::Guarded(access, {.verb = "get",
//                                                        .path = "/metrics"},
//                                                        MetricsHandler(...)));
#pragma once

#include <string>
#include <string_view>

#include "server/access.h"
#include "server/http.h"

namespace eoc::server {

// Handings of one request after which a review still not ended answers kUnavailable: a token's
// review and then its permission's take two.
inline constexpr int kMaxAccessAttempts = 3;

// AccessControl::Check for a handler: on kPending the request has been put off (the handler must
// return without answering) and is handed back once the review ends. `access` must outlive the
// server.
AccessControl::Answer Admit(AccessControl& access, const Request& request,
                            const AccessRequest& what);

// The WWW-Authenticate value of a 401.
inline constexpr std::string_view kBearerChallenge = R"(Bearer realm="eoc-operator")";

// The HTTP status of a refusal: 401, 403 or 503.
int StatusOf(AccessControl::Verdict verdict);

// Fills `response` with a refusal's error: its status, its message, and WWW-Authenticate
// (401) or Retry-After (503).
void AnswerRefusal(const AccessControl::Answer& answer, Response& response);

// `handler`, for callers allowed `what` only (the strings `what` views must outlive it).
Handler Guarded(AccessControl& access, AccessRequest what, Handler handler);

}  // namespace eoc::server
