// A scripted Transport for unit tests of the layers above it: answers are queued, requests are
// recorded.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/transport.h"

namespace eoc::kube::testing {

class FakeLineStream final : public LineStream {
 public:
  explicit FakeLineStream(std::vector<std::string> lines) : lines_(lines.begin(), lines.end()) {}
  std::optional<std::string> NextLine() override {
    if (cancelled_ || lines_.empty()) return std::nullopt;
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    if (line == "<broken>") throw TransportError(kReasonTransport, "connection reset");
    return line;
  }
  void Cancel() override { cancelled_ = true; }

 private:
  std::deque<std::string> lines_;
  bool cancelled_ = false;
};

class FakeTransport final : public Transport {
 public:
  struct Answer {
    HttpResponse response;
    std::optional<TransportError> error;
    std::vector<std::string> stream_lines;  // for Stream() with a 2xx status
  };

  void Reply(int status, std::string body, std::string retry_after = "") {
    answers_.push_back({{status, std::move(body), std::move(retry_after)}, std::nullopt, {}});
  }
  void Fail(const std::string& reason, const std::string& message) {
    answers_.push_back({{}, TransportError(reason, message), {}});
  }
  void StreamLines(std::vector<std::string> lines) {
    answers_.push_back({{200, "", ""}, std::nullopt, std::move(lines)});
  }

  HttpResponse Send(const HttpRequest& request) override { return Next(request).response; }

  StreamResult Stream(const HttpRequest& request, std::chrono::milliseconds idle) override {
    idle_timeouts.push_back(idle);
    Answer a = Next(request);
    StreamResult result;
    if (a.response.status / 100 == 2) {
      result.stream = std::make_unique<FakeLineStream>(std::move(a.stream_lines));
    } else {
      result.response = std::move(a.response);
    }
    return result;
  }

  std::vector<HttpRequest> requests;
  std::vector<std::chrono::milliseconds> idle_timeouts;

 private:
  Answer Next(const HttpRequest& request) {
    requests.push_back(request);
    if (answers_.empty()) throw TransportError(kReasonTransport, "no scripted answer");
    Answer a = std::move(answers_.front());
    answers_.pop_front();
    if (a.error) throw TransportError(*a.error);
    return a;
  }

  std::deque<Answer> answers_;
};

}  // namespace eoc::kube::testing
