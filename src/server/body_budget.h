// Internal to the server: the bytes of request bodies that all of a server's connections hold
// together, as Envoy's overload manager bounds a proxy's buffers. A connection takes from it as a
// body's bytes arrive (never from Content-Length up front) and gives back what it frees; a request
// whose body cannot be held within it is shed with 503 and Retry-After, so that a flood of uploads
// costs refusals, not the process.
//
//   BodyBudget budget(256 << 20);
//   if (!budget.TryTake(65536)) Shed();   // ...
//   budget.Give(65536);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace eoc::server::internal {

class BodyBudget {
 public:
  explicit BodyBudget(std::size_t limit) : limit_(limit) {}

  // Takes `bytes`, or nothing and false if that would pass the limit. Thread-safe.
  bool TryTake(std::size_t bytes) {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ - used) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void Give(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Whether a connection may keep the body memory it holds for its next request: only while at
  // most half the budget is used, so that idle connections cannot hold what new requests need.
  bool RoomToKeep() const { return used_.load(std::memory_order_relaxed) <= limit_ / 2; }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const { return limit_; }
  // Requests shed for want of budget, since the start.
  void CountShed() { shed_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t shed() const { return shed_.load(std::memory_order_relaxed); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::uint64_t> shed_{0};
};

}  // namespace eoc::server::internal
