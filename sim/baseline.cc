#include "sim/baseline.h"

#include <cstddef>

namespace eoc::sim {
namespace {

// A uniform index below `n` from 32 random bits (multiply and shift: no modulo bias to speak of).
std::size_t Below(std::uint32_t bits, std::size_t n) {
  return static_cast<std::size_t>((static_cast<std::uint64_t>(bits) * n) >> 32);
}

class Random final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t random) override {
    return Below(static_cast<std::uint32_t>(random >> 32), workers.size());
  }
};

class RoundRobin final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t /*random*/) override {
    return next_++ % workers.size();
  }

 private:
  std::size_t next_ = 0;
};

class LeastOutstanding final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t /*random*/) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < workers.size(); ++i) {
      if (workers[i].outstanding < workers[best].outstanding) best = i;
    }
    return best;
  }
};

class PowerOfTwo final : public BaselineRouter {
 public:
  std::size_t Choose(const TraceRequest& /*request*/, std::span<const RouterWorker> workers,
                     std::uint64_t random) override {
    const std::size_t n = workers.size();
    if (n == 1) return 0;
    const std::size_t first = Below(static_cast<std::uint32_t>(random >> 32), n);
    std::size_t second = Below(static_cast<std::uint32_t>(random), n - 1);
    if (second >= first) ++second;  // two distinct workers
    return workers[second].outstanding < workers[first].outstanding ? second : first;
  }
};

}  // namespace

std::unique_ptr<BaselineRouter> MakeBaseline(const BaselineSpec& spec) {
  switch (spec.kind) {
    case BaselineKind::kRandom:
      return std::make_unique<Random>();
    case BaselineKind::kRoundRobin:
      return std::make_unique<RoundRobin>();
    case BaselineKind::kLeastOutstanding:
      return std::make_unique<LeastOutstanding>();
    case BaselineKind::kPowerOfTwo:
      return std::make_unique<PowerOfTwo>();
  }
  return std::make_unique<RoundRobin>();
}

}  // namespace eoc::sim
