// The scripted kube::Transport of the unit tests above the transport (client, discovery,
// reflector and informer, leader election, event recorder): answers are queued in order, canned
// (Reply, Fail, StreamLines) or computed from the request (Then); requests are recorded. When the
// script runs out a request fails with a TransportError, and `on_empty` is called the first time.
//
//   eoc::kube::testing::FakeClient fake(clock);             // a Client over a FakeTransport
//   fake.transport->Reply(200, R"({"kind":"Pod", ...})");
//   fake.transport->StreamLines({R"({"type":"ADDED", ...})", "<broken>"});
//   auto pod = fake.client->Get(resources::kPods, "ns", "a");
//   EXPECT_EQ(fake.transport->requests[0].method, "GET");
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "kube/client.h"
#include "kube/transport.h"

namespace eoc::kube::testing {

// A watch body of the given lines; the line "<broken>" throws as a reset connection would.
// `on_read`, if set, runs at each read before the line is taken: a test's view of the reader
// while the watch is open.
class FakeLineStream final : public LineStream {
 public:
  explicit FakeLineStream(std::vector<std::string> lines, std::function<void()> on_read = {})
      : lines_(lines.begin(), lines.end()), on_read_(std::move(on_read)) {}
  std::optional<std::string> NextLine() override {
    if (on_read_) on_read_();
    if (cancelled_ || lines_.empty()) return std::nullopt;
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    if (line == "<broken>") throw TransportError(kReasonTransport, "connection reset");
    return line;
  }
  void Cancel() override { cancelled_ = true; }

 private:
  std::deque<std::string> lines_;
  std::function<void()> on_read_;
  bool cancelled_ = false;
};

// A whole answer, for Then() steps.
inline StreamResult Answer(int status, std::string body, std::string retry_after = "") {
  StreamResult r;
  r.response = {status, std::move(body), std::move(retry_after)};
  return r;
}
// A 200 watch answer streaming `lines`, for Then() steps; `on_read` as FakeLineStream's.
inline StreamResult StreamOf(std::vector<std::string> lines, std::function<void()> on_read = {}) {
  StreamResult r;
  r.response.status = 200;
  r.stream = std::make_unique<FakeLineStream>(std::move(lines), std::move(on_read));
  return r;
}

class FakeTransport final : public Transport {
 public:
  // One answer, computed from the request; it may throw TransportError.
  using Step = std::function<StreamResult(const HttpRequest&)>;

  void Then(Step step) {
    const std::lock_guard lock(mu_);
    steps_.push_back(std::move(step));
  }
  void Reply(int status, std::string body, std::string retry_after = "") {
    Then([r = HttpResponse{status, std::move(body), std::move(retry_after)}](const HttpRequest&) {
      StreamResult result;
      result.response = r;
      return result;
    });
  }
  void Fail(const std::string& reason, const std::string& message) {
    Then([reason, message](const HttpRequest&) -> StreamResult {
      throw TransportError(reason, message);
    });
  }
  void StreamLines(std::vector<std::string> lines) {
    Then([lines = std::move(lines)](const HttpRequest&) { return StreamOf(lines); });
  }

  HttpResponse Send(const HttpRequest& request) override { return Next(request).response; }

  StreamResult Stream(const HttpRequest& request, std::chrono::milliseconds idle) override {
    {
      const std::lock_guard lock(mu_);
      idle_timeouts.push_back(idle);
    }
    StreamResult result = Next(request);
    // A 2xx answer without lines is an empty stream.
    if (result.response.status / 100 == 2 && !result.stream) {
      result.stream = std::make_unique<FakeLineStream>(std::vector<std::string>{});
    }
    return result;
  }

  // A closed gate holds each request, before it is answered, until Open(): for tests that need a
  // request in flight. Open at first.
  void Close() {
    const std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      const std::lock_guard lock(mu_);
      open_ = true;
    }
    gate_.notify_all();
  }
  // Waits until a request is held at the closed gate.
  void WaitForHeld() {
    std::unique_lock lock(mu_);
    gate_.wait(lock, [this] { return held_ > 0; });
  }

  // The paths of the requests so far, in order.
  std::vector<std::string> Paths() const {
    const std::lock_guard lock(mu_);
    std::vector<std::string> paths;
    paths.reserve(requests.size());
    for (const HttpRequest& r : requests) paths.push_back(r.path);
    return paths;
  }

  // Called once, when a request first finds the script empty (a test stops what it drives).
  std::function<void()> on_empty;
  // Every request and every stream's idle timeout, in order. Read them while nothing is calling
  // the transport (after a Flush or a Stop).
  std::vector<HttpRequest> requests;
  std::vector<std::chrono::milliseconds> idle_timeouts;

 private:
  StreamResult Next(const HttpRequest& request) {
    Step step;
    bool first_empty = false;
    {
      std::unique_lock lock(mu_);
      ++held_;
      gate_.notify_all();
      gate_.wait(lock, [this] { return open_; });
      --held_;
      requests.push_back(request);
      if (!steps_.empty()) {
        step = std::move(steps_.front());
        steps_.pop_front();
      } else {
        first_empty = !ended_;
        ended_ = true;
      }
    }
    if (!step) {
      if (first_empty && on_empty) on_empty();
      throw TransportError(kReasonTransport, "script ended");
    }
    return step(request);
  }

  mutable std::mutex mu_;
  std::condition_variable gate_;
  bool open_ = true;
  int held_ = 0;  // requests waiting at the gate
  std::deque<Step> steps_;
  bool ended_ = false;
};

// A Client over a FakeTransport, without a rate limit (qps 0 unless `options` sets one). Its waits
// (rate limit, Retry-After) are on `clock`: a test drives them with a ManualClock.
struct FakeClient {
  explicit FakeClient(const Clock& clock, const ClientOptions& options = Unlimited()) {
    auto owned = std::make_unique<FakeTransport>();
    transport = owned.get();
    client = std::make_unique<Client>(std::move(owned), options, clock);
  }
  static ClientOptions Unlimited() {
    ClientOptions options;
    options.qps = 0;
    return options;
  }

  FakeTransport* transport = nullptr;  // owned by `client`
  std::unique_ptr<Client> client;
};

}  // namespace eoc::kube::testing
