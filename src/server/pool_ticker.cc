#include "server/pool_ticker.h"

#include <stdexcept>

namespace eoc::server {

PoolTicker::PoolTicker(routing::PoolDirectory& pools, const Clock& clock,
                       std::chrono::milliseconds period)
    : pools_(pools), period_(period), wake_(clock) {
  if (period.count() <= 0) throw std::invalid_argument("PoolTicker: the period must be positive");
}

PoolTicker::~PoolTicker() { Stop(); }

void PoolTicker::Start() {
  if (thread_.joinable()) throw std::logic_error("PoolTicker::Start called twice");
  stopping_.store(false);
  thread_ = std::thread([this] {
    while (!wake_.SleepFor(period_, [this] { return stopping_.load(); })) {
      pools_.Tick(wake_.clock().Now());
    }
  });
}

void PoolTicker::Stop() {
  stopping_.store(true);
  wake_.Notify();
  if (thread_.joinable()) thread_.join();
}

}  // namespace eoc::server
