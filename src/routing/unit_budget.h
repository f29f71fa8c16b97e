// A count of units that several tables draw from, up to a limit: the session tables' global
// budget (SessionBudget, --max-sessions-total) and the prefix indexes' (PrefixBudget,
// --max-prefix-blocks-total). Thread-safe: one atomic counter.
//
//   eoc::routing::UnitBudget budget(/*limit=*/4'000'000);
//   if (budget.TryAcquire()) ...  // one unit taken; budget.Release(1) gives it back
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>

namespace eoc::routing {

class UnitBudget {
 public:
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  explicit UnitBudget(std::size_t limit = kUnlimited) : limit_(limit) {}
  UnitBudget(const UnitBudget&) = delete;
  UnitBudget& operator=(const UnitBudget&) = delete;
  UnitBudget(UnitBudget&&) = delete;
  UnitBudget& operator=(UnitBudget&&) = delete;
  ~UnitBudget() = default;

  // Takes one unit if one is left.
  bool TryAcquire() {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used >= limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed));
    return true;
  }
  void Release(std::size_t units) { used_.fetch_sub(units, std::memory_order_relaxed); }

  std::size_t Used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t Limit() const { return limit_; }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

}  // namespace eoc::routing
