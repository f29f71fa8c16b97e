// The project's LRU map: a bounded map that remembers the order of use, keyed by 64-bit hashes
// in the routing engine (one shard of the session table and of the prefix index) and by strings
// in the event recorder's caches. Not thread-safe: each user guards its own. Compact by design:
// open addressing with linear probing over 32-bit node indices, and a doubly linked recency list
// threaded through the nodes by index, so an entry costs its key (8 bytes for a 64-bit one), its
// value, 8 bytes of links and 6 to 12 bytes of index slots. Storage grows with use up to
// `capacity` and is kept at its high-water mark.
//
//   eoc::LruMap<std::uint64_t, WorkerKey> map(/*capacity=*/1000);
//   if (WorkerKey* worker = map.Touch(key)) {  // a hit, now the most recently used
//     Use(*worker);
//   } else {
//     if (map.Full()) map.PopOldest();         // evict the least recently used
//     map.Insert(key, ChooseWorker());
//   }
//   eoc::LruMap<std::string, Bucket> buckets(4096);
//   Bucket& b = buckets.Put("pod/a", Bucket{});  // inserts or replaces, evicting when full
#pragma once

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/mix64.h"

namespace eoc {

// The default hash of LruMap: Mix64 for integer keys (std::hash of an integer is the integer
// itself, whose low bits alone would choose the slot), std::hash for the rest.
template <typename K>
struct LruHash : std::hash<K> {};
template <std::integral K>
struct LruHash<K> {
  std::size_t operator()(K key) const { return Mix64(static_cast<std::uint64_t>(key)); }
};

// `K` and `V` must be cheap to move (the node array is reallocated as it grows); `K` must be
// default-constructible and equality-comparable.
template <typename K, typename V, typename Hash = LruHash<K>>
class LruMap {
 public:
  // At most `capacity` entries (capped at 2^32 - 2, the reach of a 32-bit node index).
  explicit LruMap(std::size_t capacity) : capacity_(std::min<std::size_t>(capacity, kNil - 1)) {}

  std::size_t Size() const { return size_; }
  std::size_t Capacity() const { return capacity_; }
  // A new bound (capped as the constructor's): past it, the least recently used entries go.
  // Returns how many went. Node storage stays at its high-water mark.
  std::size_t SetCapacity(std::size_t capacity) {
    capacity_ = std::min<std::size_t>(capacity, kNil - 1);
    std::size_t evicted = 0;
    for (; size_ > capacity_; ++evicted) PopOldest();
    return evicted;
  }
  bool Empty() const { return size_ == 0; }
  bool Full() const { return size_ >= capacity_; }

  // The value stored for `key`, or null; recency unchanged.
  V* Find(const K& key) {
    const std::uint32_t node = NodeOf(key);
    return node == kNil ? nullptr : &nodes_[node].value;
  }
  const V* Find(const K& key) const {
    const std::uint32_t node = NodeOf(key);
    return node == kNil ? nullptr : &nodes_[node].value;
  }

  // As Find, and a hit becomes the most recently used entry.
  V* Touch(const K& key) {
    const std::uint32_t node = NodeOf(key);
    if (node == kNil) return nullptr;
    if (node != head_) {
      Unlink(node);
      PushFront(node);
    }
    return &nodes_[node].value;
  }

  // Adds `key`, which must be absent, as the most recently used entry. The map must not be Full():
  // PopOldest() first.
  V& Insert(const K& key, V value) {
    const std::uint32_t node = AllocateNode();
    nodes_[node].key = key;
    nodes_[node].value = std::move(value);
    slots_[SlotOf(key)] = node + 1;
    PushFront(node);
    ++size_;
    return nodes_[node].value;
  }

  // The entry for `key`, set to `value` and now the most recently used: the existing one, or a new
  // one (evicting the least recently used when Full()). The capacity must not be 0.
  V& Put(const K& key, V value) {
    if (V* existing = Touch(key)) return *existing = std::move(value);
    if (Full()) PopOldest();
    return Insert(key, std::move(value));
  }

  // Removes `key`; false if it was absent.
  bool Erase(const K& key) {
    if (slots_.empty()) return false;
    const std::size_t slot = SlotOf(key);
    if (slots_[slot] == 0) return false;
    EraseAt(slot);
    return true;
  }

  // The least recently used entry. The map must not be Empty().
  const K& OldestKey() const { return nodes_[tail_].key; }
  const V& Oldest() const { return nodes_[tail_].value; }
  void PopOldest() { EraseAt(SlotOf(nodes_[tail_].key)); }

