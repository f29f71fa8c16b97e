// The pools the pick endpoint serves: a pool's key ("namespace/name") -> its routing state (the
// pool directory's PoolState) and its HTTP settings, the spec.routing fields that are the
// endpoint's own rather than the routing engine's (which request header carries the session id,
// how long a pick may wait in the queue). The controller writes it where it writes the pool
// directory (controller/routing_config.h: UpdatePoolDirectory, and when a pool goes); the pick
// handlers read it on every pick without a lock, one lookup giving both the state and the
// settings. Like the directory, the map is immutable and swapped whole on a change (published.h).
//
//   eoc::server::PickPools pools;
//   pools.Set("prod/chat", directory.Configure("prod/chat", options, now),
//             {.session_header = "x-conversation", .queue_timeout = std::chrono::seconds(30)});
//   // a pick handler, on any thread:
//   if (std::shared_ptr<const PickPools::Entry> pool = pools.Find("prod/chat")) {
//     pool->state->Pick(...);   // waiting at most pool->http.queue_timeout
//   }
//   pools.Remove("prod/chat");  // before the directory's Remove: picks stop finding it first
//
// Bounded by the directory: it holds the pools the directory holds (at most
// routing::PoolDirectory::kMaxPools), and Set refuses more.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/text.h"
#include "routing/pool_state.h"
#include "routing/published.h"

namespace eoc::server {

// A pool's settings of the pick endpoint (spec.routing, with the CRD's defaults).
struct PoolHttpSettings {
  // The request header that carries the session id in the gateway form
  // (sessionAffinity.header); lower case, as request headers are looked up.
  std::string session_header = "x-session-id";
  // How long a pick may wait in the pool's queue (admission.queueTimeoutSeconds; WaitDeadline).
  std::chrono::nanoseconds queue_timeout = std::chrono::seconds(120);

  bool operator==(const PoolHttpSettings&) const = default;
};

class PickPools {
 public:
  struct Entry {
    std::shared_ptr<routing::PoolState> state;  // never null
    PoolHttpSettings http;
  };

  PickPools();

  // The pool's entry; null for a pool that is not here. Thread-safe, no lock: the entry shares
  // ownership with this thread's pin of the map (published.h), so holding it writes no count
  // other threads write.
  std::shared_ptr<const Entry> Find(std::string_view key) const;

  // Adds the pool, or replaces its state or settings; unchanged, it costs a lookup under the
  // writers' lock (the map is copied only on a change). Throws std::invalid_argument for a null
  // `state`, std::length_error for a new pool past routing::PoolDirectory::kMaxPools.
  void Set(std::string_view key, std::shared_ptr<routing::PoolState> state,
           const PoolHttpSettings& http);
  // Takes the pool out; false if it was not here.
  bool Remove(std::string_view key);
  std::size_t Size() const;

 private:
  using Map = StringMap<Entry>;

  std::mutex write_mu_;  // serialises Set and Remove
  routing::Published<Map> entries_;
};

}  // namespace eoc::server
