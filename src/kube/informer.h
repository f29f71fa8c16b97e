// An informer: a reflector feeding a local cache of compact typed views, with handlers called on
// every change, and a synced state once the first list is in. The cache holds what the operator
// reads of each object (a View made by `to_view`), never the whole JSON document.
//
//   Informer<PodView> pods(client, {.resource = resources::kPods}, ToPodView, clock);
//   pods.AddHandlers({.on_add = [](const PodView& p) { ... }});
//   pods.Start();
//   pods.WaitForSync(std::chrono::seconds(30));   // on the informer's clock
//   for (const auto& pod : pods.List()) { ... }
//   pods.Stop();
//
// Handlers run on the informer's thread, after the cache has changed, one at a time; they must
// not block for long. Objects `to_view` refuses (MappingError) are left out of the cache (one that
// was cached and turns invalid leaves it, as it would at the next relist), counted, and reported
// to the reflector's hooks once per object and resourceVersion.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "kube/reflector.h"

namespace eoc::kube {

template <class View>
class Informer final : public ReflectorSink {
 public:
  using ViewFn = std::function<View(const nlohmann::json&)>;
  struct Handlers {
    std::function<void(const View&)> on_add;
    std::function<void(const View& old_view, const View& new_view)> on_update;
    std::function<void(const View&)> on_delete;
  };

