// A MetricsFetcher for unit tests: each address answered as the test sets it, or held (never
// answered) until the test releases it, so that a hung endpoint is as slow as the test wants and
// no real time passes. Every fetch still held when it is destroyed is answered kCancelled.
//
//   eoc::testing::FakeFetcher fetcher;
//   fetcher.Set("10.0.0.1:9000", FakeFetcher::Page("..."));
//   ... a fetch of 10.0.0.2:9000 waits ...
//   fetcher.Release("10.0.0.2:9000", FakeFetcher::Error(FetchErrorKind::kDeadline));
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/scrape/metrics_fetcher.h"

namespace eoc::testing {

using controller::FetchError;
using controller::FetchErrorKind;
using controller::FetchRequest;
using controller::FetchResult;

// Answers each address as set; an address with no answer is held until Release().
class FakeFetcher final : public controller::MetricsFetcher {
 public:
  ~FakeFetcher() override {
    for (auto& [address, done] : held_) done(Error(FetchErrorKind::kCancelled));
  }
  FakeFetcher() = default;
  FakeFetcher(const FakeFetcher&) = delete;
  FakeFetcher& operator=(const FakeFetcher&) = delete;
  FakeFetcher(FakeFetcher&&) = delete;
  FakeFetcher& operator=(FakeFetcher&&) = delete;

  static FetchResult Page(const std::string& body) { return {.body = body}; }
  static FetchResult Error(FetchErrorKind kind) {
    return {.error = FetchError{.kind = kind, .message = "fake"}};
  }

  void Set(const std::string& address, FetchResult answer) {
    const std::lock_guard lock(mu_);
    answers_.insert_or_assign(address, std::move(answer));
  }
  void Hold(const std::string& address) {
    const std::lock_guard lock(mu_);
    answers_.erase(address);
  }
  // Answers the held fetches of `address` with `answer`; how many there were.
  int Release(const std::string& address, const FetchResult& answer) {
    std::vector<Callback> ready;
    {
      const std::lock_guard lock(mu_);
      for (auto it = held_.begin(); it != held_.end();) {
        if (it->first == address) {
          ready.push_back(std::move(it->second));
          it = held_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& done : ready) done(answer);
    return static_cast<int>(ready.size());
  }
  // Answers every held fetch with `answer`; how many there were.
  int ReleaseAll(const FetchResult& answer) {
    std::deque<std::pair<std::string, Callback>> ready;
    {
      const std::lock_guard lock(mu_);
      ready.swap(held_);
    }
    for (auto& [address, done] : ready) done(answer);
    return static_cast<int>(ready.size());
  }
  // Fetches held now, and the most ever held at once.
  std::size_t Held() const {
    const std::lock_guard lock(mu_);
    return held_.size();
  }
  std::size_t MostHeld() const {
    const std::lock_guard lock(mu_);
    return most_held_;
  }
  int Requests(const std::string& address) const {
    const std::lock_guard lock(mu_);
    const auto it = requests_.find(address);
    return it == requests_.end() ? 0 : it->second;
  }
  FetchRequest Last() const {
    const std::lock_guard lock(mu_);
    return last_;
  }
  // The last request to `address`.
  FetchRequest LastTo(const std::string& address) const {
    const std::lock_guard lock(mu_);
    const auto it = last_to_.find(address);
    return it == last_to_.end() ? FetchRequest{} : it->second;
  }

  void Fetch(FetchRequest request, Callback done) override {
    std::optional<FetchResult> answer;
    {
      const std::lock_guard lock(mu_);
      ++requests_[request.address];
      last_ = request;
      last_to_.insert_or_assign(request.address, request);
      const auto it = answers_.find(request.address);
      if (it == answers_.end()) {
        held_.emplace_back(request.address, std::move(done));
        most_held_ = std::max(most_held_, held_.size());
        return;
      }
      answer = it->second;
    }
    done(std::move(*answer));
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, FetchResult> answers_;
  std::map<std::string, int> requests_;
  std::map<std::string, FetchRequest> last_to_;
  std::deque<std::pair<std::string, Callback>> held_;
  std::size_t most_held_ = 0;
  FetchRequest last_;
};

}  // namespace eoc::testing
