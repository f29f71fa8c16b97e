// The pools' housekeeping clock: a thread that calls PoolDirectory::Tick every `period`, so that
// waiting picks whose deadline passed are answered (504) within a period of it, and expired
// sessions are swept (each pool at most once a second). The pick endpoint needs it running.
//
//   eoc::server::PoolTicker ticker(directory, eoc::RealClock());
//   ticker.Start();
//   ...
//   ticker.Stop();   // or let the destructor do it
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "routing/pool_directory.h"

namespace eoc::server {

class PoolTicker {
 public:
  // How late past its deadline a waiting pick may be answered, at most.
  static constexpr std::chrono::milliseconds kDefaultPeriod{10};

  // `pools` and `clock` must outlive the ticker.
  PoolTicker(routing::PoolDirectory& pools, const Clock& clock,
             std::chrono::milliseconds period = kDefaultPeriod);
  ~PoolTicker();  // Stop()s
  PoolTicker(const PoolTicker&) = delete;
  PoolTicker& operator=(const PoolTicker&) = delete;
  PoolTicker(PoolTicker&&) = delete;
  PoolTicker& operator=(PoolTicker&&) = delete;

  // Starts the thread (again, after a Stop); throws std::logic_error while it runs.
  void Start();
  // Stops and joins it. Idempotent.
  void Stop();

 private:
  routing::PoolDirectory& pools_;
  const std::chrono::milliseconds period_;
  Wakeup wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace eoc::server
