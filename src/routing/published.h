// A value that one writer replaces now and then and many threads read on every pick: an
// immutable std::shared_ptr<const T> swapped in whole (copy-on-write), read through a per-thread
// cache so that a read takes no lock and writes no shared memory while the value is unchanged.
// The pool directory (its map of pools) and each PoolState (its view of a generation) are one.
//
//   Published<Map> pools;
//   pools.Store(std::make_shared<const Map>(next));        // writers: a whole new value
//   const std::shared_ptr<const Map>& now = pools.Load();  // readers: one atomic load
//   now->find(key) ...
//
// A read is one acquire load of a version counter and a scan of this thread's small cache; only
// when the value changed since this thread last read it does it take the writer's lock, once.
// The pointer Load() hands out shares ownership with a pin of this thread's own, so that copies
// made on the pick path (a PickOutcome's snapshot, a directory lookup's state) count on a
// reference count no other thread writes (measured: two threads picked slower than one when they
// all counted on the value's own). std::atomic<std::shared_ptr> would do the swap, but
// libstdc++ 12's is a spin lock that ThreadSanitizer reports as racy (google/sanitizers#1558).
// Each thread keeps the values of the last kCachedValues objects of one T it read: a thread that
// reads more of them in turn takes their locks on some reads, and an object's old value stays
// alive in an idle thread's cache until that thread reads others.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace eoc::routing {

namespace internal {
// Unique in the process, never 0: the key of an object in the per-thread caches.
std::uint64_t NextPublishedId();
}  // namespace internal

template <class T>
class Published {
 public:
  static constexpr std::size_t kCachedValues = 16;

  Published() : id_(internal::NextPublishedId()) {}
  ~Published() = default;
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  Published(Published&&) = delete;
  Published& operator=(Published&&) = delete;

  // Replaces the value; every thread's next Load() sees it.
  void Store(std::shared_ptr<const T> value) {
    const std::lock_guard lock(mu_);
    value_ = std::move(value);
    version_.fetch_add(1, std::memory_order_release);
  }

  // The current value (null before the first Store). The reference is valid until this thread's
  // next Load() of any Published<T>: copy it to keep the value longer.
  const std::shared_ptr<const T>& Load() const {
    struct Cached {
      std::uint64_t id = 0;
      std::uint64_t version = 0;
      std::shared_ptr<const T> pinned;  // shares the pin's count, not the value's
    };
    // This thread's own owner of a value: the pointers Load() gives out count on it alone.
    struct alignas(64) Pin {
      std::shared_ptr<const T> value;
    };
    // Most recently used first.
    thread_local std::array<Cached, kCachedValues> cache;
    const std::uint64_t version = version_.load(std::memory_order_acquire);
    std::size_t k = 0;
    while (k + 1 < cache.size() && cache[k].id != id_) ++k;
    const auto first = cache.begin();
    std::rotate(first, first + static_cast<std::ptrdiff_t>(k),
                first + static_cast<std::ptrdiff_t>(k) + 1);
    Cached& entry = cache.front();
    if (entry.id != id_ || entry.version != version) {
      std::shared_ptr<const T> value;
      {
        const std::lock_guard lock(mu_);
        entry.version = version_.load(std::memory_order_relaxed);
        value = value_;
      }
      entry.id = id_;
      entry.pinned = nullptr;
      if (value) {
        const T* raw = value.get();
        entry.pinned =
            std::shared_ptr<const T>(std::make_shared<const Pin>(Pin{std::move(value)}), raw);
      }
    }
    return entry.pinned;
  }

  // The current value through the writer's lock: for writers, and reads off the pick path.
  std::shared_ptr<const T> LoadLocked() const {
    const std::lock_guard lock(mu_);
    return value_;
  }

 private:
  const std::uint64_t id_;
  mutable std::mutex mu_;
  std::shared_ptr<const T> value_;  // guarded by mu_
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace eoc::routing