  Informer(Client& client, ReflectorOptions options, ViewFn to_view, const Clock& clock)
      : to_view_(std::move(to_view)),
        sync_wake_(clock),
        reflector_(client, std::move(options), *this, clock) {}
  ~Informer() override { Stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;
  Informer(Informer&&) = delete;
  Informer& operator=(Informer&&) = delete;

  // Before Start() only.
  void AddHandlers(Handlers handlers) { handlers_.push_back(std::move(handlers)); }

  void Start() {
    thread_ = std::thread([this] { reflector_.Run(); });
  }
  void Stop() {
    stopped_ = true;
    sync_wake_.Notify();
    reflector_.Stop();
    if (thread_.joinable()) thread_.join();
  }

  bool HasSynced() const { return synced_.load(); }
  // Waits until the first list is in the cache; false after `timeout` on the informer's clock, or
  // once Stop() is called.
  bool WaitForSync(std::chrono::milliseconds timeout) {
    sync_wake_.SleepFor(timeout, [this] { return synced_.load() || stopped_.load(); });
    return synced_.load();
  }

  std::shared_ptr<const View> Get(const std::string& key) const {
    const std::shared_lock lock(mu_);
    const auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second.view;
  }
  std::vector<std::shared_ptr<const View>> List() const {
    const std::shared_lock lock(mu_);
    std::vector<std::shared_ptr<const View>> out;
    out.reserve(items_.size());
    for (const auto& [key, entry] : items_) out.push_back(entry.view);
    return out;
  }
  std::size_t Size() const {
    const std::shared_lock lock(mu_);
    return items_.size();
  }
  // Every cached key with its object's resourceVersion: to compare the cache with the server.
  std::map<std::string, std::string> ResourceVersions() const {
    const std::shared_lock lock(mu_);
    std::map<std::string, std::string> out;
    for (const auto& [key, entry] : items_) out.emplace(key, entry.resource_version);
    return out;
  }
  std::string LastResourceVersion() const { return reflector_.LastResourceVersion(); }
  // Lists and watches have kept failing for the options' stale_after: the cache may be behind.
  bool Stale() const { return reflector_.Stale(); }
  // Objects left out because `to_view` refused them (each version counted once).
  std::size_t Invalid() const { return invalid_.load(); }

  // ReflectorSink: called by the reflector's thread.
  void Replace(std::vector<nlohmann::json>&& items, const std::string& /*rv*/) override {
    Map next;
    next.reserve(items.size());
    std::unordered_map<std::string, std::string> invalid;  // the list's objects left out
    for (auto& item : items) {
      std::string key = ObjectKey(item);
      if (auto entry = Make(key, item)) {
        next.emplace(std::move(key), std::move(*entry));
      } else {
        invalid.emplace(std::move(key), ResourceVersion(item));
      }
    }
    invalid_versions_ = std::move(invalid);
    {
      const std::unique_lock lock(mu_);
      items_.swap(next);
    }
    const Map& previous = next;  // after the swap
    // Only this thread writes items_, so it may read it without the lock.
    for (const auto& item : items_) {
      const View& now = *item.second.view;
      const auto old = previous.find(item.first);
      if (old == previous.end()) {
        Notify([&](const Handlers& h) { Call(h.on_add, now); });
      } else if (old->second.resource_version != item.second.resource_version) {
        const View& before = *old->second.view;
        Notify([&](const Handlers& h) { Call(h.on_update, before, now); });
      }
    }
    // What the new list lacks was deleted while we were not watching.
    for (const auto& item : previous) {
      if (items_.find(item.first) == items_.end()) {
        const View& gone = *item.second.view;
        Notify([&](const Handlers& h) { Call(h.on_delete, gone); });
      }
    }
    if (!synced_.exchange(true)) sync_wake_.Notify();
  }

  void Apply(WatchEventType type, nlohmann::json&& object) override {
    const std::string key = ObjectKey(object);
    if (type == WatchEventType::kDeleted) {
      invalid_versions_.erase(key);
      Remove(key);
      return;
    }
    auto entry = Make(key, object);
    if (!entry) {
      invalid_versions_[key] = ResourceVersion(object);
      Remove(key);
      return;
    }
    invalid_versions_.erase(key);
    Entry old;
    {
      const std::unique_lock lock(mu_);
      auto& slot = items_[key];
      old = std::move(slot);
      slot = *entry;
    }
    if (old.view == nullptr) {
      Notify([&](const Handlers& h) { Call(h.on_add, *entry->view); });
    } else {
      Notify([&](const Handlers& h) { Call(h.on_update, *old.view, *entry->view); });
    }
  }

 private:
  struct Entry {
    std::shared_ptr<const View> view;
    std::string resource_version;
  };
  using Map = std::unordered_map<std::string, Entry>;

  static std::string ResourceVersion(const nlohmann::json& object) {
    const auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return "";
    const auto rv = meta->find("resourceVersion");
    return rv != meta->end() && rv->is_string() ? rv->template get<std::string>() : "";
  }

  // The view of `object`, or nothing when it cannot be mapped: reported unless this very version
  // was reported already (a relist or a resent event brings the same version again).
  std::optional<Entry> Make(const std::string& key, const nlohmann::json& object) {
    try {
      if (!object.contains("metadata")) throw MappingError("metadata: missing");
      return Entry{std::make_shared<const View>(to_view_(object)), ResourceVersion(object)};
    } catch (const std::exception& e) {  // MappingError, or a document of the wrong shape
      std::string rv = ResourceVersion(object);
      const auto seen = invalid_versions_.find(key);
      if (seen == invalid_versions_.end() || seen->second != rv) {
        ++invalid_;
        reflector_.metrics().OnInvalidObject(key, rv, e.what());
      }
      return std::nullopt;
    }
  }

  // Drops `key` from the cache, telling the handlers, if it is there.
  void Remove(const std::string& key) {
    Entry gone;
    {
      const std::unique_lock lock(mu_);
      const auto it = items_.find(key);
      if (it == items_.end()) return;
      gone = std::move(it->second);
      items_.erase(it);
    }
    Notify([&](const Handlers& h) { Call(h.on_delete, *gone.view); });
  }

  template <class F>
  void Notify(F&& f) {
    for (const auto& h : handlers_) f(h);
  }
  template <class Fn, class... Args>
  static void Call(const Fn& fn, const Args&... args) {
    if (fn) fn(args...);
  }

  ViewFn to_view_;
  std::vector<Handlers> handlers_;
  mutable std::shared_mutex mu_;
  Map items_;  // guarded by mu_
  std::atomic<bool> synced_{false};
  std::atomic<std::size_t> invalid_{0};
  // The objects left out, with the version reported: the reflector's thread only. Bounded by the
  // collection: an entry leaves when its object is deleted, mapped, or missing from a relist.
  std::unordered_map<std::string, std::string> invalid_versions_;
  std::atomic<bool> stopped_{false};
  Wakeup sync_wake_;     // WaitForSync: synced, or stopped
  Reflector reflector_;  // last: stopped and destroyed first
  std::thread thread_;
};

}  // namespace eoc::kube