  // Bytes held by this map, its own object included.
  std::size_t MemoryBytes() const {
    return sizeof(*this) + nodes_.capacity() * sizeof(Node) +
           slots_.capacity() * sizeof(std::uint32_t);
  }

  // Calls fn(key, value) for each entry, most recently used first.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (std::uint32_t node = head_; node != kNil; node = nodes_[node].next) {
      fn(nodes_[node].key, nodes_[node].value);
    }
  }

 private:
  static constexpr std::uint32_t kNil = std::numeric_limits<std::uint32_t>::max();

  struct Node {
    K key{};
    V value{};
    std::uint32_t prev = kNil;  // towards the most recently used
    std::uint32_t next = kNil;  // towards the least recently used; the free list when unused
  };

  std::size_t HomeOf(const K& key) const { return hash_(key) & mask_; }

  // The slot that holds `key`, or else the empty slot where the probe for it ends. Needs slots.
  std::size_t SlotOf(const K& key) const {
    std::size_t slot = HomeOf(key);
    while (slots_[slot] != 0 && nodes_[slots_[slot] - 1].key != key) slot = (slot + 1) & mask_;
    return slot;
  }

  std::uint32_t NodeOf(const K& key) const {
    if (slots_.empty()) return kNil;
    const std::uint32_t entry = slots_[SlotOf(key)];
    return entry == 0 ? kNil : entry - 1;
  }

  void Unlink(std::uint32_t node) {
    Node& n = nodes_[node];
    (n.prev == kNil ? head_ : nodes_[n.prev].next) = n.next;
    (n.next == kNil ? tail_ : nodes_[n.next].prev) = n.prev;
  }

  void PushFront(std::uint32_t node) {
    nodes_[node].prev = kNil;
    nodes_[node].next = head_;
    (head_ == kNil ? tail_ : nodes_[head_].prev) = node;
    head_ = node;
  }

  // A free node: a recycled one, or a new one, growing the node array (by doubling, and to exactly
  // `capacity_` at the end, so a full map wastes no node storage) and the slots with it.
  std::uint32_t AllocateNode() {
    if (free_ != kNil) {
      const std::uint32_t node = free_;
      free_ = nodes_[node].next;
      return node;
    }
    if (nodes_.size() == nodes_.capacity()) {
      nodes_.reserve(std::min(capacity_, std::max<std::size_t>(16, nodes_.size() * 2)));
    }
    // Load factor at most 2/3 once every node is in use.
    const std::size_t want = std::bit_ceil(nodes_.capacity() + nodes_.capacity() / 2);
    if (slots_.size() < want) Rehash(want);
    nodes_.emplace_back();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  void Rehash(std::size_t slot_count) {
    slots_.assign(slot_count, 0);
    slots_.shrink_to_fit();
    mask_ = slot_count - 1;
    for (std::uint32_t node = head_; node != kNil; node = nodes_[node].next) {
      slots_[SlotOf(nodes_[node].key)] = node + 1;
    }
  }

  // Removes the entry in `slot` (backward-shift deletion: no tombstones, so probes stay short).
  void EraseAt(std::size_t slot) {
    const std::uint32_t node = slots_[slot] - 1;
    std::size_t hole = slot;
    for (std::size_t next = (slot + 1) & mask_; slots_[next] != 0; next = (next + 1) & mask_) {
      // The entry at `next` may fill the hole if the hole lies on its probe path [home, next).
      const std::size_t home = HomeOf(nodes_[slots_[next] - 1].key);
      if (((next - home) & mask_) >= ((next - hole) & mask_)) {
        slots_[hole] = slots_[next];
        hole = next;
      }
    }
    slots_[hole] = 0;
    Unlink(node);
    if constexpr (!std::is_trivially_copyable_v<K>) {
      nodes_[node].key = K{};  // a string key's storage goes now, not when the node is reused
    }
    nodes_[node].value = V{};
    nodes_[node].next = free_;
    free_ = node;
    --size_;
  }

  [[no_unique_address]] Hash hash_;
  std::size_t capacity_;
  std::size_t size_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> slots_;  // 0: empty; else a node index + 1
  std::size_t mask_ = 0;
  std::uint32_t head_ = kNil;  // most recently used
  std::uint32_t tail_ = kNil;  // least recently used
  std::uint32_t free_ = kNil;  // erased nodes, linked through `next`
};

}  // namespace eoc
