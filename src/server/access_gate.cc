#include "server/access_gate.h"

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace eoc::server {
namespace {

using Verdict = AccessControl::Verdict;

// Meets the review's end and the request's deferral, whichever comes first: the review can end
// on its thread before the handler has put the request off.
class Meeting {
 public:
  void Known() {
    std::optional<Later> later;
    {
      const std::lock_guard lock(mu_);
      known_ = true;
      later = later_;
    }
    if (later) later->Retry();
  }
  void Deferred(const Later& later) {
    bool known = false;
    {
      const std::lock_guard lock(mu_);
      later_ = later;
      known = known_;
    }
    if (known) later.Retry();
  }

 private:
  std::mutex mu_;
  bool known_ = false;
  std::optional<Later> later_;
};

}  // namespace

AccessControl::Answer Admit(AccessControl& access, const Request& request,
                            const AccessRequest& what) {
  if (request.attempt() >= kMaxAccessAttempts) {
    auto answer = access.Check(request, what, nullptr);
    if (answer.verdict != Verdict::kPending) return answer;
    return AccessControl::Unanswered();
  }
  // Made only for a check that waits: one the cache answers allocates nothing.
  std::shared_ptr<Meeting> meeting;
  auto answer = access.Check(request, what, [&meeting]() -> AccessControl::Waiter {
    meeting = std::make_shared<Meeting>();
    return [meeting] { meeting->Known(); };
  });
  if (answer.verdict == Verdict::kPending) meeting->Deferred(request.Defer());
  return answer;
}

int StatusOf(Verdict verdict) {
  switch (verdict) {
    case Verdict::kUnauthenticated:
      return 401;
    case Verdict::kForbidden:
      return 403;
    case Verdict::kAllowed:
    case Verdict::kPending:
    case Verdict::kUnavailable:
      break;
  }
  return 503;
}

void AnswerRefusal(const AccessControl::Answer& answer, Response& response) {
  const int status = StatusOf(answer.verdict);
  response.SetError(status, answer.message);
  if (status == 401) response.AddHeader("WWW-Authenticate", kBearerChallenge);
  if (status == 503) response.AddHeader("Retry-After", "1");
}

Handler Guarded(AccessControl& access, AccessRequest what, Handler handler) {
  return [&access, what, handler = std::move(handler)](const Request& request, Response& response) {
    const auto answer = Admit(access, request, what);
    if (answer.verdict == Verdict::kAllowed) {
      handler(request, response);
    } else if (answer.verdict != Verdict::kPending) {
      AnswerRefusal(answer, response);
    }
  };
}

}  // namespace eoc::server
